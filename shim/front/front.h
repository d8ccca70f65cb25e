/* SPDX-License-Identifier: MIT */
/*
 * libefap2p's C front: what its files share. Nothing here is exported; the
 * version script (efap2p.map) names the only public symbols.
 */
#ifndef EFAP2P_FRONT_H
#define EFAP2P_FRONT_H

#include <stdint.h>
#include <sys/types.h>

#include <infiniband/efadv_p2p.h>
#include <infiniband/verbs.h>

#include "efap2p_core.h"

/* Linux's kernel-internal ENOTSUPP, which NVIDIA's exporter returns. */
#define EFAP2P_ENOTSUPP 524
/* efadv_device_attr.device_caps ends here: inlen must reach it. */
#define EFAP2P_CAPS_END (offsetof(struct efadv_device_attr, device_caps) + sizeof(uint32_t))

/* config.c: EFAP2P_MODE, EFAP2P_LOG, EFAP2P_TOPOLOGY, EFAP2P_CORE. */
enum {
	EFAP2P_MODE_ENFORCE = 0,
	EFAP2P_MODE_ADVISE = 1,
	EFAP2P_MODE_OFF = 2,
};

struct efap2p_config {
	int mode;
	int log_level;		/* EFAP2P_LOG_* of efap2p_core.h */
	const char *topology;	/* NULL when unset */
	const char *core;	/* EFAP2P_CORE, NULL when unset */
	const char *kernel;	/* EFAP2P_KERNEL, NULL when unset */
};

const struct efap2p_config *efap2p_config(void);
void efap2p_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* real.c: the functions the interposed ones stand in front of. */
typedef int (*efap2p_query_device_fn)(struct ibv_context *, struct efadv_device_attr *,
				      uint32_t);
typedef struct ibv_mr *(*efap2p_reg_dmabuf_mr_fn)(struct ibv_pd *, uint64_t, size_t, uint64_t,
						   int, int);
efap2p_query_device_fn efap2p_real_query_device(void);
efap2p_reg_dmabuf_mr_fn efap2p_real_reg_dmabuf_mr(void);

/* core.c: the Go core, loaded on first need. Each call returns 0 or an
 * errno: ECHILD in a child forked after the core was started (Go is never
 * entered there), ELIBACC when the core cannot be loaded, else the core's
 * answer. Asynchronous signals are blocked around every Go call. */
int efap2p_core_nic(const char *ibdev, struct efap2p_core_nic *out);
int efap2p_core_dmabuf(const char *ibdev, const char *exp_name, struct efap2p_core_dmabuf *out);
int efap2p_core_peer(const char *ibdev, uint32_t domain, uint32_t bus, uint32_t devfn,
		     struct efadv_p2p_attr *out);
int efap2p_core_refusable(const char *ibdev, int *out);
void efap2p_core_atfork_child(void);

/* cache.c: answers kept in C memory, readable without a lock and without
 * Go (so in a forked child too). Lookups take no lock; inserts take one
 * mutex, never held across a call into Go or the real functions. */
/* A cached yes/no answer. */
enum {
	EFAP2P_UNKNOWN = 0,
	EFAP2P_NO = 1,
	EFAP2P_YES = 2,
};

/* A (NIC, exporter) pair's registration decision. */
struct efap2p_pair {
	int dev, exp;			/* efap2p_dev_index, efap2p_exp_index */
	struct efap2p_core_dmabuf core;	/* what the oracle said */
	_Atomic int logged;		/* the refusal line was written */
	/* The kernel refused a registration: errno << 32 | access flags,
	 * 0 for none. A later call asking for at least these flags gets the
	 * same answer without the kernel. */
	_Atomic uint64_t kernel_refusal;
};

int efap2p_dev_index(const char *ibdev);
_Atomic int *efap2p_dev_caps(int dev);
_Atomic int *efap2p_dev_refusable(int dev);
const char *efap2p_dev_name(int dev);
int efap2p_exp_index(const char *exp_name);
const char *efap2p_exp_name(int exp);
struct efap2p_pair *efap2p_pair_find(int dev, int exp);
struct efap2p_pair *efap2p_pair_add(const struct efap2p_pair *p);
const struct efadv_p2p_attr *efap2p_peer_find(int dev, uint64_t peer);
void efap2p_peer_add(int dev, uint64_t peer, const struct efadv_p2p_attr *attr);
int efap2p_fd_find(dev_t st_dev, ino_t st_ino);
void efap2p_fd_add(dev_t st_dev, ino_t st_ino, int exp);
void efap2p_cache_atfork_prepare(void);
void efap2p_cache_atfork_parent(void);
void efap2p_cache_atfork_child(void);

/* dmabuf.c: a descriptor's dma-buf exporter, through libc. */
struct efap2p_dmabuf_id {
	int exp;		/* exporter index (efap2p_exp_index) */
	uint64_t size;		/* the buffer's size, 0 if unknown */
};

int efap2p_dmabuf_identify(int fd, struct efap2p_dmabuf_id *id);
struct efap2p_pair *efap2p_pair_get(int dev, int exp, struct efap2p_pair *tmp, int *err);

#endif /* EFAP2P_FRONT_H */
