// SPDX-License-Identifier: MIT
/*
 * An rtld-audit module (LD_AUDIT) that puts a signal inside the dynamic
 * loader: the first time, after the program has installed a SIGUSR1
 * handler, that dlsym() or dlvsym() binds efadv_query_device (the front
 * resolving the real one) or efap2p_core_abi (the front binding its Go
 * core), it raises SIGUSR1 there, with the loader's lock held by the
 * thread. test_host first-signal's handler then calls into the library.
 */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <string.h>

static int fired;

unsigned int la_version(unsigned int version)
{
	(void)version;
	return LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)map;
	(void)lmid;
	(void)cookie;
	return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

static int handled(int sig)
{
	struct sigaction sa;

	return !sigaction(sig, NULL, &sa) && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
		       unsigned int *flags, const char *name)
{
	(void)ndx;
	(void)refcook;
	(void)defcook;
	if (!fired && (*flags & LA_SYMB_DLSYM) &&
	    (!strcmp(name, "efadv_query_device") || !strcmp(name, "efap2p_core_abi")) &&
	    handled(SIGUSR1)) {
		fired = 1;
		raise(SIGUSR1);
	}
	return sym->st_value;
}
