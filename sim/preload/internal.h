// SPDX-License-Identifier: MIT
/*
 * libefasim internals: the emulated machine (config.c), the table of file
 * descriptors the emulator owns (fdtable.c), the emulated uverbs kernel
 * (uverbs_write.c, uverbs_ioctl.c), the dma-buf exporters (dmabuf.c) and
 * helpers (util.c). interpose.c holds the libc entry points.
 *
 * Conventions: internal functions return 0 or a negative errno; only the
 * libc entry points set errno. Functions named *_locked expect the global
 * lock (efasim_lock) to be held.
 */
#ifndef EFASIM_INTERNAL_H
#define EFASIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/types.h>

#define EFASIM_API __attribute__((visibility("default")))

/* ---- the emulated machine (config.c) ---- */

#define EFASIM_PCI_LEN 20 /* "dddddddd:bb:dd.f" (a domain of up to 8 digits) + NUL */
#define EFASIM_NAME_LEN 64

enum efasim_outcome { EFASIM_P2P, EFASIM_BOUNCED, EFASIM_REFUSED };

/* A PCI function of the model and the driver bound to it ("" if none). */
struct efasim_fn {
	char pci[EFASIM_PCI_LEN];
	char driver[EFASIM_NAME_LEN];
};

/* What the emulated kernel does when NIC attaches to memory owned by owner. */
struct efasim_verdict {
	char nic[EFASIM_PCI_LEN];
	char owner[EFASIM_PCI_LEN];
	enum efasim_outcome outcome;
};

/* One EFA device: its uverbs index, names and the attributes it reports. */
struct efasim_dev {
	int index; /* N of uverbsN */
	char ibdev[EFASIM_NAME_LEN];
	char pci[EFASIM_PCI_LEN];
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint64_t fw_ver;    /* bytes major, minor, sub, build from the LSB */
	uint64_t node_guid; /* host order */
	uint64_t max_mr_size, page_size_cap;
	uint32_t max_qp, max_cq, max_cqe, max_mr, max_pd, max_ah;
	uint32_t max_sq_wr, max_rq_wr, max_rdma_size, max_llq_size;
	uint32_t device_caps; /* the efa driver's EFA_QUERY_DEVICE_CAPS_* bits */
	uint32_t port_mtu, max_msg_sz, num_comp_vectors;
	uint32_t max_sq_sge, max_rq_sge, max_wr_rdma_sge, inline_buf_size;
	uint32_t sub_cqs_per_cq, max_tx_batch, min_sq_wr;
	int peer_blocked, numa_node;
	uint8_t gid[16]; /* GID 0 of port 1, network order */
	/* mutable, under the global lock */
	uint32_t next_key, next_pdn;
};

struct efasim_config {
	char path[4096];
	struct efasim_dev *devs;
	size_t ndevs;
	struct efasim_fn *fns;
	size_t nfns;
	struct efasim_verdict *verdicts;
	size_t nverdicts;
	char fabric[4096]; /* the fabric directory ("" = next to the file) */
	struct timespec loaded; /* time stamps of the emulated device nodes */
};

/* The configuration, loaded once on first use; NULL when there is none. */
struct efasim_config *efasim_config(void);
struct efasim_dev *efasim_dev_by_index(struct efasim_config *c, int index);
const struct efasim_fn *efasim_fn_by_pci(const struct efasim_config *c, const char *pci);
const struct efasim_verdict *efasim_verdict_for(const struct efasim_config *c,
						const char *nic, const char *owner);
/* Parses "dddd:bb:dd.f" or "bb:dd.f" (any case) into the canonical form. */
int efasim_pci_normalize(const char *in, char out[EFASIM_PCI_LEN]);
/* Parses one configuration text; exposed for the loader and for tests. */
int efasim_config_parse(struct efasim_config *c, char *text, char *err, size_t errlen);

/* ---- the emulator's files (fdtable.c) ---- */

enum efasim_kind { EFASIM_UVERBS = 1, EFASIM_DMABUF, EFASIM_CHANNEL };

enum efasim_obj_type {
	EFASIM_OBJ_FREE, EFASIM_OBJ_PENDING, EFASIM_OBJ_PD, EFASIM_OBJ_MR,
	EFASIM_OBJ_CQ, EFASIM_OBJ_QP, EFASIM_OBJ_AH,
};

struct efasim_file;

/* One uverbs object (a handle of the file's idr). */
struct efasim_obj {
	uint8_t type;
	uint8_t on_dmabuf;            /* MR: registered from a dma-buf */
	uint32_t pd;                  /* MR, QP, AH: the PD handle */
	uint32_t usecnt;              /* PD: live MRs, QPs, AHs; CQ: QPs */
	uint32_t key;                 /* MR: lkey = rkey */
	uint64_t pinned;              /* MR on user memory: pages pinned */
	struct efasim_file *dmabuf;   /* MR on a dma-buf: holds a reference */
	/* MR: what the device translates (iova -> start or map) */
	uint32_t access;
	uint64_t iova, length, start;
	void *map;                    /* MR on a dma-buf: our mapping of it */
	size_t map_len, map_skew;
	void *dp;                     /* CQ, QP, AH: datapath.h */
};

/* A range of the uverbs file that libefa may mmap (a ring, a doorbell). */
struct efasim_region {
	uint64_t off, len;
};

struct efasim_uverbs {
	struct efasim_dev *dev;
	int writable;
	int has_ctx;
	struct efasim_obj *objs;
	uint32_t nobjs;
	/* device memory: regions of the memfd behind the descriptor */
	struct efasim_region *regions;
	uint32_t nregions;
	volatile uint64_t *cursor; /* page 0 of the memfd: next free offset */
	uint32_t ncq, nah;
	struct efasim_file *self;
};

/* A completion channel: events queued for its reader. */
struct efasim_channel {
	uint64_t *events; /* CQ user handles */
	uint32_t head, count, cap;
	int efd;          /* the reader's descriptor (an eventfd, semaphore) */
	struct efasim_dev *dev;
};

struct efasim_dmabuf {
	char owner[EFASIM_PCI_LEN]; /* "" for system memory */
	char exp_name[EFASIM_NAME_LEN];
	char name[33]; /* DMA_BUF_NAME_LEN */
	uint64_t size;
};

/*
 * An emulated open file. Every descriptor that refers to it (dup, fork)
 * holds a reference; the backing memfd's (st_dev, st_ino) tells whether a
 * descriptor number still refers to it or was closed behind our back.
 */
struct efasim_file {
	enum efasim_kind kind;
	int refs;
	dev_t st_dev;
	ino_t st_ino;
	union {
		struct efasim_uverbs uv;
		struct efasim_dmabuf db;
		struct efasim_channel ch;
	};
};

void efasim_lock(void);
void efasim_unlock(void);
/* waits on c with the global lock held (CLOCK_REALTIME deadline) */
int efasim_cond_timedwait(pthread_cond_t *c, const struct timespec *abstime);
/* True when fd may be tracked; false is certain (no lock needed). */
bool efasim_maybe_tracked(int fd);
/* True when any file is tracked (fast path for close/dup). */
bool efasim_tracking(void);
/* True when dma-bufs exist (fast path for /proc opens). */
bool efasim_has_dmabufs(void);
/* True when called from the process that owns the table (not a vfork child). */
bool efasim_table_owner(void);
struct efasim_file *efasim_file_new(enum efasim_kind kind, int fd);
struct efasim_file *efasim_fd_get_locked(int fd);
int efasim_fd_insert_locked(int fd, struct efasim_file *f);
void efasim_fd_remove_locked(int fd);
void efasim_fd_dup_locked(int oldfd, int newfd);
void efasim_fd_remove_range_locked(unsigned int first, unsigned int last);
void efasim_file_get(struct efasim_file *f);
void efasim_file_put_locked(struct efasim_file *f);

/* ---- the emulated kernel ---- */

/* One write() call, split as ib_uverbs_write splits it. */
struct efasim_wcall {
	struct efasim_uverbs *uv;
	struct efasim_dev *dev;
	int fd;             /* the descriptor written to */
	uint64_t in, out;   /* core request and response (user addresses) */
	size_t inlen, outlen;
	uint64_t uin, uout; /* driver udata */
	size_t uinlen, uoutlen;
};

/* uverbs_request/uverbs_response and the driver's udata helpers. */
int efasim_w_request(struct efasim_wcall *c, void *req, size_t len);
int efasim_w_response(struct efasim_wcall *c, const void *resp, size_t len);
int efasim_udata_out(struct efasim_wcall *c, const void *resp, size_t len);
int efasim_udata_in_cleared(struct efasim_wcall *c);

/* Returns count or a negative errno. Lock held. */
ssize_t efasim_uverbs_write_locked(struct efasim_file *f, int fd, const void *buf, size_t count);
/* Returns 0 or a negative errno. Lock held. */
int efasim_uverbs_ioctl_locked(struct efasim_file *f, unsigned long req, void *arg);
void efasim_uverbs_release(struct efasim_uverbs *uv);
/* The file's idr: handles are allocated lowest first, as xa_alloc does. */
int efasim_obj_alloc(struct efasim_uverbs *uv, uint8_t type, uint32_t *handle);
/* The object of a handle; NULL with *err ENOENT (no such handle) or EINVAL
 * (another type), as rdma_lookup_get_uobject answers. */
struct efasim_obj *efasim_obj_lookup(struct efasim_uverbs *uv, int64_t handle,
				     uint8_t type, int *err);
void efasim_obj_free(struct efasim_uverbs *uv, uint32_t handle);
/* Drops the reference another object (an MR, a QP, an AH) holds on handle. */
void efasim_obj_put(struct efasim_uverbs *uv, uint32_t handle);
/* ib_check_mr_access, then the efa driver's supported access flags. */
int efasim_mr_access(const struct efasim_dev *dev, uint32_t flags);
/* Opens /dev/infiniband/uverbsN: returns an fd or a negative errno. */
int efasim_uverbs_open(struct efasim_dev *dev, int flags);
void efasim_uverbs_stat(const struct efasim_dev *dev, struct stat *st);
extern atomic_ulong efasim_dmabuf_mr_calls;

/* dma-bufs (dmabuf.c) */
int efasim_dmabuf_ioctl_locked(struct efasim_file *f, unsigned long req, void *arg);
void efasim_dmabuf_fstat(const struct efasim_file *f, struct stat *st);
/* If path is /proc/{self,thread-self,<pid>}/fdinfo/<fd> of a fake dma-buf,
 * returns the descriptor number, else -1. */
int efasim_fdinfo_target(const char *path);
/* Opens a file holding the fdinfo text of dma-buf fd: fd, a negative errno,
 * or EFASIM_PASS when dmafd is not a fake dma-buf. */
#define EFASIM_PASS (-100000)
int efasim_fdinfo_open(int dmafd, int oflags);
void efasim_dmabuf_statfs(struct statfs *sf);

/* ---- helpers (util.c) ---- */

bool efasim_trace_on(void);
/* EFASIM_TRACE=2: the data path too, a line per packet */
int efasim_trace_level(void);
void efasim_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void efasim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *efasim_errname(int err); /* err > 0 */
/* Copies between the emulated kernel and user memory, as copy_{from,to}_user:
 * 0 or -EFAULT, never a crash on a bad address. */
int efasim_copy_in(void *dst, uint64_t src, size_t len);
int efasim_copy_out(uint64_t dst, const void *src, size_t len);
int efasim_clear_out(uint64_t dst, size_t len);
/* 1 when the user bytes are all zero, 0 when not, -EFAULT. */
int efasim_user_is_zero(uint64_t src, size_t len);
/* 0 when every page of [addr, addr+len) is mapped, else -EFAULT. */
int efasim_user_mapped(uint64_t addr, uint64_t len);
/* (st_dev, st_ino) of fd without going through libc wrappers. */
int efasim_fd_identity(int fd, dev_t *dev, ino_t *ino);
int efasim_sys_close(int fd);

#endif /* EFASIM_INTERNAL_H */
