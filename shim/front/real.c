// SPDX-License-Identifier: MIT
/*
 * The real efadv_query_device and ibv_reg_dmabuf_mr: the next definitions
 * after this library in the program's lookup order, at the versions the
 * program was linked against. When the program has not loaded the library
 * that defines one (it looked ours up by name, or libibverbs loaded libefa
 * as a provider out of the global scope), that library is loaded, locally.
 * Resolved once; a failed resolution is retried on the next call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "front.h"

static void *resolve(const char *name, const char *version, const char *soname)
{
	void *fn = dlvsym(RTLD_NEXT, name, version);
	void *lib;

	if (fn)
		return fn;
	lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (lib)
		fn = dlvsym(lib, name, version);
	if (!fn)
		efap2p_log(EFAP2P_LOG_ERROR, "%s@%s not found in %s: %s", name, version, soname,
			   lib ? "no such symbol" : dlerror());
	/* lib stays open: fn points into it */
	return fn;
}

static _Atomic(efap2p_query_device_fn) real_query_device;
static _Atomic(efap2p_reg_dmabuf_mr_fn) real_reg_dmabuf_mr;

efap2p_query_device_fn efap2p_real_query_device(void)
{
	efap2p_query_device_fn fn = atomic_load_explicit(&real_query_device, memory_order_acquire);

	if (!fn) {
		fn = (efap2p_query_device_fn)resolve("efadv_query_device", "EFA_1.1", "libefa.so.1");
		atomic_store_explicit(&real_query_device, fn, memory_order_release);
	}
	return fn;
}

efap2p_reg_dmabuf_mr_fn efap2p_real_reg_dmabuf_mr(void)
{
	efap2p_reg_dmabuf_mr_fn fn = atomic_load_explicit(&real_reg_dmabuf_mr, memory_order_acquire);

	if (!fn) {
		fn = (efap2p_reg_dmabuf_mr_fn)resolve("ibv_reg_dmabuf_mr", "IBVERBS_1.12",
						      "libibverbs.so.1");
		atomic_store_explicit(&real_reg_dmabuf_mr, fn, memory_order_release);
	}
	return fn;
}
