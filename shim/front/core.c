// SPDX-License-Identifier: MIT
/*
 * The Go core (libefap2p-core.so), loaded the first time a call needs the
 * oracle, so that a process that never asks starts no Go runtime.
 *
 * Where: $EFAP2P_CORE (read with secure_getenv), else next to this library
 * (the build tree), else in efap2p/ next to it (the installed layout,
 * $libdir/efap2p/), else EFAP2P_CORE_DIR, the directory it was configured
 * to be installed in.
 *
 * Fork: the Go runtime does not survive fork() (its threads are gone in the
 * child, so anything that needs the scheduler or the collector hangs).
 * A child forked after the core was loaded, or while it was loading, never
 * enters Go again: the calls answer ECHILD and the callers fall back on
 * what is cached in C memory, or pass through. A child forked before the
 * core was ever needed has no Go runtime and may load its own.
 *
 * Signals: the core is loaded, and every Go call made, with the
 * asynchronous signals blocked in the calling thread. Threads the runtime
 * starts inherit that mask, and no host handler ever runs on a Go stack;
 * a signal that arrives meanwhile is delivered when the call returns.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#ifndef EFAP2P_CORE_DIR
#define EFAP2P_CORE_DIR "/usr/local/lib/efap2p"
#endif
#define CORE_NAME "libefap2p-core.so"

enum { CORE_NONE, CORE_LOADING, CORE_READY, CORE_FAILED };

static struct {
	efap2p_core_init_fn init;
	efap2p_core_nic_fn nic;
	efap2p_core_dmabuf_fn dmabuf;
	efap2p_core_peer_fn peer;
	efap2p_core_refusable_fn refusable;
} api;

static _Atomic int core_state = CORE_NONE;
/* set in a child forked while core_state was not CORE_NONE */
static _Atomic int core_inherited;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The directory this library was loaded from ("" if unknown). */
static char self_dir[PATH_MAX];

/* Blocks every signal that may be asynchronous; the synchronous ones stay
 * open so that a fault is still a fault. */
static void signals_block(sigset_t *old)
{
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t set;
	size_t i;

	sigfillset(&set);
	for (i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++)
		sigdelset(&set, sync_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static void signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* A note named "Go" (padded to 4 bytes) of type 4 is the Go build ID,
 * which every Go program and Go shared library carries. */
static int has_go_note(const char *p, size_t len)
{
	size_t off = 0;

	while (off + sizeof(ElfW(Nhdr)) <= len) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
		size_t name = off + sizeof(*n), desc = name + ((n->n_namesz + 3) & ~3u);

		if (n->n_type == 4 && (n->n_namesz == 3 || n->n_namesz == 4) && desc <= len &&
		    !memcmp(p + name, "Go", 3))
			return 1;
		off = desc + ((n->n_descsz + 3) & ~3u);
	}
	return 0;
}

static int find_go(struct dl_phdr_info *info, size_t size, void *data)
{
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE &&
		    has_go_note((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz)) {
			*(const char **)data = info->dlpi_name;
			return 1;
		}
	}
	return 0;
}

/* Only one Go runtime may live in a process: is there one already? */
static const char *go_in_process(void)
{
	const char *who = NULL;

	if (!dl_iterate_phdr(find_go, &who))
		return NULL;
	return (who && *who) ? who : "the program";
}

/* dlopen()s path; when it exists but does not load, why says why. */
static void *try_core(const char *path, char *why, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

	if (!h && access(path, F_OK) == 0)
		snprintf(why, len, "%s", dlerror());
	return h;
}

/* dlopen()s the first core found; why says what went wrong otherwise. */
static void *find_core(char *why, size_t len)
{
	const char *env = efap2p_config()->core;
	char path[PATH_MAX + 32];
	void *h;

	snprintf(why, len, "%s is not next to the library, nor in %s", CORE_NAME, EFAP2P_CORE_DIR);
	if (env) {
		snprintf(why, len, "EFAP2P_CORE=%s does not exist", env);
		return try_core(env, why, len);
	}
	if (self_dir[0]) {
		snprintf(path, sizeof(path), "%s/%s", self_dir, CORE_NAME);
		if ((h = try_core(path, why, len)))
			return h;
		snprintf(path, sizeof(path), "%s/efap2p/%s", self_dir, CORE_NAME);
		if ((h = try_core(path, why, len)))
			return h;
	}
	return try_core(EFAP2P_CORE_DIR "/" CORE_NAME, why, len);
}

static int bind_core(void *h, char *why, size_t len)
{
	efap2p_core_abi_fn abi = (efap2p_core_abi_fn)dlsym(h, "efap2p_core_abi");

	api.init = (efap2p_core_init_fn)dlsym(h, "efap2p_core_init");
	api.nic = (efap2p_core_nic_fn)dlsym(h, "efap2p_core_nic");
	api.dmabuf = (efap2p_core_dmabuf_fn)dlsym(h, "efap2p_core_dmabuf");
	api.peer = (efap2p_core_peer_fn)dlsym(h, "efap2p_core_peer");
	api.refusable = (efap2p_core_refusable_fn)dlsym(h, "efap2p_core_refusable");
	if (!abi || !api.init || !api.nic || !api.dmabuf || !api.peer || !api.refusable) {
		snprintf(why, len, "not an efap2p core (a function is missing)");
		return -1;
	}
	if (abi() != EFAP2P_CORE_ABI) {
		snprintf(why, len, "core ABI %d, this library needs %d", abi(), EFAP2P_CORE_ABI);
		return -1;
	}
	return 0;
}

/* Loads and starts the core; called once, under load_lock, with the
 * asynchronous signals blocked. */
static int load_core(void)
{
	const struct efap2p_config *cfg = efap2p_config();
	struct efap2p_core_config cc = { .topology = cfg->topology, .log_level = cfg->log_level,
					 .kernel = cfg->kernel };
	const char *go = go_in_process();
	char why[PATH_MAX + 128];
	void *h;

	if (go) {
		efap2p_log(EFAP2P_LOG_ERROR,
			   "%s has a Go runtime and a process can hold only one: no P2P answers here (Go programs use the efadv package)",
			   go);
		return CORE_FAILED;
	}
	h = find_core(why, sizeof(why));
	if (!h || bind_core(h, why, sizeof(why))) {
		efap2p_log(EFAP2P_LOG_ERROR, "cannot load the oracle: %s; set EFAP2P_CORE", why);
		return CORE_FAILED;
	}
	/* a tree that cannot be read is the core's to report; its calls
	 * then answer EIO */
	api.init(&cc);
	efap2p_log(EFAP2P_LOG_DEBUG, "oracle loaded");
	return CORE_READY;
}

/* 0 when the core can be called, else ECHILD or ELIBACC. */
static int core_ready(void)
{
	int st;
	sigset_t old;

	if (atomic_load_explicit(&core_inherited, memory_order_relaxed))
		return ECHILD;
	st = atomic_load_explicit(&core_state, memory_order_acquire);
	if (st == CORE_NONE || st == CORE_LOADING) {
		signals_block(&old);
		pthread_mutex_lock(&load_lock);
		st = atomic_load_explicit(&core_state, memory_order_acquire);
		if (st == CORE_NONE) {
			atomic_store_explicit(&core_state, CORE_LOADING, memory_order_relaxed);
			st = load_core();
			atomic_store_explicit(&core_state, st, memory_order_release);
		}
		pthread_mutex_unlock(&load_lock);
		signals_restore(&old);
	}
	return st == CORE_READY ? 0 : ELIBACC;
}

int efap2p_core_nic(const char *ibdev, struct efap2p_core_nic *out)
{
	sigset_t old;
	int rc = core_ready();

	if (rc)
		return rc;
	signals_block(&old);
	rc = api.nic(ibdev, out);
	signals_restore(&old);
	return rc;
}

int efap2p_core_dmabuf(const char *ibdev, const char *exp_name, struct efap2p_core_dmabuf *out)
{
	sigset_t old;
	int rc = core_ready();

	if (rc)
		return rc;
	signals_block(&old);
	rc = api.dmabuf(ibdev, exp_name, out);
	signals_restore(&old);
	return rc;
}

int efap2p_core_peer(const char *ibdev, uint32_t domain, uint32_t bus, uint32_t devfn,
		     struct efadv_p2p_attr *out)
{
	sigset_t old;
	int rc = core_ready();

	if (rc)
		return rc;
	signals_block(&old);
	rc = api.peer(ibdev, domain, bus, devfn, out);
	signals_restore(&old);
	return rc;
}

int efap2p_core_refusable(const char *ibdev, int *out)
{
	sigset_t old;
	int rc = core_ready();

	if (rc)
		return rc;
	signals_block(&old);
	rc = api.refusable(ibdev, out);
	signals_restore(&old);
	return rc;
}

/* In the child of fork(): only this thread exists, so the lock is free. */
void efap2p_core_atfork_child(void)
{
	if (atomic_load_explicit(&core_state, memory_order_relaxed) != CORE_NONE)
		atomic_store_explicit(&core_inherited, 1, memory_order_relaxed);
	pthread_mutex_init(&load_lock, NULL);
}

static void atfork_child(void)
{
	efap2p_core_atfork_child();
	efap2p_cache_atfork_child();
}

/*
 * The constructor starts nothing: it registers the fork handlers and notes
 * where this library lives (an absolute path costs nothing; a relative one
 * is resolved now, before the program can change directory).
 */
__attribute__((constructor)) static void efap2p_front_init(void)
{
	Dl_info info;
	char *slash;

	pthread_atfork(efap2p_cache_atfork_prepare, efap2p_cache_atfork_parent, atfork_child);
	if (!dladdr((void *)efap2p_front_init, &info) || !info.dli_fname)
		return;
	if (info.dli_fname[0] == '/') {
		if (strlen(info.dli_fname) >= sizeof(self_dir))
			return;
		strcpy(self_dir, info.dli_fname);
	} else if (!realpath(info.dli_fname, self_dir)) {
		self_dir[0] = 0;
		return;
	}
	slash = strrchr(self_dir, '/');
	if (slash)
		*slash = 0;
}
