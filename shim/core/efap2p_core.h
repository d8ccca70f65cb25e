/* SPDX-License-Identifier: MIT */
/*
 * The private interface between libefap2p's C front (shim/front) and its Go
 * core (shim/core, libefap2p-core.so). The front dlopen()s the core the first
 * time a call needs the oracle and resolves these functions by name; the
 * core answers with plain C types and strings it owns for the life of the
 * process. Every function returns 0 or a positive errno.
 *
 * Change EFAP2P_CORE_ABI whenever anything here changes: a front refuses a
 * core of another ABI.
 */
#ifndef EFAP2P_CORE_H
#define EFAP2P_CORE_H

#include <stdint.h>

#include <infiniband/efadv_p2p.h>

#define EFAP2P_CORE_ABI 4

/* Log levels, shared with EFAP2P_LOG. */
enum {
	EFAP2P_LOG_OFF = 0,
	EFAP2P_LOG_ERROR = 1,
	EFAP2P_LOG_INFO = 2,
	EFAP2P_LOG_DEBUG = 3,
};

struct efap2p_core_config {
	/* The topology files to consider, in order, NULL-terminated: the
	 * front has already set aside those it found unusable (and said so),
	 * so the core reads the first usable one of these and no other.
	 * NULL or empty: none. */
	const char *const *topology_files;
	int log_level;		/* EFAP2P_LOG_* */
	const char *kernel;	/* EFAP2P_KERNEL: the release whose rules decide, or NULL for uname -r */
	/* EFAP2P_KERNEL_CONFIG: the kernel's build configuration to read, or
	 * NULL to find it out from the running system */
	const char *kernel_config;
	const char *sysfs;	/* the sysfs root: $SYSFS_PATH, else /sys */
	/* The process runs in secure-execution mode (AT_SECURE: setuid,
	 * setgid, file capabilities). The core reads no environment of its
	 * own: the front reads it (secure_getenv, so none of it when secure)
	 * and hands it over here. */
	int secure;
};

/* The answer for one NIC: does it reach an accelerator with true P2P? */
struct efap2p_core_nic {
	int reaches;		/* 1: set EFADV_DEVICE_ATTR_CAPS_P2P_DMA */
	/* one line for the log (at info level only), owned by the core;
	 * may be "" when the log is below info */
	const char *summary;
};

/* What ibv_reg_dmabuf_mr does with a (NIC, exporter) pair. */
enum {
	EFAP2P_DMABUF_PASS = 0,		/* no peer to judge: call the real function */
	EFAP2P_DMABUF_REFUSE = 1,	/* every candidate device is refused */
	EFAP2P_DMABUF_ALLOW = 2,	/* at least one candidate is allowed */
};

struct efap2p_core_dmabuf {
	int decision;		/* EFAP2P_DMABUF_* */
	/* PASS: the errno efadv_p2p_query_dmabuf returns (ENOENT for a
	 * system-memory or unknown exporter, ENODEV, EIO). */
	int err;
	/* ALLOW: no candidate is refused, so a refusal by the kernel cannot
	 * be explained by which device owns the buffer: it is the pair's. */
	int all_allowed;
	/* REFUSE and ALLOW: the most favourable candidate; flags carry
	 * EFADV_P2P_FLAG_AMBIGUOUS_PEER when there are several. */
	struct efadv_p2p_attr best;
	/* PASS and REFUSE: one line for the log, owned by the core. */
	const char *summary;
};

/*
 * The functions the core exports, as the front calls them. They are types,
 * not prototypes: the front resolves them with dlsym, and cgo declares the
 * Go side itself (with char * where these say const char *).
 */
typedef int (*efap2p_core_abi_fn)(void);
typedef int (*efap2p_core_init_fn)(const struct efap2p_core_config *cfg);
typedef int (*efap2p_core_nic_fn)(const char *ibdev, struct efap2p_core_nic *out);
typedef int (*efap2p_core_dmabuf_fn)(const char *ibdev, const char *exp_name,
				     struct efap2p_core_dmabuf *out);
/* *out: 1 when some dma-buf exporter is refused for ibdev's NIC, so that
 * its registrations must be judged buffer by buffer. */
typedef int (*efap2p_core_refusable_fn)(const char *ibdev, int *out);
typedef int (*efap2p_core_peer_fn)(const char *ibdev, uint32_t domain, uint32_t bus,
				   uint32_t devfn, struct efadv_p2p_attr *out);

#endif /* EFAP2P_CORE_H */
