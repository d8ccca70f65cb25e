// SPDX-License-Identifier: MIT
/*
 * What the libefap2p test programs share: devices by name, the emulator's
 * dma-buf API found at run time, and the real rdma-core functions reached
 * around whatever is interposed, so that one process can compare the
 * library's answer with libefa's or libibverbs' own.
 */
#ifndef EFAP2P_SHIMTEST_H
#define EFAP2P_SHIMTEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"

#define P2P_DMA_BIT (1u << 31)

/* The context of the RDMA device called name, or NULL. */
static inline struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	CHECK(ctx != NULL, "cannot open %s", name);
	return ctx;
}

/* libefasim's API (sim/preload/efasim.h), or NULL outside the emulator. */
struct efasim_api {
	int (*dmabuf_create)(const char *owner_pci, const char *exp_name, size_t size);
	unsigned long (*reg_calls)(void);
};

static inline struct efasim_api efasim_api(void)
{
	struct efasim_api a;

	a.dmabuf_create = (int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT,
									       "efasim_dmabuf_create");
	a.reg_calls = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "efasim_reg_dmabuf_mr_calls");
	if (!a.dmabuf_create || !a.reg_calls) {
		fprintf(stderr, "libefasim is not preloaded: run inside 'efap2p sim'\n");
		exit(2);
	}
	return a;
}

/* The functions of libefa and libibverbs themselves, whatever stands in
 * front of them (a handle's lookup starts at that library). */
typedef int (*query_device_fn)(struct ibv_context *, struct efadv_device_attr *, uint32_t);
typedef struct ibv_mr *(*reg_dmabuf_mr_fn)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);

static inline void *real_symbol(const char *lib, const char *name, const char *version)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlvsym(h, name, version) : NULL;

	if (!fn) {
		fprintf(stderr, "%s@%s not found in %s\n", name, version, lib);
		exit(2);
	}
	return fn;
}

static inline query_device_fn real_query_device(void)
{
	return (query_device_fn)real_symbol("libefa.so.1", "efadv_query_device", "EFA_1.1");
}

static inline reg_dmabuf_mr_fn real_reg_dmabuf_mr(void)
{
	return (reg_dmabuf_mr_fn)real_symbol("libibverbs.so.1", "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
}

/* A field of /proc/self/status ("VmRSS:", "Threads:"), -1 if absent. */
static inline long status_field(const char *name)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, name, strlen(name)))
			v = atol(line + strlen(name));
	if (f)
		fclose(f);
	return v;
}

/* Is the Go core (libefap2p-core.so) mapped into this process? */
static inline int core_mapped(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "libefap2p-core") != NULL;
	if (f)
		fclose(f);
	return found;
}

/* Is libefap2p in front of efadv_query_device in this process? */
static inline int shim_loaded(void)
{
	return dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer") != NULL;
}

#endif
