// SPDX-License-Identifier: MIT
/*
 * libefasim's engine layer: the emulated EFA device.
 *
 *   dp_mem.c     the device's tables, which the driver (objects.h) fills:
 *                memory regions by key and address handles by number, per
 *                uverbs context; and the copies into and out of them
 *   dp_engine.c  the device thread: one per process, started by the first
 *                QP, that reads SQ/RQ doorbells and rings, moves bytes
 *                through the fabric (fabric.h) and writes completions
 *
 * Everything here runs under the global lock (efasim_lock), the thread
 * included: it takes the lock for one bounded pass at a time. The engine
 * knows nothing of handles, files or commands: what it reads is in the
 * structures below, set up by the layer above.
 */
#ifndef EFASIM_ENGINE_H
#define EFASIM_ENGINE_H

#include "fabric.h"

#include <pthread.h>
#include <sys/uio.h>

/* The efa driver's device_caps bits (EFA_QUERY_DEVICE_CAPS_*). */
#define EFA_CAP_RDMA_READ (1u << 0)
#define EFA_CAP_CQ_NOTIFICATIONS (1u << 2)
#define EFA_CAP_RDMA_WRITE (1u << 5)
#define EFA_CAP_UNSOLICITED_WRITE_RECV (1u << 6)

/* ib_qp_state */
enum { QPS_RESET, QPS_INIT, QPS_RTR, QPS_RTS, QPS_SQD, QPS_SQE, QPS_ERR };
/* ib_qp_type: UD, and the driver type that carries SRD */
#define QPT_UD 4
#define QPT_DRIVER 0xff

/* ---- device layouts (rdma-core v44 providers/efa/efa_io_defs.h) ---- */

#define EFA_OP_SEND 0
#define EFA_OP_RDMA_READ 1
#define EFA_OP_RDMA_WRITE 2 /* newer devices and libefa (rdma-core 45+) */

#define EFA_META_OP_MASK 0x0f
#define EFA_META_HAS_IMM (1u << 4)
#define EFA_META_INLINE (1u << 5)
#define EFA_META_EXT (1u << 6)
#define EFA_META_DESC (1u << 7)
#define EFA_CTRL2_PHASE (1u << 0)
#define EFA_CTRL2_FIRST (1u << 2)
#define EFA_CTRL2_LAST (1u << 3)
#define EFA_CTRL2_COMP_REQ (1u << 4)
#define EFA_LKEY_MASK 0x00ffffffu
#define EFA_RX_FIRST (1u << 30)
#define EFA_RX_LAST (1u << 31)
#define EFA_CQE_PHASE (1u << 0)
#define EFA_CQE_QTYPE_SHIFT 1
#define EFA_CQE_HAS_IMM (1u << 3)
#define EFA_CQE_OP_SHIFT 4
#define EFA_CQE_UNSOLICITED (1u << 7) /* an RDMA write's receive completion without a WQE */
#define EFA_QTYPE_SEND 1
#define EFA_QTYPE_RECV 2
#define EFA_CQ_DB_CI_MASK 0xffffu
#define EFA_CQ_DB_SN_SHIFT 29
#define EFA_CQ_DB_ARM (1u << 31)
#define EFA_AH_UNKNOWN 0xffff

enum efa_status {
	ST_OK = 0,
	ST_FLUSHED = 1,
	ST_QP_INTERNAL = 2,
	ST_INVALID_OP = 3,
	ST_INVALID_AH = 4,
	ST_INVALID_LKEY = 5,
	ST_BAD_LENGTH = 6,
	ST_REM_BAD_ADDRESS = 7,
	ST_REM_ABORT = 8,
	ST_REM_BAD_DEST_QPN = 9,
	ST_REM_RNR = 10,
	ST_REM_BAD_LENGTH = 11,
	ST_REM_BAD_STATUS = 12,
	ST_UNRESP_REMOTE = 13,
};

struct efa_tx_buf {
	uint32_t length, lkey, addr_lo, addr_hi;
};

struct efa_tx_wqe {
	uint16_t req_id;
	uint8_t ctrl1, ctrl2;
	uint16_t dest_qp_num, length;
	uint32_t imm;
	uint16_t ah, reserved;
	uint32_t qkey;
	uint8_t reserved2[12];
	union {
		struct efa_tx_buf sgl[2];
		uint8_t inline_data[32];
		struct {
			struct efa_tx_buf remote; /* length, rkey, address */
			struct efa_tx_buf local;
		} rdma;
	} data;
};

struct efa_rx_desc {
	uint32_t addr_lo, addr_hi;
	uint16_t req_id, length;
	uint32_t lkey_ctrl;
};

struct efa_cqe {
	uint16_t req_id;
	uint8_t status, flags;
	uint16_t qp_num, length;
	uint16_t ah, src_qp_num;
	uint32_t imm;
	union { /* the extended entry (32 bytes) */
		uint8_t src_addr[16]; /* a receive from an unknown AH */
		uint16_t length_hi;   /* an RDMA write's receive: length bits 31:16 */
	} u;
};

/* ---- the device's tables (dp_mem.c) ---- */

#define DP_MR_BUCKETS 64

/* A memory region as the device translates it (iova -> start or map). */
struct dp_mr {
	uint32_t key;     /* lkey = rkey */
	uint32_t pd;      /* the PD handle */
	uint32_t access;
	uint8_t on_dmabuf;
	uint8_t published; /* in this process's MR table (fabric.h) */
	uint64_t iova, length;
	uint64_t start;   /* user memory */
	void *map;        /* a dma-buf: the library's mapping of it */
	size_t map_skew;
	struct dp_mr *hnext;
};

struct dp_ah {
	uint32_t pd;
	uint16_t ahn;
	uint8_t gid[FAB_GID_LEN];
	struct dp_ah *next;
};

/* What the device knows of one uverbs context. */
struct dp_ctx {
	struct dp_mr *mrs[DP_MR_BUCKETS];
	struct dp_ah *ahs;
	/* the program's struct ibv_context and the operations its hooks
	 * replaced (poll_cq, req_notify_cq, post_send, post_recv) */
	uint64_t user_ctx;
	void *hooked[4];
	/* the MRs peers may read directly (fabric.h): the context's tag
	 * there, and the process that published them (a fork child has
	 * tables of its own) */
	uint64_t tag;
	pid_t published;
};

void dp_mr_add(struct dp_ctx *ctx, struct dp_mr *mr);
void dp_mr_del(struct dp_ctx *ctx, struct dp_mr *mr);
/* The MR behind a key (its low 24 bits), in that PD; NULL if none. */
struct dp_mr *dp_mr_lookup(const struct dp_ctx *ctx, uint32_t key, uint32_t pd);
/* 0 when [iova, iova+len) is inside the MR (*off its offset), else
 * ST_INVALID_LKEY. */
int dp_mr_range(const struct dp_mr *mr, uint64_t iova, size_t len, uint64_t *off);
/* Memory the device reads and writes: 0 or an efa_status. */
int dp_mem_read(const struct dp_mr *mr, uint64_t iova, void *dst, size_t len);
int dp_mem_write(const struct dp_mr *mr, uint64_t iova, const void *src, size_t len);
/*
 * Copies from another process's memory (fabric.h): the owner's token is
 * read in the same process_vm_readv as the bytes, so that the pid named
 * the owner for the whole copy. 0 copied; DP_PEER_UNREACHABLE nothing
 * copied (this process may not read that one: ptrace rules,
 * EFASIM_DIRECT_READ=0); DP_PEER_NOT_OWNER another process has the pid,
 * or the owner exec()ed or died; DP_PEER_FAULT a buffer could not be read
 * or written. Whatever a failed copy wrote into this process's buffers is
 * wiped.
 */
#define DP_PEER_UNREACHABLE (-1)
#define DP_PEER_NOT_OWNER (-2)
#define DP_PEER_FAULT (-3)
/* An RDMA read: len bytes of the owner's memory (rm) into the MR's [iova,
 * iova+len). */
int dp_mem_read_peer(const struct dp_mr *mr, uint64_t iova, const struct fab_rmem *rm, size_t len);
/* Wipes the MR's [iova, iova+len): a read whose region changed meanwhile. */
void dp_mem_wipe(const struct dp_mr *mr, uint64_t iova, size_t len);
void dp_mem_wipe_iov(const struct iovec *l, int n);
/* Whether the device may copy straight between processes (EFASIM_DIRECT_READ
 * is not 0, and reading another process was not refused). */
bool dp_mem_direct(void);
/* Where the MR's [iova, iova+len) is in this process: 0 (*addr) or
 * ST_INVALID_LKEY. */
int dp_mr_where(const struct dp_mr *mr, uint64_t iova, size_t len, uint64_t *addr);
/* Whether peers find the MR in this process's MR table. */
bool dp_mr_published(const struct dp_ctx *ctx, const struct dp_mr *mr);
/* A pulled send (fabric.h): copies the len bytes at remote (nremote
 * buffers, where rm found them) of the process rm names into local (this
 * process's receive buffers, len bytes in all): 0 or a DP_PEER_ error. */
#define DP_PULL_IOV 16
int dp_mem_pull(const struct fab_rmem *rm, const struct iovec *local, int nlocal,
		const struct iovec *remote, int nremote, size_t len);
/* Publishes the context's MRs for peers that read them (once per process;
 * later registrations follow): false when this process has no table. */
bool dp_mem_publish(struct dp_ctx *ctx);

void dp_ah_add(struct dp_ctx *ctx, struct dp_ah *ah);
void dp_ah_del(struct dp_ctx *ctx, struct dp_ah *ah);
/* The AH number the PD knows gid by, or EFA_AH_UNKNOWN. */
uint16_t dp_ah_number(const struct dp_ctx *ctx, uint32_t pd, const uint8_t gid[FAB_GID_LEN]);
const struct dp_ah *dp_ah_lookup(const struct dp_ctx *ctx, uint16_t ahn, uint32_t pd);
/* True when an AH of the context has number ahn (any PD). */
bool dp_ah_number_used(const struct dp_ctx *ctx, uint16_t ahn);

/* ---- queues (dp_engine.c) ---- */

struct dp_cq {
	uint32_t handle;
	uint64_t user_handle; /* libibverbs': the struct ibv_cq */
	uint32_t depth;      /* entries of each sub-CQ */
	uint32_t entry_size; /* 16, or 32 WITH_SGID */
	uint32_t nsub;
	uint8_t *ring;       /* the engine's mapping */
	volatile uint32_t *db;
	uint64_t ring_off, ring_len, db_off;
	uint32_t produced;
	/* Completion events (a CQ made with a channel): armed by
	 * ibv_req_notify_cq, seen by its hook (dp_cq_armed_locked) or as the
	 * doorbell's ARM bit; one event per arm, then the sequence number the
	 * next arm carries is another. */
	struct efasim_file *channel;
	bool armed;
	uint32_t fired_sn; /* the arm sequence an event was sent for, +1 */
	uint32_t comp_events, async_events; /* read by the program */
	/* what the program consumed, counted by the poll hooks (counted);
	 * polling, the entries a poll in progress may take */
	bool counted, overrun;
	_Atomic uint32_t consumed, polling;
	/* upcalls of the layer that made the CQ: an event for its channel, a
	 * CQ error for its context's async file */
	void (*notify)(struct dp_cq *cq);
	void (*error)(struct dp_cq *cq);
	void *hooked[2]; /* the poll functions the hooks replaced */
	struct dp_cq *next, *prev; /* the engine's list */
	pid_t pid;
};

struct dp_op;
struct dp_resp;
struct dp_peerent;

struct dp_oplist {
	struct dp_op *head, *tail;
	uint32_t n;
};

#define DP_PEER_BUCKETS 64

struct dp_qp {
	struct dp_ctx *ctx;
	struct efasim_dev *dev;
	pid_t pid; /* the process that created it: only it serves it */
	uint32_t handle, qpn, pd;
	uint8_t type; /* QPT_UD or QPT_DRIVER (SRD) */
	uint8_t sq_sig_all;
	struct dp_cq *scq, *rcq;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	uint32_t state, qkey, sq_psn, rnr_retry;
	/* made with EFA_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV: an RDMA write
	 * with immediate data completes without a receive WQE */
	bool unsolicited_write_recv;
	uint8_t sl;
	/* SQ: the LLQ ring and its doorbell */
	uint8_t *sq;
	volatile uint32_t *sq_db;
	uint32_t sq_cnt, sq_ci;
	/* RQ */
	uint8_t *rq;
	volatile uint32_t *rq_db;
	uint32_t rq_cnt, rq_ci;
	uint64_t sq_off, sq_len, rq_off, rq_len, sqdb_off, rqdb_off;
	/* the device */
	struct fab_qpfile *inbox;
	struct dp_op *ops; /* sq_cnt of them */
	uint32_t *op_free;
	uint32_t nfree;
	struct dp_oplist txq, wait, retry;
	struct dp_resp *resp_head, *resp_tail;
	struct dp_peerent *peers[DP_PEER_BUCKETS];
	uint64_t next_scan_ns, blocked_since_ns;
	uint64_t user_handle; /* libibverbs': the struct ibv_qp */
	bool hooks_checked;
	void *hooked;         /* the wr_complete the hook replaced */
	struct dp_qp *next, *prev;
};

/* Starts the device thread of this process, if it is not running. */
int dp_engine_start_locked(void);
void dp_engine_settle(void); /* without the lock: after a QP went */
void dp_engine_add_qp(struct dp_qp *qp);
void dp_engine_del_qp(struct dp_qp *qp);
void dp_engine_add_cq(struct dp_cq *cq);
void dp_engine_del_cq(struct dp_cq *cq);
/* The device side of a new QP (its rings set): its QPN and inbox on the
 * fabric, its operation slots. */
int dp_qp_setup(struct dp_qp *qp);
/* Undoes dp_qp_setup; in a fork child, leaves the parent's QP alone. */
void dp_qp_teardown(struct dp_qp *qp);
/* MODIFY_QP's new state (qkey set): published, and the queues flushed or
 * reset as the device does. */
void dp_qp_set_state(struct dp_qp *qp, uint32_t state);

/*
 * Where the program's calls reach the device (the hooks of doorbell.c):
 * the doorbells it rang and the completions it is about to poll for are
 * served in its own thread, so that the device thread does not have to
 * find them. Lock held.
 */
struct dp_qp *dp_qp_by_user_locked(uint64_t user_handle);
struct dp_cq *dp_cq_by_user_locked(uint64_t user_handle);
/* After a post: the QP's queues. */
void dp_qp_progress_locked(struct dp_qp *qp);
/* Before a poll: every queue of the process that completes on cq. */
void dp_cq_progress_locked(struct dp_cq *cq);
/* ibv_req_notify_cq armed cq (its doorbell written): an event comes with
 * the next completion, at once if one is there unpolled. */
void dp_cq_armed_locked(struct dp_cq *cq);
/* A poll may take up to n entries (begin, lock held) and took got (end,
 * without the lock). */
void dp_cq_poll_begin_locked(struct dp_cq *cq, uint32_t n);
void dp_cq_poll_end(struct dp_cq *cq, uint32_t n, uint32_t got);
/* The program calls the hooks: the device thread need not look for
 * doorbells (without the lock). */
void dp_engine_hooked(void);
/* A thread of the program waits for an event file (without the lock): the
 * device thread serves the queues meanwhile. */
void dp_engine_waiting(bool on);

#endif /* EFASIM_ENGINE_H */
