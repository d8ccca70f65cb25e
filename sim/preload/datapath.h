// SPDX-License-Identifier: MIT
/*
 * libefasim's data path: completion queues, queue pairs, address handles
 * and the device that executes the work requests libefa writes.
 *
 *   dp_verbs.c   the emulated kernel's commands (CREATE_CQ, CREATE_QP,
 *                MODIFY_QP, QUERY_QP, DESTROY_*, CREATE_AH ...) and the
 *                device memory libefa maps from the uverbs file
 *   dp_engine.c  the device: one thread per process, started by the first
 *                QP, that reads SQ/RQ doorbells and rings, moves bytes and
 *                writes completions
 *   dp_fabric.c  the wire: files in a fabric directory shared by every
 *                emulated device of the processes (and hosts) that use it
 *
 * Everything here runs under the global lock (efasim_lock), the engine
 * included: it takes the lock for one bounded pass at a time.
 */
#ifndef EFASIM_DATAPATH_H
#define EFASIM_DATAPATH_H

#include "internal.h"

#include <pthread.h>

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
	uint8_t src_addr[16]; /* the extended entry (CQ created WITH_SGID) */
};

/* ---- the fabric (dp_fabric.c) ---- */

#define FAB_GID_LEN 16
#define FAB_PKT_HDR 128

enum fab_pkt_type {
	PKT_SEND = 1,
	PKT_ACK,
	PKT_NACK,
	PKT_READ_REQ,
	PKT_READ_RESP,
	PKT_WRITE,
};
#define PKT_F_IMM 1u
#define PKT_F_LAST 2u
#define PKT_F_SRD 4u

/* The header of every packet in a port slot. */
struct fab_pkt {
	uint8_t type, flags;
	uint16_t status;
	uint32_t len; /* payload bytes that follow the header */
	uint32_t src_qpn, dst_qpn;
	uint32_t qkey, imm;
	uint64_t op; /* the requester's operation */
	uint64_t raddr;
	uint32_t rkey, src_type;
	uint64_t total, offset;
	uint64_t src_nonce;
	uint8_t src_gid[FAB_GID_LEN];
};
_Static_assert(sizeof(struct fab_pkt) <= FAB_PKT_HDR, "packet header");

struct fab_qpfile;  /* a mapped QP file (ours: the inbox) */
struct fab_peer;    /* a remote QP as one local QP sees it */

/* The fabric directory of this process (from the configuration). */
const char *fab_dir(void);
/* Allocates a QPN on the device of gid (POSIX lock on its device file)
 * and creates the QP's file. */
int fab_qp_create(const uint8_t gid[FAB_GID_LEN], uint32_t max_qp, uint32_t type,
		  uint32_t max_payload, struct fab_qpfile **out, uint32_t *qpn);
void fab_qp_destroy(struct fab_qpfile *q);
/* A fork child's copy of its parent's QP: unmapped, left alone. */
void fab_qp_forget(struct fab_qpfile *q);
void fab_qp_publish(struct fab_qpfile *q, uint32_t qkey, uint32_t state);
uint64_t fab_qp_nonce(const struct fab_qpfile *q);
/* Calls fn for each packet waiting in the inbox, at most budget; returns
 * how many were consumed. A packet is consumed when fn returns 0; when it
 * returns non-zero the packet stays and that port is retried later. */
typedef int (*fab_rx_fn)(void *arg, const struct fab_pkt *p, const void *payload);
int fab_qp_poll(struct fab_qpfile *q, int budget, fab_rx_fn fn, void *arg);
/* Releases ports held by senders that are gone; call now and then. */
void fab_qp_reap(struct fab_qpfile *q);

/* Looks a remote QP up; 0, -ENODEV (no device has that GID), -ENOENT (no
 * such QP, or it is gone). The peer belongs to the local QP (src). */
int fab_peer_open(const uint8_t gid[FAB_GID_LEN], uint32_t qpn, struct fab_peer **out);
void fab_peer_close(struct fab_peer *p);
void fab_peer_forget(struct fab_peer *p); /* close, keeping the port claim */
bool fab_peer_alive_fast(const struct fab_peer *p);
uint64_t fab_peer_nonce(const struct fab_peer *p);
/* 1 alive, 0 QP destroyed, -1 its process is gone. */
int fab_peer_alive(struct fab_peer *p);
uint32_t fab_peer_type(const struct fab_peer *p);
uint32_t fab_peer_max_payload(const struct fab_peer *p);
/* A slot to fill, or NULL when the port is full (or none is free). */
struct fab_pkt *fab_peer_slot(struct fab_peer *p, const struct fab_qpfile *src, void **payload);
void fab_peer_commit(struct fab_peer *p);

/* The engine's wake-up page: other engines wake a sleeping one.
 * fab_engine_prepare says "about to sleep" and returns the wake count;
 * the engine then checks for work and calls fab_engine_wait. */
int fab_engine_init(void);
uint32_t fab_engine_prepare(void);
void fab_engine_wait(uint32_t seq, long usec);
void fab_engine_awake(void);
void fab_engine_kick(void); /* wakes our own engine */
bool fab_qp_has_pending(const struct fab_qpfile *q);
bool fab_local_gid(const uint8_t gid[FAB_GID_LEN]);
void fab_atfork_child(void);

/* ---- objects of the emulated kernel (dp_verbs.c) ---- */

struct dp_cq {
	struct efasim_uverbs *uv;
	uint32_t handle;
	uint64_t user_handle;
	uint32_t depth;      /* entries of each sub-CQ */
	uint32_t entry_size; /* 16, or 32 WITH_SGID */
	uint32_t nsub;
	uint8_t *ring;       /* the engine's mapping */
	volatile uint32_t *db;
	uint64_t ring_off, ring_len, db_off;
	uint32_t produced;
	uint32_t fired_sn;   /* the arm sequence an event was sent for, +1 */
	struct efasim_file *channel;
	uint32_t comp_events;
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
	struct efasim_uverbs *uv;
	struct efasim_dev *dev;
	pid_t pid; /* the process that created it: only it serves it */
	uint32_t handle, qpn, pd;
	uint8_t type; /* IBV_QPT_UD (4) or IBV_QPT_DRIVER (SRD) */
	uint8_t sq_sig_all;
	struct dp_cq *scq, *rcq;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	uint32_t state, qkey, sq_psn, rnr_retry;
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
	struct dp_qp *next, *prev;
};

struct dp_ah {
	uint32_t pd;
	uint16_t ahn;
	uint8_t gid[FAB_GID_LEN];
};

/* dp_verbs.c: write() commands, as the core and the efa driver answer */
int dp_cmd_create_cq(struct efasim_wcall *c);
int dp_cmd_ex_create_cq(struct efasim_wcall *c);
int dp_cmd_destroy_cq(struct efasim_wcall *c);
int dp_cmd_create_qp(struct efasim_wcall *c);
int dp_cmd_modify_qp(struct efasim_wcall *c);
int dp_cmd_query_qp(struct efasim_wcall *c);
int dp_cmd_destroy_qp(struct efasim_wcall *c);
int dp_cmd_create_ah(struct efasim_wcall *c);
int dp_cmd_destroy_ah(struct efasim_wcall *c);
/* mmap() of the uverbs file: 0 when [off, off+len) is one of its regions. */
int dp_mmap_check(struct efasim_uverbs *uv, uint64_t off, uint64_t len);
/* Frees what a CQ, QP or AH object holds (file release, destroy). */
void dp_obj_release(struct efasim_uverbs *uv, struct efasim_obj *o);
void dp_file_release(struct efasim_uverbs *uv);
/* The MR behind a key, in the QP's PD; NULL if none. */
struct efasim_obj *dp_mr_lookup(struct efasim_uverbs *uv, uint32_t key, uint32_t pd);
/* The AH number the receiving QP's PD knows gid by, or EFA_AH_UNKNOWN. */
uint16_t dp_ah_number(struct efasim_uverbs *uv, uint32_t pd, const uint8_t gid[FAB_GID_LEN]);
const struct dp_ah *dp_ah_lookup(struct efasim_uverbs *uv, uint16_t ahn, uint32_t pd);

/* dp_engine.c */
int dp_engine_start_locked(void);
void dp_engine_settle(void); /* without the lock: after a QP went */
void dp_engine_add_qp(struct dp_qp *qp);
void dp_engine_del_qp(struct dp_qp *qp);
void dp_engine_add_cq(struct dp_cq *cq);
void dp_engine_del_cq(struct dp_cq *cq);
int dp_qp_setup(struct dp_qp *qp);
void dp_qp_teardown(struct dp_qp *qp);
void dp_qp_state_changed(struct dp_qp *qp, uint32_t old_state);
void dp_atfork_child(void);

/* Memory the device reads and writes: 0 or an efa_status. */
int dp_mem_read(const struct efasim_obj *mr, uint64_t iova, void *dst, size_t len);
int dp_mem_write(const struct efasim_obj *mr, uint64_t iova, const void *src, size_t len);
uint64_t dp_now_ns(void);

#endif /* EFASIM_DATAPATH_H */
