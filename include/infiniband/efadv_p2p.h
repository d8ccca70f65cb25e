/* SPDX-License-Identifier: MIT */
/*
 * efap2p: can this EFA NIC DMA into that accelerator's memory?
 *
 * An extension of libefa's efadv_query_device(): the P2P_DMA device
 * capability, and a pairwise query, answered from the PCI topology (the
 * kernel's p2pdma rule and the exporting driver's policy), a topology
 * file, or the ACPI P2P table -- without any GPU runtime.
 *
 * Link with `pkg-config --libs efap2p`, or LD_PRELOAD libefap2p.so.1 into
 * an unmodified program. See efadv_p2p_query_peer(3).
 */
#ifndef __EFADV_P2P_H__
#define __EFADV_P2P_H__

#include <stddef.h>
#include <stdint.h>

#include <infiniband/efadv.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * efadv_device_attr.device_caps: the NIC gets true peer-to-peer DMA into at
 * least one accelerator (PCI class 0x03 or 0x12, not a framebuffer-only VGA)
 * of this host: not refused, not bounced through system memory. The top bit, so that it never collides
 * with a capability rdma-core assigns from the bottom.
 */
#define EFADV_DEVICE_ATTR_CAPS_P2P_DMA (1u << 31)

/* How the kernel maps the NIC's DMA into the peer's memory. */
enum efadv_p2p_map_type {
	EFADV_P2P_MAP_UNKNOWN = 0,
	EFADV_P2P_MAP_NOT_SUPPORTED = 1,	/* the kernel refuses the mapping */
	EFADV_P2P_MAP_BUS_ADDR = 2,		/* through PCIe switches only */
	EFADV_P2P_MAP_THRU_HOST_BRIDGE = 3,	/* through the root complex */
};

/* The path between the two, as NCCL and nvidia-smi name it. */
enum efadv_p2p_path {
	EFADV_P2P_PATH_UNKNOWN = 0,
	EFADV_P2P_PATH_LOC = 1,		/* the same function */
	EFADV_P2P_PATH_PIX = 2,		/* at most one PCIe switch */
	EFADV_P2P_PATH_PXB = 3,		/* several bridges, no host bridge */
	EFADV_P2P_PATH_PHB = 4,		/* through one host bridge */
	EFADV_P2P_PATH_NODE = 5,	/* between host bridges of a NUMA node */
	EFADV_P2P_PATH_SYS = 6,		/* across NUMA nodes */
};

/* What the NIC's DMA really gets once the exporting driver has decided. */
enum efadv_p2p_outcome {
	EFADV_P2P_OUTCOME_UNKNOWN = 0,
	EFADV_P2P_OUTCOME_P2P = 1,	/* direct peer-to-peer DMA */
	EFADV_P2P_OUTCOME_BOUNCED = 2,	/* allowed, through system memory */
	EFADV_P2P_OUTCOME_REFUSED = 3,
};

/* Whose rule decided the outcome: the driver exporting the peer's memory. */
enum efadv_p2p_policy {
	EFADV_P2P_POLICY_KERNEL = 0,	/* the kernel's check (habanalabs, ...) */
	EFADV_P2P_POLICY_AMDGPU = 1,
	EFADV_P2P_POLICY_NVIDIA = 2,
	EFADV_P2P_POLICY_NEURON = 3,	/* AWS Neuron: any importer may attach */
	EFADV_P2P_POLICY_XE = 4,	/* Intel xe: bounces what it cannot share */
	EFADV_P2P_POLICY_VFIO = 5,	/* vfio-pci BARs: no pinned importers */
	EFADV_P2P_POLICY_I915 = 6,	/* i915: always through system memory */
};

/* Where the verdict came from. */
enum efadv_p2p_source {
	EFADV_P2P_SOURCE_COMPUTED = 0,		/* from sysfs, by the kernel's rule */
	EFADV_P2P_SOURCE_ACPI = 1,		/* the ACPI HMAT (rules p2p-hmat) */
	EFADV_P2P_SOURCE_TOPOLOGY_FILE = 2,	/* EFAP2P_TOPOLOGY */
};

/* efadv_p2p_attr.peer_mem_provider: the out-of-tree EFA driver's p2p
 * attribute, the provider that registers accelerator memory by address. */
enum efadv_p2p_peer_mem {
	EFADV_P2P_PEER_MEM_UNKNOWN = 0,		/* no p2p attribute (in-tree driver) */
	EFADV_P2P_PEER_MEM_NONE = 1,		/* the driver has no provider */
	EFADV_P2P_PEER_MEM_NVIDIA = 2,		/* "NVIDIA": nvidia_p2p_* */
	EFADV_P2P_PEER_MEM_NVIDIA_PEERMEM = 3,	/* "NVIDIA peermem": efa_nv_peermem */
	EFADV_P2P_PEER_MEM_NEURON = 4,		/* "NEURON" */
	EFADV_P2P_PEER_MEM_OTHER = 5,		/* a provider efap2p does not know */
};

/* efadv_p2p_attr.flags */
enum {
	/* The outcome rests on something that could not be read (ACS without
	 * root) and would differ under another value of it. */
	EFADV_P2P_FLAG_UNCERTAIN = 1 << 0,
	/* A dma-buf query: the exporter has several candidate devices; the
	 * attr describes the most favourable one. */
	EFADV_P2P_FLAG_AMBIGUOUS_PEER = 1 << 1,
	/* Something the kernel's rule needs could not be read: map_type is
	 * the kernel-safe branch (without UNCERTAIN the outcome is the same
	 * under every value it could have). */
	EFADV_P2P_FLAG_ASSUMED = 1 << 2,
};

struct efadv_p2p_attr {
	uint64_t comp_mask;		/* out: 0, reserved for extensions */
	uint32_t map_type;		/* enum efadv_p2p_map_type */
	int32_t distance;		/* the kernel's hop count of the path */
	uint32_t path;			/* enum efadv_p2p_path */
	uint32_t outcome;		/* enum efadv_p2p_outcome */
	uint32_t policy;		/* enum efadv_p2p_policy */
	uint32_t source;		/* enum efadv_p2p_source */
	uint32_t bandwidth_mbs;		/* narrowest link, MB/s; 0 if unknown */
	uint32_t latency_ns;		/* estimate */
	uint32_t flags;			/* EFADV_P2P_FLAG_* */
	uint32_t peer_domain;		/* the peer's PCI address */
	uint8_t peer_bus;
	uint8_t peer_devfn;		/* device << 3 | function */
	uint8_t reserved[6];
	/* Why, in a sentence or more: NUL-terminated, owned by the library,
	 * valid until the process exits. */
	const char *reason;
	/* Filled when inlen reaches them: a caller that passes the 64 bytes
	 * up to reason gets the fields above only. map_type..outcome above
	 * are the dma-buf path (ibv_reg_dmabuf_mr: p2pdma and the exporter's
	 * rule); the peer-memory path registers the accelerator's memory by
	 * address (ibv_reg_mr) through the EFA driver's provider. */
	uint32_t peer_mem_outcome;	/* enum efadv_p2p_outcome; UNKNOWN without a provider attribute */
	uint32_t peer_mem_provider;	/* enum efadv_p2p_peer_mem */
	/* The kernel release whose p2pdma rules decided ("6.8.0-1015-aws",
	 * "latest", "p2p-hmat"; EFAP2P_KERNEL, else uname -r); owned by the
	 * library like reason. */
	const char *kernel_release;
};

/*
 * The verdict for the NIC of ibvctx DMAing into memory owned by the PCI
 * function peer_pci ("0000:53:00.0"). Fills the fields of attr that lie
 * wholly within inlen bytes (inlen must reach at least `distance`).
 * Returns 0, or an errno (errno itself is left as it was): EINVAL (NULL
 * argument, short inlen, malformed address), ENODEV (the context's device
 * has no PCI function), ENOENT (no such peer), EIO (the topology could not
 * be read), ELIBACC (the library's oracle, libefap2p-core.so, cannot be
 * loaded), ECHILD (a child forked from a process that had started the
 * oracle, asking what the parent had not: the oracle is not entered after
 * fork; answers the parent had are given), EAGAIN (called from a signal
 * handler that interrupted the library's own work in this thread: ask
 * again outside it).
 */
int efadv_p2p_query_peer(struct ibv_context *ibvctx, const char *peer_pci,
			 struct efadv_p2p_attr *attr, uint32_t inlen);

/*
 * The same for the device that exports the dma-buf dmabuf_fd (found from
 * its exporter name and the PCI functions bound to that driver; with
 * several, the most favourable, and EFADV_P2P_FLAG_AMBIGUOUS_PEER). Also
 * returns EBADF (fd not open), EINVAL (not a dma-buf), ENOENT (a
 * system-memory exporter, or an exporter that owns no PCI function), EIO
 * (the exporter cannot be read from /proc/self/fdinfo).
 */
int efadv_p2p_query_dmabuf(struct ibv_context *ibvctx, int dmabuf_fd,
			   struct efadv_p2p_attr *attr, uint32_t inlen);

#ifdef __cplusplus
}
#endif

#endif /* __EFADV_P2P_H__ */
