// SPDX-License-Identifier: MIT
/*
 * The real efadv_query_device and ibv_reg_dmabuf_mr: the next definitions
 * after this library in the program's lookup order, at the versions the
 * program was linked against.
 *
 * Resolved once, early: by the constructor, while the loader runs it (its
 * lock is this thread's then), so that no call of the program ever enters
 * the loader for them -- a call from a signal handler that interrupted the
 * loader, or from a library's constructor while another thread waits on
 * the loader, included. Only when the constructor found nothing (the
 * program loaded libibverbs or libefa later, locally: a provider, a Python
 * extension) is one looked up at its first call, in a loader section
 * (guard.c: the asynchronous signals blocked, fork waiting), loading the
 * library locally when the program has not; never from a signal handler
 * that interrupted the library. A failed late resolution is retried on
 * the next call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "front.h"

struct real {
	const char *name, *version, *soname;
	_Atomic(void *) fn;
};

static struct real query_device = { "efadv_query_device", "EFA_1.1", "libefa.so.1", NULL };
static struct real reg_dmabuf_mr = { "ibv_reg_dmabuf_mr", "IBVERBS_1.12", "libibverbs.so.1", NULL };

__attribute__((constructor)) static void real_init(void)
{
	atomic_store(&query_device.fn, dlvsym(RTLD_NEXT, query_device.name, query_device.version));
	atomic_store(&reg_dmabuf_mr.fn, dlvsym(RTLD_NEXT, reg_dmabuf_mr.name, reg_dmabuf_mr.version));
}

static void *resolve_late(struct real *r)
{
	const char *missing = NULL;
	sigset_t old;
	void *fn, *lib = NULL;

	/* a handler that interrupted one of the library's slow paths: the
	 * loader is not for it (the call answers as without the function) */
	if (efap2p_reentered())
		return NULL;
	efap2p_config();	/* the log's level, before the section */
	efap2p_loader_enter(&old);
	fn = dlvsym(RTLD_NEXT, r->name, r->version);
	if (!fn) {
		lib = dlopen(r->soname, RTLD_NOW | RTLD_LOCAL);
		if (lib)
			fn = dlvsym(lib, r->name, r->version);
		if (!fn)
			missing = lib ? "no such symbol" : dlerror();
	}
	efap2p_loader_leave(&old);
	/* lib stays open: fn points into it */
	if (missing)
		efap2p_log(EFAP2P_LOG_ERROR, "%s@%s not found in %s: %s", r->name, r->version,
			   r->soname, missing);
	if (fn)
		atomic_store_explicit(&r->fn, fn, memory_order_release);
	return fn;
}

static inline void *real(struct real *r)
{
	void *fn = atomic_load_explicit(&r->fn, memory_order_acquire);

	return fn ? fn : resolve_late(r);
}

efap2p_query_device_fn efap2p_real_query_device(void)
{
	return (efap2p_query_device_fn)real(&query_device);
}

efap2p_reg_dmabuf_mr_fn efap2p_real_reg_dmabuf_mr(void)
{
	return (efap2p_reg_dmabuf_mr_fn)real(&reg_dmabuf_mr);
}
