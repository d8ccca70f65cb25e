// SPDX-License-Identifier: MIT
/*
 * libefasim's objects layer: what the emulated kernel's commands make.
 *
 *   objects.c    a uverbs file's handles (the kernel's idr, lowest free
 *                first) with a type per handle whose operations release it,
 *                the file's release (every object, in the kernel's order),
 *                and the device memory libefa maps from the file
 *   obj_verbs.c  the types: PD, MR, CQ, QP, AH, each made here with what
 *                the device needs (engine.h) and released by its type
 *   dmabuf.c     fake dma-bufs: their file kind and what libc sees of them
 *   events.c     event files: completion channels and the async descriptor
 *
 * A new type is a struct efasim_obj_type (its release and its place in the
 * file's release order) and the function that makes one; objects.c does
 * not change.
 */
#ifndef EFASIM_OBJECTS_H
#define EFASIM_OBJECTS_H

#include "engine.h"

struct efasim_uverbs;
struct efasim_obj;

/* What the handles of one kind of object have in common. */
struct efasim_obj_type {
	const char *name;
	/* When a file is closed, objects are released rank by rank, lowest
	 * first: what uses another object goes before it (QPs before CQs). */
	unsigned int release_rank;
	/* Frees what the object holds (NULL: nothing); the handle is then
	 * free. Lock held. */
	void (*release)(struct efasim_uverbs *uv, struct efasim_obj *o);
};

/* One uverbs object (a handle of the file's idr). */
struct efasim_obj {
	const struct efasim_obj_type *type; /* NULL: a free handle */
	uint32_t pd;     /* MR, QP, AH: the PD handle */
	uint32_t usecnt; /* PD: live MRs, QPs, AHs; CQ: QPs */
	void *priv;      /* the type's: struct efasim_mr, dp_cq, dp_qp, dp_ah */
};

/* A range of the uverbs file that libefa may mmap (a ring, a doorbell). */
struct efasim_region {
	uint64_t off, len;
};

/* An open /dev/infiniband/uverbsN. */
struct efasim_uverbs {
	struct efasim_file file;
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
	struct dp_ctx dp; /* what the device knows of this context */
	struct efasim_file *async; /* the async event file (a reference) */
};

static inline struct efasim_uverbs *efasim_uverbs_of(struct efasim_file *f)
{
	return (struct efasim_uverbs *)((char *)f - offsetof(struct efasim_uverbs, file));
}

/* ---- handles and files (objects.c) ---- */

/* A handle reserved by REG_DMABUF_MR until the MR is made. */
extern const struct efasim_obj_type efasim_pending_type;

/* The file's idr: a new handle of type (priv NULL), lowest free first, as
 * xa_alloc does. */
int efasim_obj_alloc(struct efasim_uverbs *uv, const struct efasim_obj_type *type,
		     uint32_t *handle);
/* The object of a handle; NULL with *err ENOENT (no such handle) or EINVAL
 * (another type), as rdma_lookup_get_uobject answers. */
struct efasim_obj *efasim_obj_lookup(struct efasim_uverbs *uv, int64_t handle,
				     const struct efasim_obj_type *type, int *err);
/* Releases the object by its type and frees the handle. */
void efasim_obj_destroy(struct efasim_uverbs *uv, uint32_t handle);
/* Drops the reference another object (an MR, a QP, an AH) holds on handle. */
void efasim_obj_put(struct efasim_uverbs *uv, uint32_t handle);
/* What the kernel does when the file is closed: every object released, in
 * rank order, then the device memory. The structure itself stays. */
void efasim_uverbs_release(struct efasim_uverbs *uv);

/* A zeroed range of the memfd fd (uv's descriptor) for a ring or a
 * doorbell, mapped for the engine in *map; its mmap key is *off. */
int efasim_region_alloc(struct efasim_uverbs *uv, int fd, uint64_t len, uint64_t *off,
			void **map);
/* Gives a region back; punch: its pages too (never in a fork child, whose
 * parent still uses them). */
void efasim_region_free(struct efasim_uverbs *uv, uint64_t off, uint64_t len, void *map,
			bool punch);
/* mmap() of the uverbs file: 0 when [off, off+len) is one of its regions. */
int efasim_region_check(const struct efasim_uverbs *uv, uint64_t off, uint64_t len);

/* ---- the verbs objects (obj_verbs.c) ---- */

extern const struct efasim_obj_type efasim_pd_type, efasim_mr_type, efasim_cq_type,
	efasim_qp_type, efasim_ah_type;

/* An MR: what the device translates, and what the kernel holds for it. */
struct efasim_mr {
	struct dp_mr dev;
	uint64_t pinned;            /* on user memory: pages pinned */
	struct efasim_file *dmabuf; /* on a dma-buf: holds a reference */
	size_t map_len;             /* on a dma-buf: our mapping's length */
};

static inline struct efasim_mr *efasim_mr_of(struct efasim_obj *o)
{
	return o->priv;
}

/* REG_MR: ib_umem_get's checks (EINVAL, EPERM/ENOMEM for RLIMIT_MEMLOCK,
 * EFAULT for pages that are not mapped), then a new MR of pd. */
int efasim_mr_create(struct efasim_uverbs *uv, uint32_t pd, uint64_t start, uint64_t length,
		     uint64_t iova, uint32_t access, uint32_t *handle);
/* REG_DMABUF_MR: the pending handle becomes an MR of pd on the dma-buf
 * behind fd, [offset, offset+length) of it (db NULL: a real dma-buf we did
 * not make). */
int efasim_mr_create_dmabuf(struct efasim_uverbs *uv, uint32_t handle, uint32_t pd,
			    uint32_t access, uint64_t iova, struct efasim_file *db, int fd,
			    uint64_t offset, uint64_t length);

struct efasim_cq_attr {
	uint64_t user_handle;
	uint32_t depth, entry_size, nsub;
	struct efasim_file *channel;
};
/* A CQ with its ring and doorbell (ENOMEM past max_cq). */
int efasim_cq_create(struct efasim_uverbs *uv, int fd, const struct efasim_cq_attr *a,
		     struct dp_cq **out);

/* What CREATE_QP checked. */
struct efasim_qp_attr {
	uint64_t user_handle;
	uint32_t pd, send_cq, recv_cq; /* handles */
	uint8_t type, sq_sig_all;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	uint32_t sq_ring_size, rq_ring_size; /* bytes */
	/* the efa driver's flags: write with immediate data takes no receive */
	bool unsolicited_write_recv;
	uint8_t sl; /* service level (6.13), kept as the device keeps it */
};
/* A QP with its rings, doorbells and QPN, served by the device thread
 * (started if need be). */
int efasim_qp_create(struct efasim_uverbs *uv, int fd, const struct efasim_qp_attr *a,
		     struct dp_qp **out);

/* An AH of pd to gid: the number the PD has for gid already, or a new one
 * (ENOMEM past max_ah). */
int efasim_ah_create(struct efasim_uverbs *uv, uint32_t pd, const uint8_t gid[FAB_GID_LEN],
		     uint32_t *handle, uint16_t *ahn);

/* ---- fake dma-bufs (dmabuf.c) ---- */

struct efasim_dmabuf {
	struct efasim_file file;
	char owner[EFASIM_PCI_LEN]; /* "" for system memory */
	char exp_name[EFASIM_NAME_LEN];
	char name[33]; /* DMA_BUF_NAME_LEN */
	uint64_t size;
};

/* The dma-buf of an emulated file, or NULL when it is another kind. */
struct efasim_dmabuf *efasim_dmabuf_of(struct efasim_file *f);

/* ---- event files (events.c) ---- */

/* A new completion channel or async event file, in the descriptor table:
 * its descriptor (close-on-exec) or a negative errno. Lock held. */
int efasim_evq_create_locked(bool async, struct efasim_file **out);
/* Queues an event (d0: a channel's CQ handle or an async event's element;
 * d1: the async event's type), about owner (dropped with it); *counter is
 * incremented when the program reads it. */
int efasim_evq_push_locked(struct efasim_file *f, uint64_t d0, uint64_t d1, const void *owner,
			   uint32_t *counter);
/* Drops the events about owner that were not read. */
void efasim_evq_drop_locked(struct efasim_file *f, const void *owner);
bool efasim_evq_pending_locked(struct efasim_file *f);

#endif /* EFASIM_OBJECTS_H */
