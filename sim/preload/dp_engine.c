// SPDX-License-Identifier: MIT
/*
 * The emulated EFA device: one thread per process, started when the
 * process creates its first QP (a process that only opens and queries
 * devices runs nothing). Each pass, under the global lock, it
 *   - fetches the WQEs libefa wrote to the SQ (LLQ) ring up to the SQ
 *     doorbell, checks them as the device would (descriptor bits, op type,
 *     AH, lkeys, lengths) and transmits them to the destination QP by
 *     (GID, QPN, Q-key) through the fabric (dp_fabric.c);
 *   - delivers what arrived in its QPs' inboxes: sends into the buffers of
 *     the RQ ring (up to the RQ doorbell), RDMA reads and writes into and
 *     out of registered memory (user memory or a fake dma-buf's pages,
 *     found in the device's tables, dp_mem.c);
 *   - writes completions into the CQ ring with the phase protocol libefa
 *     polls (phase 1 on the first lap, flipped each lap, the flags byte
 *     written last), holding them back while the CQ is full (the consumer
 *     index comes from the CQ doorbell).
 *
 * SRD is reliable: every send and RDMA write is acknowledged; a receiver
 * without a posted buffer answers RNR and the sender retries rnr_retry
 * times (7: forever) before REMOTE_ERROR_RNR. UD is not: a send to nowhere
 * completes and is lost, and a receiver without buffers drops it.
 * Errors as the device reports them: an unknown GID is
 * REMOTE_ERROR_BAD_ADDRESS, a QPN that is not there (or a Q-key or type
 * mismatch) REMOTE_ERROR_BAD_DEST_QPN, a peer whose process died while an
 * operation was outstanding LOCAL_ERROR_UNRESP_REMOTE (detected within
 * ~100 ms), a peer QP destroyed meanwhile REMOTE_ERROR_ABORT.
 */
#include "engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define BUDGET 64
#define DRIVEN_NS 2000000ull /* the program called a hook this recently */
#define DRIVEN_NAP_NS 500000L
#define SCAN_NS 20000000ull      /* timers: every 20 ms */
#define STALL_NS 100000000ull    /* no reply for 100 ms: is the peer alive? */
#define GIVEUP_NS 30000000000ull /* alive but silent for 30 s */
/* RNR retry timer: 1 ms, doubling to 8 ms. rnr_retry 3 (libfabric's
 * default) gives a receiver 7 ms to post buffers before the error. */
#define RNR_MIN_NS 1000000ull
#define RNR_MAX_NS 8000000ull
/* NACKs of a pulled send (fabric.h), never completion statuses: the
 * receiver cannot read the sender's process (ptrace rules, EFASIM_DIRECT_READ
 * =0), or could not copy these bytes. Either way the sender sends them. */
#define NACK_NO_PULL 0x100
#define NACK_PULL_FAILED 0x101

enum op_kind { OP_SEND, OP_READ, OP_WRITE };
enum op_stage { OPS_FREE, OPS_TX, OPS_WAIT, OPS_RETRY };

struct dp_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t key; /* the MR's, whole: a region registered again has another */
};

struct dp_op {
	uint8_t stage, kind, comp_req, has_imm, nsge, sent_all;
	uint8_t copy; /* send the bytes, not where they are (a pull failed) */
	uint16_t req_id;
	uint32_t idx, seq;
	uint32_t dest_qpn, qkey, imm;
	uint8_t gid[FAB_GID_LEN];
	struct dp_peerent *peer;
	uint64_t peer_nonce;
	struct dp_sge sge[2];
	uint8_t inline_data[32];
	uint32_t inline_len;
	uint64_t total, done;
	uint64_t raddr;
	uint32_t rkey, rnr_tries;
	uint64_t when, last;
	struct dp_op *next, *prev;
};

struct dp_peerent {
	uint8_t gid[FAB_GID_LEN];
	uint32_t qpn;
	struct fab_peer *fp;
	uint64_t nonce;
	int alive;
	bool no_pull; /* it cannot read our memory: sends carry their bytes */
	uint64_t checked_ns;
	struct dp_peerent *hnext;
};

struct dp_resp {
	uint8_t type;
	uint16_t status;
	uint64_t op;
	struct dp_peerent *pe;
	uint32_t dst_qpn, key;
	uint64_t raddr, total, offset;
	struct dp_resp *next;
};

static struct dp_qp *qps;
static struct dp_cq *cqs;
static int started;
static pid_t started_pid;
static pthread_t engine_tid;
static atomic_int zombie; /* engine_tid ended: to be joined */
static atomic_int ending; /* the last QP went: the thread is ending */
static pthread_cond_t ended = PTHREAD_COND_INITIALIZER;

/* The MR of a key the device checked earlier, if it is still registered. */
static const struct dp_mr *mr_again(const struct dp_qp *qp, uint32_t key)
{
	const struct dp_mr *mr = dp_mr_lookup(qp->ctx, key, qp->pd);

	return mr && mr->key == key ? mr : NULL;
}

/* ------------------------------------------------------------ lists */

static void ol_push(struct dp_oplist *l, struct dp_op *o)
{
	o->next = NULL;
	o->prev = l->tail;
	if (l->tail)
		l->tail->next = o;
	else
		l->head = o;
	l->tail = o;
	l->n++;
}

static void ol_del(struct dp_oplist *l, struct dp_op *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		l->head = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		l->tail = o->prev;
	o->next = o->prev = NULL;
	l->n--;
}

static struct dp_oplist *op_list(struct dp_qp *qp, struct dp_op *o)
{
	switch (o->stage) {
	case OPS_TX:
		return &qp->txq;
	case OPS_WAIT:
		return &qp->wait;
	case OPS_RETRY:
		return &qp->retry;
	}
	return NULL;
}

static void op_move(struct dp_qp *qp, struct dp_op *o, uint8_t stage)
{
	struct dp_oplist *l = op_list(qp, o);

	if (l)
		ol_del(l, o);
	o->stage = stage;
	l = op_list(qp, o);
	if (l)
		ol_push(l, o);
}

/* ------------------------------------------------------------ CQ */

/* The event of an armed CQ: one per arm (its sequence number). */
static void cq_event(struct dp_cq *cq)
{
	uint32_t db, sn;

	if (!cq->channel || !cq->notify)
		return;
	db = *cq->db;
	sn = (db >> EFA_CQ_DB_SN_SHIFT) & 3;
	if (!cq->armed && (!(db & EFA_CQ_DB_ARM) || cq->fired_sn == sn + 1))
		return;
	cq->armed = false;
	cq->fired_sn = sn + 1;
	cq->notify(cq);
}

/*
 * A CQE with no free entry for it: certain when the hooks count what the
 * program polled (a poll in progress may take entries not yet counted).
 * The CQ is then in error, as the device puts it: the kernel reports
 * IBV_EVENT_CQ_ERR on the context's async file, and what completes later
 * is lost.
 */
static bool cq_full(struct dp_cq *cq)
{
	if (cq->overrun)
		return true;
	if (!cq->counted || cq->produced - cq->consumed < cq->depth + cq->polling)
		return false;
	cq->overrun = true;
	efasim_warn("CQ %u overrun: %u completions not polled in a CQ of %u entries; the CQ is in "
		    "error (IBV_EVENT_CQ_ERR) and later completions are lost", cq->handle,
		    cq->produced - cq->consumed, cq->depth);
	if (cq->error)
		cq->error(cq);
	return true;
}

static void cq_write(struct dp_cq *cq, const struct efa_cqe *e)
{
	uint32_t idx = cq->produced & (cq->depth - 1);
	uint8_t phase = ((cq->produced / cq->depth) & 1) ? 0 : 1;
	uint8_t *slot = cq->ring + (size_t)idx * cq->entry_size;
	struct efa_cqe t = *e;

	t.flags = (uint8_t)((t.flags & ~EFA_CQE_PHASE) | phase);
	memcpy(slot, &t, 3);
	memcpy(slot + 4, (uint8_t *)&t + 4, cq->entry_size - 4);
	__atomic_store_n(slot + 3, t.flags, __ATOMIC_RELEASE);
	cq->produced++;
	cq_event(cq);
	if (efasim_trace_level() >= 2)
		efasim_trace("CQ %u entry %u: QP %u %s req_id %u status %u length %u", cq->handle, idx,
			     e->qp_num, (e->flags >> EFA_CQE_QTYPE_SHIFT & 3) == EFA_QTYPE_SEND ? "send" : "recv",
			     e->req_id, e->status, e->length);
}

/*
 * The device writes a completion as soon as it has one, as the hardware
 * does: a CQ must be sized for the work outstanding on its QPs (verbs
 * semantics). The CQ doorbell's consumer index cannot be used to hold
 * completions back: libefa 44 writes it only when a poll loop stops before
 * the CQ is empty (end_poll with an entry in hand), so it is often stale.
 */
static void cq_post(struct dp_cq *cq, const struct efa_cqe *e)
{
	if (cq && !cq_full(cq))
		cq_write(cq, e);
}

static void complete_tx(struct dp_qp *qp, struct dp_op *op, int status)
{
	struct efa_cqe e = { 0 };

	if (op->comp_req || status != ST_OK) {
		e.req_id = op->req_id;
		e.status = (uint8_t)status;
		e.flags = (uint8_t)(EFA_QTYPE_SEND << EFA_CQE_QTYPE_SHIFT |
				    (op->kind == OP_READ ? EFA_OP_RDMA_READ :
				     op->kind == OP_WRITE ? EFA_OP_RDMA_WRITE : EFA_OP_SEND) << EFA_CQE_OP_SHIFT);
		e.qp_num = (uint16_t)qp->qpn;
		cq_post(qp->scq, &e);
	}
	if (status != ST_OK)
		efasim_trace("QP %u: WQE %u completes with status %d", qp->qpn, op->req_id, status);
	op_move(qp, op, OPS_FREE);
	op->peer = NULL;
	qp->op_free[qp->nfree++] = op->idx;
}

/* A receive completion. An RDMA write's (with immediate data) carries the
 * length's high bits where a send's carries the sender's GID, and no WQE
 * (req_id 0) when the QP takes such writes unsolicited. */
static void complete_rx(struct dp_qp *qp, uint16_t req_id, int status, uint32_t len,
			const struct fab_pkt *p, uint8_t op, bool unsolicited)
{
	struct efa_cqe e = { 0 };

	e.req_id = req_id;
	e.status = (uint8_t)status;
	e.flags = (uint8_t)(EFA_QTYPE_RECV << EFA_CQE_QTYPE_SHIFT | op << EFA_CQE_OP_SHIFT |
			    ((p->flags & PKT_F_IMM) ? EFA_CQE_HAS_IMM : 0) |
			    (unsolicited ? EFA_CQE_UNSOLICITED : 0));
	e.qp_num = (uint16_t)qp->qpn;
	e.length = (uint16_t)len;
	e.ah = dp_ah_number(qp->ctx, qp->pd, p->src_gid);
	e.src_qp_num = (uint16_t)p->src_qpn;
	e.imm = p->imm;
	if (op == EFA_OP_RDMA_WRITE)
		e.u.length_hi = (uint16_t)(len >> 16);
	else
		memcpy(e.u.src_addr, p->src_gid, FAB_GID_LEN);
	cq_post(qp->rcq, &e);
}

/* ------------------------------------------------------------ peers */

static unsigned int peer_hash(const uint8_t gid[FAB_GID_LEN], uint32_t qpn)
{
	uint32_t h = 2166136261u ^ qpn;
	int i;

	for (i = 0; i < FAB_GID_LEN; i++)
		h = (h ^ gid[i]) * 16777619u;
	return h % DP_PEER_BUCKETS;
}

/* The remote QP (gid, qpn) as qp sees it, opened if needed: NULL with
 * *status REM_BAD_ADDRESS (no such device) or REM_BAD_DEST_QPN. */
static struct dp_peerent *peer_get(struct dp_qp *qp, const uint8_t gid[FAB_GID_LEN], uint32_t qpn,
				   int *status)
{
	unsigned int b = peer_hash(gid, qpn);
	struct dp_peerent *pe;
	int rc;

	for (pe = qp->peers[b]; pe; pe = pe->hnext)
		if (pe->qpn == qpn && !memcmp(pe->gid, gid, FAB_GID_LEN))
			break;
	/* a peer found dead (its process gone, or its QPN given to a new
	 * QP, which marks the old file) is looked up again */
	if (pe && pe->fp && pe->alive > 0 && fab_peer_alive_fast(pe->fp))
		return pe;
	if (!pe) {
		pe = calloc(1, sizeof(*pe));
		if (!pe) {
			*status = ST_QP_INTERNAL;
			return NULL;
		}
		memcpy(pe->gid, gid, FAB_GID_LEN);
		pe->qpn = qpn;
		pe->hnext = qp->peers[b];
		qp->peers[b] = pe;
	}
	if (pe->fp) { /* that QP is gone; a new one may have its number */
		fab_peer_close(pe->fp);
		pe->fp = NULL;
	}
	rc = fab_peer_open(gid, qpn, &pe->fp);
	if (rc) {
		pe->fp = NULL;
		*status = rc == -ENODEV ? ST_REM_BAD_ADDRESS : ST_REM_BAD_DEST_QPN;
		return NULL;
	}
	pe->nonce = fab_peer_nonce(pe->fp);
	pe->alive = 1;
	pe->checked_ns = efasim_now_ns();
	return pe;
}

static int peer_check(struct dp_peerent *pe, uint64_t now)
{
	if (!pe->fp)
		return 0;
	if (now - pe->checked_ns > STALL_NS / 2) {
		pe->alive = fab_peer_alive(pe->fp);
		pe->checked_ns = now;
	}
	return pe->alive;
}

static void pkt_fill(struct dp_qp *qp, struct fab_pkt *p, uint8_t type, uint32_t dst_qpn)
{
	memset(p, 0, sizeof(*p));
	p->type = type;
	p->flags = qp->type == QPT_UD ? 0 : PKT_F_SRD;
	p->src_qpn = qp->qpn;
	p->dst_qpn = dst_qpn;
	p->src_nonce = fab_qp_nonce(qp->inbox);
	p->src_type = qp->type;
	memcpy(p->src_gid, qp->dev->gid, FAB_GID_LEN);
}

/* ------------------------------------------------------------ SQ */

static int wqe_sgl(struct dp_qp *qp, struct dp_op *op, const struct efa_tx_buf *b, int n,
		   uint32_t need)
{
	int i;

	op->nsge = (uint8_t)n;
	for (i = 0; i < n; i++) {
		uint64_t addr = (uint64_t)b[i].addr_hi << 32 | b[i].addr_lo, off;
		struct dp_mr *mr = dp_mr_lookup(qp->ctx, b[i].lkey & EFA_LKEY_MASK, qp->pd);

		if (!mr || (mr->access & need) != need || dp_mr_range(mr, addr, b[i].length, &off))
			return ST_INVALID_LKEY;
		op->sge[i].addr = addr;
		op->sge[i].len = b[i].length;
		op->sge[i].key = mr->key;
		op->total += b[i].length;
	}
	return ST_OK;
}

/* The device's checks of one WQE; ST_OK or the completion status. */
static int wqe_parse(struct dp_qp *qp, struct dp_op *op, const struct efa_tx_wqe *w)
{
	uint8_t kind = w->ctrl1 & EFA_META_OP_MASK;
	const struct dp_ah *ah;

	op->req_id = w->req_id;
	op->inline_len = 0;
	op->comp_req = (w->ctrl2 & EFA_CTRL2_COMP_REQ) != 0;
	op->total = op->done = 0;
	op->nsge = 0;
	op->sent_all = 0;
	op->copy = 0;
	op->rnr_tries = 0;
	op->kind = kind == EFA_OP_RDMA_READ ? OP_READ : kind == EFA_OP_RDMA_WRITE ? OP_WRITE : OP_SEND;
	if (!(w->ctrl1 & EFA_META_DESC) || (w->ctrl1 & EFA_META_EXT) ||
	    !(w->ctrl2 & EFA_CTRL2_FIRST) || !(w->ctrl2 & EFA_CTRL2_LAST))
		return ST_QP_INTERNAL;
	/* Inline data is for sends: RDMA with it needs the 128-byte WQE of
	 * newer devices (rdma-core 63's EFADV_QP_FLAGS_INLINE_WRITE); in a
	 * 64-byte WQE the inline bytes lie where the remote address goes, and
	 * the device refuses the operation (UNSUPPORTED_OP, libefa's
	 * IBV_WC_LOC_QP_OP_ERR), as rdma-core 56's ibv_wr_set_inline_data
	 * after ibv_wr_rdma_write makes it. */
	if (kind > EFA_OP_RDMA_WRITE || (kind != EFA_OP_SEND && qp->type == QPT_UD) ||
	    (kind != EFA_OP_SEND && (w->ctrl1 & EFA_META_INLINE)) ||
	    (kind == EFA_OP_RDMA_READ && !(qp->dev->device_caps & EFA_CAP_RDMA_READ)) ||
	    (kind == EFA_OP_RDMA_WRITE && !(qp->dev->device_caps & EFA_CAP_RDMA_WRITE)))
		return ST_INVALID_OP;
	ah = dp_ah_lookup(qp->ctx, w->ah, qp->pd);
	if (!ah)
		return ST_INVALID_AH;
	memcpy(op->gid, ah->gid, FAB_GID_LEN);
	op->dest_qpn = w->dest_qp_num;
	op->qkey = w->qkey;
	op->has_imm = (w->ctrl1 & EFA_META_HAS_IMM) && kind != EFA_OP_RDMA_READ;
	op->imm = w->imm;
	if (kind == EFA_OP_SEND) {
		if (w->ctrl1 & EFA_META_INLINE) {
			if (w->length > sizeof(op->inline_data) || w->length > qp->dev->inline_buf_size)
				return ST_BAD_LENGTH;
			op->inline_len = w->length;
			memcpy(op->inline_data, w->data.inline_data, w->length);
			op->total = w->length;
		} else {
			int rc;

			if (w->length > 2 || w->length > qp->dev->max_sq_sge)
				return ST_QP_INTERNAL;
			op->inline_len = 0;
			rc = wqe_sgl(qp, op, w->data.sgl, w->length, 0);
			if (rc)
				return rc;
		}
		return op->total > qp->dev->max_msg_sz ? ST_BAD_LENGTH : ST_OK;
	}
	/* RDMA: one local buffer, the remote address in front of it */
	if (w->length != 1)
		return ST_QP_INTERNAL;
	op->raddr = (uint64_t)w->data.rdma.remote.addr_hi << 32 | w->data.rdma.remote.addr_lo;
	op->rkey = w->data.rdma.remote.lkey;
	if (w->data.rdma.local.length < w->data.rdma.remote.length ||
	    w->data.rdma.remote.length > qp->dev->max_rdma_size)
		return ST_BAD_LENGTH;
	{
		struct efa_tx_buf local = w->data.rdma.local;
		int rc;

		local.length = w->data.rdma.remote.length;
		rc = wqe_sgl(qp, op, &local, 1, kind == EFA_OP_RDMA_READ ? 1u /* LOCAL_WRITE */ : 0);
		if (rc)
			return rc;
	}
	return ST_OK;
}

static int sq_fetch(struct dp_qp *qp)
{
	uint16_t pc;
	int n = 0;

	if (!qp->sq || (qp->state != QPS_RTS))
		return 0;
	pc = (uint16_t)*qp->sq_db;
	while ((uint16_t)(pc - (uint16_t)qp->sq_ci) && qp->nfree && n < BUDGET) {
		struct efa_tx_wqe w;
		struct dp_op *op;
		int st;

		memcpy(&w, qp->sq + (size_t)(qp->sq_ci & (qp->sq_cnt - 1)) * sizeof(w), sizeof(w));
		op = &qp->ops[qp->op_free[--qp->nfree]];
		op->seq = qp->sq_ci++;
		op->peer = NULL;
		op->last = efasim_now_ns();
		op->stage = OPS_FREE;
		st = wqe_parse(qp, op, &w);
		if (st) {
			op_move(qp, op, OPS_TX); /* to be in a list complete_tx leaves */
			complete_tx(qp, op, st);
		} else {
			op_move(qp, op, OPS_TX);
		}
		n++;
	}
	return n;
}

static uint64_t op_id(const struct dp_op *op)
{
	return (uint64_t)op->seq << 32 | op->idx;
}

static struct dp_op *op_find(struct dp_qp *qp, uint64_t id, const struct fab_pkt *p)
{
	uint32_t idx = (uint32_t)id;
	struct dp_op *op;

	if (idx >= qp->sq_cnt)
		return NULL;
	op = &qp->ops[idx];
	if (op->stage == OPS_FREE || op->seq != (uint32_t)(id >> 32) || !op->peer ||
	    op->peer_nonce != p->src_nonce)
		return NULL;
	return op;
}

/* Gathers the send's bytes into the slot: ST_OK or an error. */
static int gather(struct dp_qp *qp, struct dp_op *op, uint8_t *dst, uint64_t off, uint64_t len)
{
	int i;

	if (op->inline_len && op->kind == OP_SEND) {
		memcpy(dst, op->inline_data, op->inline_len);
		return ST_OK;
	}
	for (i = 0; i < op->nsge && len; i++) {
		const struct dp_mr *mr;
		uint64_t n;
		int rc;

		if (off >= op->sge[i].len) {
			off -= op->sge[i].len;
			continue;
		}
		n = op->sge[i].len - off < len ? op->sge[i].len - off : len;
		mr = mr_again(qp, op->sge[i].key);
		if (!mr)
			return ST_INVALID_LKEY;
		rc = dp_mem_read(mr, op->sge[i].addr + off, dst, n);
		if (rc)
			return rc;
		dst += n;
		len -= n;
		off = 0;
	}
	return ST_OK;
}

/* Whether the send's receiver is to copy its bytes from our memory: an SRD
 * send (acknowledged, so its buffers stay ours until the receiver took
 * them) of buffers, not inline, to a peer that can read us. */
static bool pull_ok(const struct dp_qp *qp, const struct dp_op *op)
{
	return qp->type != QPT_UD && op->kind == OP_SEND && !op->inline_len && op->nsge &&
	       !op->copy && !op->peer->no_pull && fab_mr_table_ready() && dp_mem_direct();
}

/* Names the send's buffers in the slot's payload as the WQE named them
 * (key, address, length), for the receiver to find in our published MRs
 * when it copies: true, or false when one is not published (the send
 * then carries its bytes; an MR gone is gather's to say). */
static bool pull_segs(struct dp_qp *qp, struct dp_op *op, struct fab_pkt *p, void *pl)
{
	struct fab_seg *seg = pl;
	int i;

	for (i = 0; i < op->nsge; i++) {
		const struct dp_mr *mr = mr_again(qp, op->sge[i].key);

		if (!mr || !dp_mr_published(qp->ctx, mr))
			return false;
		seg[i] = (struct fab_seg){ .iova = op->sge[i].addr, .len = op->sge[i].len,
					   .key = mr->key };
	}
	p->nseg = op->nsge;
	p->flags |= PKT_F_PULL;
	return true;
}

/*
 * A UD send to an address no device has, or to a QPN that is not there,
 * completes and is lost, as on the device; the program then waits for
 * ever, so the first of each kind is said whatever EFASIM_TRACE says. GID
 * :: is an address handle made without a GRH (ibv_ud_pingpong without -g).
 */
static void lost_on_the_wire(const struct dp_qp *qp, const struct dp_op *op, int st)
{
	static const uint8_t zero[FAB_GID_LEN];
	static bool said_zero, said_gid, said_qpn;
	char gid[INET6_ADDRSTRLEN] = "?";
	bool *said;
	const char *why;

	inet_ntop(AF_INET6, op->gid, gid, sizeof(gid));
	if (!memcmp(op->gid, zero, FAB_GID_LEN)) {
		said = &said_zero;
		why = "an address handle without a GID (no GRH: does the program lack a GID "
		      "index option, such as ibv_ud_pingpong's -g?)";
	} else if (st == ST_REM_BAD_ADDRESS) {
		said = &said_gid;
		why = "no device of the fabric has that GID";
	} else {
		said = &said_qpn;
		why = "no QP of that number there";
	}
	if (!*said || efasim_trace_on()) {
		*said = true;
		efasim_warn("QP %u: UD send to GID %s QPN %u dropped: %s; the send completes and "
			    "nothing arrives, as on the device", qp->qpn, gid, op->dest_qpn, why);
	}
}

/*
 * An RDMA read served by the requester alone, as the device serves it
 * without the responder's CPU: the bytes copied from the responder
 * process's memory, found in the MRs it published (fabric.h). True when
 * done; false leaves the read to packets, where the responder answers
 * (and says what is wrong, if anything is).
 */
static bool read_direct(struct dp_qp *qp, struct dp_op *op)
{
	struct fab_peer *fp = op->peer->fp;
	const struct dp_mr *mr = mr_again(qp, op->sge[0].key);
	uint32_t state = fab_peer_state(fp);
	struct fab_rmem rm;
	int rc;

	if (!mr || (state != QPS_RTR && state != QPS_RTS && state != QPS_SQD) ||
	    fab_peer_qkey(fp) != op->qkey ||
	    fab_peer_mr(fp, op->rkey, 1u << 2 /* REMOTE_READ */, op->raddr, op->total, &rm))
		return false;
	/* the responder's token in the same copy: a process that exec()ed,
	 * or another that took its pid, is not read (its memory is wiped
	 * from the buffer); the packets then find nobody to answer */
	rc = dp_mem_read_peer(mr, op->sge[0].addr, &rm, op->total);
	if (rc == DP_PEER_NOT_OWNER)
		fab_peer_lost(fp);
	if (rc)
		return false;
	if (!fab_peer_mr_still(fp, &rm)) { /* deregistered meanwhile */
		dp_mem_wipe(mr, op->sge[0].addr, op->total);
		return false;
	}
	return true;
}

/* One step of the op at the head of the TX queue: 1 progress, 0 blocked. */
static int tx_op(struct dp_qp *qp, struct dp_op *op, uint64_t now)
{
	bool srd = qp->type != QPT_UD;
	struct fab_pkt *p;
	void *pl;
	int st;

	if (!op->peer) {
		op->peer = peer_get(qp, op->gid, op->dest_qpn, &st);
		if (!op->peer) {
			if (!srd)
				lost_on_the_wire(qp, op, st);
			complete_tx(qp, op, srd ? st : ST_OK); /* UD: lost on the wire */
			return 1;
		}
		op->peer_nonce = op->peer->nonce;
	}
	/* the peer went while the op waited (an RNR retry): a failed lookup
	 * left the entry without a file, a new QP of that number has another
	 * nonce */
	if (!op->peer->fp || op->peer->nonce != op->peer_nonce ||
	    !fab_peer_alive_fast(op->peer->fp)) {
		complete_tx(qp, op, srd ? ST_REM_BAD_DEST_QPN : ST_OK);
		return 1;
	}
	if (srd != (fab_peer_type(op->peer->fp) == 2)) {
		complete_tx(qp, op, srd ? ST_REM_BAD_DEST_QPN : ST_OK);
		return 1;
	}
	if (op->kind == OP_SEND && op->total > fab_peer_max_payload(op->peer->fp)) {
		complete_tx(qp, op, srd ? ST_REM_BAD_LENGTH : ST_OK);
		return 1;
	}
	if (op->kind == OP_READ && read_direct(qp, op)) {
		if (efasim_trace_level() >= 2)
			efasim_trace("QP %u <- QP %u: WQE %u read %llu bytes directly", qp->qpn,
				     op->dest_qpn, op->req_id, (unsigned long long)op->total);
		complete_tx(qp, op, ST_OK);
		return 1;
	}
	do {
		p = fab_peer_slot(op->peer->fp, qp->inbox, &pl);
		if (!p) {
			if (!qp->blocked_since_ns)
				qp->blocked_since_ns = now;
			return 0;
		}
		qp->blocked_since_ns = 0;
		switch (op->kind) {
		case OP_SEND:
			pkt_fill(qp, p, PKT_SEND, op->dest_qpn);
			st = pull_ok(qp, op) && pull_segs(qp, op, p, pl) ? ST_OK :
			     gather(qp, op, pl, 0, op->total);
			p->len = (uint32_t)op->total;
			op->sent_all = 1;
			break;
		case OP_READ:
			pkt_fill(qp, p, PKT_READ_REQ, op->dest_qpn);
			p->raddr = op->raddr;
			p->rkey = op->rkey;
			p->total = op->total;
			st = ST_OK;
			op->sent_all = 1;
			break;
		default: {
			uint64_t chunk = op->total - op->done, max = fab_peer_max_payload(op->peer->fp);

			if (chunk > max)
				chunk = max;
			pkt_fill(qp, p, PKT_WRITE, op->dest_qpn);
			p->raddr = op->raddr;
			p->rkey = op->rkey;
			p->total = op->total;
			p->offset = op->done;
			p->len = (uint32_t)chunk;
			st = gather(qp, op, pl, op->done, chunk);
			op->done += chunk;
			if (op->done == op->total) {
				p->flags |= PKT_F_LAST;
				op->sent_all = 1;
			}
			break;
		}
		}
		if (st) {
			complete_tx(qp, op, st);
			return 1;
		}
		p->qkey = op->qkey;
		p->imm = op->imm;
		if (op->has_imm)
			p->flags |= PKT_F_IMM;
		p->op = op_id(op);
		fab_peer_commit(op->peer->fp);
	} while (!op->sent_all);
	if (!srd) {
		complete_tx(qp, op, ST_OK);
		return 1;
	}
	op->last = now;
	op_move(qp, op, OPS_WAIT);
	if (efasim_trace_level() >= 2)
		efasim_trace("QP %u -> QP %u: WQE %u kind %d %llu bytes sent", qp->qpn, op->dest_qpn,
			     op->req_id, op->kind, (unsigned long long)op->total);
	return 1;
}

static int tx_run(struct dp_qp *qp, uint64_t now)
{
	int n = 0;

	while (qp->txq.head && n < BUDGET) {
		if (!tx_op(qp, qp->txq.head, now))
			break;
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ replies */

/* The QP that sent p, as qp sees it, or NULL when it is gone. */
static struct dp_peerent *requester(struct dp_qp *qp, const struct fab_pkt *p)
{
	struct dp_peerent *pe;
	int st;

	pe = peer_get(qp, p->src_gid, p->src_qpn, &st);
	if (pe && pe->nonce != p->src_nonce) {
		/* a requester we knew by an older QP of that number: the cached
		 * file is stale (its owner died), look it up again */
		pe->alive = 0;
		pe = peer_get(qp, p->src_gid, p->src_qpn, &st);
	}
	return pe && pe->nonce == p->src_nonce ? pe : NULL;
}

static void resp_queue(struct dp_qp *qp, uint8_t type, uint16_t status, const struct fab_pkt *p,
		       struct dp_resp *extra)
{
	struct dp_resp *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	if (extra)
		*r = *extra;
	r->type = type;
	r->status = status;
	r->op = p->op;
	r->dst_qpn = p->src_qpn;
	r->pe = requester(qp, p);
	if (!r->pe) {
		free(r); /* the requester is gone: nobody to answer */
		return;
	}
	r->next = NULL;
	if (qp->resp_tail)
		qp->resp_tail->next = r;
	else
		qp->resp_head = r;
	qp->resp_tail = r;
}

static void nack(struct dp_qp *qp, const struct fab_pkt *p, int status)
{
	if (p->flags & PKT_F_SRD)
		resp_queue(qp, PKT_NACK, (uint16_t)status, p, NULL);
}

/* One step of the reply at the head: 1 progress, 0 blocked, -1 done. */
static int resp_step(struct dp_qp *qp, struct dp_resp *r)
{
	const struct dp_mr *mr;
	struct fab_pkt *p;
	uint64_t chunk;
	void *pl;
	int st;

	if (!r->pe->fp || !fab_peer_alive_fast(r->pe->fp))
		return -1;
	p = fab_peer_slot(r->pe->fp, qp->inbox, &pl);
	if (!p)
		return 0;
	pkt_fill(qp, p, r->type, r->dst_qpn);
	p->op = r->op;
	p->status = r->status;
	if (r->type != PKT_READ_RESP) {
		fab_peer_commit(r->pe->fp);
		return -1;
	}
	chunk = r->total - r->offset;
	if (chunk > fab_peer_max_payload(r->pe->fp))
		chunk = fab_peer_max_payload(r->pe->fp);
	mr = mr_again(qp, r->key);
	st = mr ? dp_mem_read(mr, r->raddr + r->offset, pl, chunk) : ST_INVALID_LKEY;
	if (st) { /* deregistered or unreadable meanwhile */
		p->type = PKT_NACK;
		p->status = ST_REM_BAD_ADDRESS;
		fab_peer_commit(r->pe->fp);
		return -1;
	}
	p->offset = r->offset;
	p->total = r->total;
	p->len = (uint32_t)chunk;
	r->offset += chunk;
	if (r->offset == r->total)
		p->flags |= PKT_F_LAST;
	fab_peer_commit(r->pe->fp);
	return r->offset == r->total ? -1 : 1;
}

static int resp_run(struct dp_qp *qp)
{
	int n = 0, rc;

	while (qp->resp_head && n < BUDGET) {
		struct dp_resp *r = qp->resp_head;

		rc = resp_step(qp, r);
		if (rc == 0)
			break;
		n++;
		if (rc < 0) {
			qp->resp_head = r->next;
			if (!qp->resp_head)
				qp->resp_tail = NULL;
			free(r);
		}
	}
	return n;
}

/* ------------------------------------------------------------ RX */

/* The next receive WQE: 1 (descs, *n), 0 none posted, -1 malformed
 * (consumed; *req_id names it). */
static int rq_take(struct dp_qp *qp, struct efa_rx_desc *d, int *n, uint16_t *req_id)
{
	uint16_t pc, avail;
	uint32_t max = qp->dev->max_rq_sge ? qp->dev->max_rq_sge : 1;

	if (max > 16)
		max = 16;
	int i;

	if (!qp->rq || !qp->rq_cnt)
		return 0;
	pc = (uint16_t)*qp->rq_db;
	avail = (uint16_t)(pc - (uint16_t)qp->rq_ci);
	if (!avail || avail > qp->rq_cnt)
		return 0;
	for (i = 0; i < (int)avail && i < (int)max; i++) {
		memcpy(&d[i], qp->rq + (size_t)((qp->rq_ci + i) & (qp->rq_cnt - 1)) * sizeof(*d),
		       sizeof(*d));
		if (i == 0)
			*req_id = d[0].req_id;
		if (i == 0 && !(d[0].lkey_ctrl & EFA_RX_FIRST)) {
			qp->rq_ci++;
			return -1;
		}
		if (d[i].lkey_ctrl & EFA_RX_LAST) {
			*n = i + 1;
			qp->rq_ci += (uint32_t)(i + 1);
			return 1;
		}
	}
	if (i < (int)max)
		return 0; /* the rest is not posted yet */
	qp->rq_ci += max;
	return -1;
}

/* Scatters the bytes of src[] (pieces, in order) into the receive WQE:
 * ST_OK or the local error. */
struct piece {
	const uint8_t *p;
	uint64_t len;
};

static int scatter(struct dp_qp *qp, const struct efa_rx_desc *d, int n, struct piece *src,
		   int nsrc)
{
	int i, j = 0, rc;

	for (i = 0; i < n && j < nsrc; i++) {
		struct dp_mr *mr = dp_mr_lookup(qp->ctx, d[i].lkey_ctrl & EFA_LKEY_MASK, qp->pd);
		uint64_t addr = (uint64_t)d[i].addr_hi << 32 | d[i].addr_lo, off, room = d[i].length;

		if (!mr || !(mr->access & 1u) || dp_mr_range(mr, addr, d[i].length, &off))
			return ST_INVALID_LKEY;
		while (room && j < nsrc) {
			uint64_t k = src[j].len < room ? src[j].len : room;

			rc = dp_mem_write(mr, addr, src[j].p, k);
			if (rc)
				return rc;
			addr += k;
			room -= k;
			src[j].p += k;
			src[j].len -= k;
			if (!src[j].len)
				j++;
		}
	}
	while (j < nsrc && !src[j].len)
		j++;
	return j < nsrc ? ST_BAD_LENGTH : ST_OK;
}

/* A UD receive starts with the 40-byte GRH, as on InfiniBand: libfabric's
 * dgram endpoint reserves that prefix in every receive buffer. */
#define GRH_LEN 40

static void make_grh(uint8_t grh[GRH_LEN], const struct dp_qp *qp, const struct fab_pkt *p)
{
	memset(grh, 0, GRH_LEN);
	grh[0] = 6 << 4; /* IP version 6 */
	grh[4] = (uint8_t)(p->len >> 8);
	grh[5] = (uint8_t)p->len;
	grh[6] = 0x1b; /* next header: IBA */
	grh[7] = 1;    /* hop limit */
	memcpy(grh + 8, p->src_gid, FAB_GID_LEN);
	memcpy(grh + 24, qp->dev->gid, FAB_GID_LEN);
}

static bool rx_admit(struct dp_qp *qp, const struct fab_pkt *p)
{
	bool srd = qp->type != QPT_UD;

	if (((p->flags & PKT_F_SRD) != 0) != srd || p->qkey != qp->qkey ||
	    (qp->state != QPS_RTR && qp->state != QPS_RTS && qp->state != QPS_SQD)) {
		efasim_trace("QP %u: refuses a packet of QP %u (%s, Q-key %#x, QP state %u): %s",
			     qp->qpn, p->src_qpn, (p->flags & PKT_F_SRD) ? "SRD" : "UD", p->qkey,
			     qp->state, srd ? "BAD_DEST_QPN" : "dropped");
		nack(qp, p, ST_REM_BAD_DEST_QPN);
		return false;
	}
	return true;
}

/* The receive buffers of the WQE (descs d) as this process's memory, for
 * len bytes: ST_OK (l, *nl) or the local error scatter() would give. */
static int rx_iov(struct dp_qp *qp, const struct efa_rx_desc *d, int n, uint64_t len,
		  struct iovec *l, int *nl)
{
	int i;

	*nl = 0;
	for (i = 0; i < n && len; i++) {
		struct dp_mr *mr = dp_mr_lookup(qp->ctx, d[i].lkey_ctrl & EFA_LKEY_MASK, qp->pd);
		uint64_t addr = (uint64_t)d[i].addr_hi << 32 | d[i].addr_lo, where;
		uint64_t k = d[i].length < len ? d[i].length : len;

		if (!mr || !(mr->access & 1u) || dp_mr_where(mr, addr, d[i].length, &where))
			return ST_INVALID_LKEY;
		if (k)
			l[(*nl)++] = (struct iovec){ (void *)(uintptr_t)where, (size_t)k };
		len -= k;
	}
	return len ? ST_BAD_LENGTH : ST_OK;
}

/*
 * A pulled send's bytes, copied from the sender's memory into the receive
 * buffers l (len bytes), as the device takes them: each buffer found in
 * the sender's published MRs (a region deregistered is not read), its
 * token read in the same copy, the records checked again after it. 0, or
 * the NACK that asks the sender for the bytes: NACK_NO_PULL (its process
 * cannot be read from here), NACK_PULL_FAILED (a region is not there, or
 * the copy failed: the sender's device then says what is wrong).
 */
static int pull(struct fab_peer *fp, const struct fab_seg *seg, uint32_t nseg,
		const struct iovec *l, int nl, uint64_t len)
{
	struct fab_rmem rm[FAB_PULL_SEGS];
	struct iovec r[FAB_PULL_SEGS];
	uint32_t i;
	int rc;

	for (i = 0; i < nseg; i++) {
		rc = fab_peer_mr(fp, seg[i].key, 0, seg[i].iova, seg[i].len, &rm[i]);
		if (rc)
			return rc == -ENODEV ? NACK_NO_PULL : NACK_PULL_FAILED;
		r[i] = (struct iovec){ (void *)(uintptr_t)rm[i].addr, (size_t)seg[i].len };
	}
	rc = dp_mem_pull(&rm[0], l, nl, r, (int)nseg, len);
	if (rc == DP_PEER_NOT_OWNER)
		fab_peer_lost(fp);
	if (rc)
		return rc == DP_PEER_FAULT ? NACK_PULL_FAILED : NACK_NO_PULL;
	for (i = 0; i < nseg; i++) {
		if (!fab_peer_mr_still(fp, &rm[i])) { /* deregistered during the copy */
			dp_mem_wipe_iov(l, nl);
			return NACK_PULL_FAILED;
		}
	}
	return 0;
}

/*
 * A pulled send: its bytes copied from the sender's memory straight into
 * the receive buffers (one copy, as the device DMAs them), then the
 * completion and the ACK. When they cannot be copied, the receive WQE is
 * given back (rq_ci) and the NACK asks for the bytes.
 */
static void rx_pull(struct dp_qp *qp, const struct fab_pkt *p, const uint8_t *pl,
		    const struct efa_rx_desc *d, int n, uint16_t req_id, uint32_t rq_ci)
{
	const struct fab_seg *seg = (const void *)pl;
	struct iovec l[DP_PULL_IOV];
	struct dp_peerent *pe;
	uint64_t sum = 0;
	int nl, st, rc;
	uint32_t i;

	for (i = 0; i < p->nseg && i < FAB_PULL_SEGS; i++)
		sum += seg[i].len;
	if (!p->nseg || p->nseg > FAB_PULL_SEGS || sum != p->len) { /* not a sender of ours */
		qp->rq_ci = rq_ci;
		nack(qp, p, ST_REM_BAD_STATUS);
		return;
	}
	st = rx_iov(qp, d, n, p->len, l, &nl);
	if (st == ST_OK) {
		pe = requester(qp, p);
		if (!pe) { /* the sender is gone */
			qp->rq_ci = rq_ci;
			return;
		}
		rc = pull(pe->fp, seg, p->nseg, l, nl, p->len);
		if (rc) {
			efasim_trace("QP %u: cannot copy a send of QP %u from its process (%s): it is "
				     "to send the bytes", qp->qpn, p->src_qpn,
				     rc == NACK_NO_PULL ? "out of reach" : "a region or buffer failed");
			qp->rq_ci = rq_ci;
			nack(qp, p, rc);
			return;
		}
	}
	complete_rx(qp, req_id, st, st ? 0 : p->len, p, EFA_OP_SEND, false);
	if (st == ST_OK)
		resp_queue(qp, PKT_ACK, 0, p, NULL);
	else
		nack(qp, p, st == ST_BAD_LENGTH ? ST_REM_BAD_LENGTH : ST_REM_BAD_STATUS);
}

static void rx_send(struct dp_qp *qp, const struct fab_pkt *p, const uint8_t *pl)
{
	struct efa_rx_desc d[16];
	uint16_t req_id = 0;
	uint32_t rq_ci;
	int n = 0, rc, st;

	if (!rx_admit(qp, p))
		return;
	rq_ci = qp->rq_ci;
	rc = rq_take(qp, d, &n, &req_id);
	if (rc == 0) {
		efasim_trace("QP %u: no receive posted for a send from QP %u: %s", qp->qpn, p->src_qpn,
			     (p->flags & PKT_F_SRD) ? "RNR" : "dropped");
		nack(qp, p, ST_REM_RNR); /* UD: dropped */
		return;
	}
	if (rc < 0) {
		complete_rx(qp, req_id, ST_QP_INTERNAL, 0, p, EFA_OP_SEND, false);
		nack(qp, p, ST_REM_BAD_STATUS);
		return;
	}
	if (p->flags & PKT_F_PULL) {
		rx_pull(qp, p, pl, d, n, req_id, rq_ci);
		return;
	}
	{
		uint8_t grh[GRH_LEN];
		struct piece src[2] = { { grh, GRH_LEN }, { pl, p->len } };
		bool ud = qp->type == QPT_UD;

		if (ud)
			make_grh(grh, qp, p);
		st = scatter(qp, d, n, ud ? src : src + 1, ud ? 2 : 1);
		complete_rx(qp, req_id, st, st ? 0 : p->len + (ud ? GRH_LEN : 0), p, EFA_OP_SEND, false);
	}
	if (!(p->flags & PKT_F_SRD))
		return;
	if (st == ST_OK)
		resp_queue(qp, PKT_ACK, 0, p, NULL);
	else
		nack(qp, p, st == ST_BAD_LENGTH ? ST_REM_BAD_LENGTH : ST_REM_BAD_STATUS);
}

static struct dp_mr *rkey_mr(struct dp_qp *qp, const struct fab_pkt *p, uint32_t access,
			     uint64_t len)
{
	struct dp_mr *mr = dp_mr_lookup(qp->ctx, p->rkey, qp->pd);
	uint64_t off;

	/* an rkey is the whole 32 bits (a WQE's lkey field has 24) */
	if (!mr || mr->key != p->rkey || (mr->access & access) != access ||
	    dp_mr_range(mr, p->raddr, len, &off))
		return NULL;
	return mr;
}

static void rx_read_req(struct dp_qp *qp, const struct fab_pkt *p)
{
	struct dp_resp job = { 0 };
	struct dp_mr *mr;

	if (!rx_admit(qp, p))
		return;
	if (!(qp->dev->device_caps & EFA_CAP_RDMA_READ)) {
		nack(qp, p, ST_REM_BAD_STATUS);
		return;
	}
	mr = rkey_mr(qp, p, 1u << 2 /* REMOTE_READ */, p->total);
	if (!mr) {
		nack(qp, p, ST_REM_BAD_ADDRESS);
		return;
	}
	job.key = mr->key;
	job.raddr = p->raddr;
	job.total = p->total;
	resp_queue(qp, PKT_READ_RESP, 0, p, &job);
}

static void rx_write(struct dp_qp *qp, const struct fab_pkt *p, const uint8_t *pl)
{
	struct dp_mr *mr;
	struct efa_rx_desc d[16];
	uint16_t req_id = 0;
	int n = 0, rc;

	if (!rx_admit(qp, p))
		return;
	if (!(qp->dev->device_caps & EFA_CAP_RDMA_WRITE)) {
		nack(qp, p, ST_REM_BAD_STATUS);
		return;
	}
	mr = rkey_mr(qp, p, 1u << 1 /* REMOTE_WRITE */, p->total);
	if (!mr || p->offset + p->len > p->total) {
		nack(qp, p, ST_REM_BAD_ADDRESS);
		return;
	}
	if (dp_mem_write(mr, p->raddr + p->offset, pl, p->len)) {
		nack(qp, p, ST_REM_BAD_ADDRESS);
		return;
	}
	if (!(p->flags & PKT_F_LAST))
		return;
	if ((p->flags & PKT_F_IMM) && qp->unsolicited_write_recv) {
		/* write with immediate to a QP made with the unsolicited flag:
		 * reports the imm without taking a receive */
		complete_rx(qp, 0, ST_OK, (uint32_t)p->total, p, EFA_OP_RDMA_WRITE, true);
	} else if (p->flags & PKT_F_IMM) {
		/* write with immediate: consumes a receive, reports the imm */
		rc = rq_take(qp, d, &n, &req_id);
		if (rc == 0) {
			nack(qp, p, ST_REM_RNR);
			return;
		}
		complete_rx(qp, req_id, rc < 0 ? ST_QP_INTERNAL : ST_OK, rc < 0 ? 0 : (uint32_t)p->total,
			    p, EFA_OP_RDMA_WRITE, false);
	}
	resp_queue(qp, PKT_ACK, 0, p, NULL);
}

static void rx_reply(struct dp_qp *qp, const struct fab_pkt *p, const uint8_t *pl, uint64_t now)
{
	struct dp_op *op = op_find(qp, p->op, p);
	const struct dp_mr *mr;
	int st;

	if (!op || op->stage != OPS_WAIT)
		return; /* late: the op completed or was flushed */
	op->last = now;
	switch (p->type) {
	case PKT_ACK:
		if (op->kind != OP_READ)
			complete_tx(qp, op, ST_OK);
		return;
	case PKT_NACK:
		if (p->status == NACK_NO_PULL || p->status == NACK_PULL_FAILED) {
			if (p->status == NACK_NO_PULL && op->peer && !op->peer->no_pull) {
				op->peer->no_pull = true;
				efasim_trace("QP %u: QP %u cannot read this process: sends to it "
					     "carry their bytes", qp->qpn, p->src_qpn);
			}
			op->copy = 1;
			op->done = 0;
			op->sent_all = 0;
			op->when = now;
			op_move(qp, op, OPS_RETRY);
			return;
		}
		if (p->status == ST_REM_RNR && (qp->rnr_retry >= 7 || op->rnr_tries < qp->rnr_retry)) {
			uint64_t d = RNR_MIN_NS << (op->rnr_tries < 7 ? op->rnr_tries : 7);

			op->rnr_tries++;
			op->when = now + (d < RNR_MAX_NS ? d : RNR_MAX_NS);
			op->done = 0;
			op->sent_all = 0;
			op_move(qp, op, OPS_RETRY);
			return;
		}
		complete_tx(qp, op, p->status ? p->status : ST_REM_BAD_STATUS);
		return;
	case PKT_READ_RESP:
		if (op->kind != OP_READ || p->offset != op->done || p->offset + p->len > op->total) {
			complete_tx(qp, op, ST_REM_BAD_STATUS);
			return;
		}
		mr = mr_again(qp, op->sge[0].key);
		st = mr ? dp_mem_write(mr, op->sge[0].addr + p->offset, pl, p->len) : ST_INVALID_LKEY;
		if (st) {
			complete_tx(qp, op, st);
			return;
		}
		op->done += p->len;
		if ((p->flags & PKT_F_LAST) || op->done == op->total)
			complete_tx(qp, op, op->done == op->total ? ST_OK : ST_REM_BAD_STATUS);
		return;
	}
}

struct rx_ctx {
	struct dp_qp *qp;
	uint64_t now;
};

static const char *pkt_name(uint8_t t)
{
	static const char *const n[] = { "?", "SEND", "ACK", "NACK", "READ_REQ", "READ_RESP", "WRITE" };

	return t < sizeof(n) / sizeof(n[0]) ? n[t] : "?";
}

static int rx_one(void *arg, const struct fab_pkt *p, const void *pl)
{
	struct rx_ctx *c = arg;

	if (efasim_trace_level() >= 2)
		efasim_trace("QP %u <- QP %u: %s len %u op %#llx status %u offset %llu", c->qp->qpn,
			     p->src_qpn, pkt_name(p->type), p->len, (unsigned long long)p->op, p->status,
			     (unsigned long long)p->offset);
	if (p->dst_qpn != c->qp->qpn)
		return 0;
	switch (p->type) {
	case PKT_SEND:
		rx_send(c->qp, p, pl);
		break;
	case PKT_READ_REQ:
		rx_read_req(c->qp, p);
		break;
	case PKT_WRITE:
		rx_write(c->qp, p, pl);
		break;
	case PKT_ACK:
	case PKT_NACK:
	case PKT_READ_RESP:
		rx_reply(c->qp, p, pl, c->now);
		break;
	}
	return 0;
}

/* ------------------------------------------------------------ timers */

static void timers(struct dp_qp *qp, uint64_t now, int *work)
{
	struct dp_op *op, *next;

	for (op = qp->retry.head; op; op = next) {
		next = op->next;
		if (op->when <= now) {
			op_move(qp, op, OPS_TX);
			(*work)++;
		}
	}
	if (now < qp->next_scan_ns)
		return;
	qp->next_scan_ns = now + SCAN_NS;
	fab_qp_reap(qp->inbox);
	for (op = qp->wait.head; op; op = next) {
		int alive;

		next = op->next;
		if (now - op->last < STALL_NS)
			continue;
		alive = op->peer ? peer_check(op->peer, now) : 0;
		if (op->peer && op->peer->nonce != op->peer_nonce)
			alive = 0;
		if (alive > 0 && now - op->last < GIVEUP_NS)
			continue;
		complete_tx(qp, op, alive < 0 || alive > 0 ? ST_UNRESP_REMOTE : ST_REM_ABORT);
		(*work)++;
	}
	op = qp->txq.head;
	if (op && op->peer && qp->blocked_since_ns && now - qp->blocked_since_ns > STALL_NS &&
	    peer_check(op->peer, now) <= 0) {
		complete_tx(qp, op, qp->type == QPT_UD ? ST_OK : ST_UNRESP_REMOTE);
		qp->blocked_since_ns = 0;
		(*work)++;
	}
}

/* ------------------------------------------------------------ QP state */

int dp_qp_setup(struct dp_qp *qp)
{
	uint32_t i;
	int rc;

	rc = fab_qp_create(qp->dev->gid, qp->dev->max_qp, qp->type == QPT_UD ? 1 : 2,
			   qp->dev->max_msg_sz, &qp->inbox, &qp->qpn);
	if (rc)
		return rc;
	qp->pid = getpid();
	/* its memory, for peers that read it (the device needs the RDMA_READ
	 * cap to serve reads at all) and that take its sends' bytes */
	if (dp_mem_publish(qp->ctx))
		fab_qp_publish_mrs(qp->inbox, qp->ctx->tag, qp->pd,
				   (qp->dev->device_caps & EFA_CAP_RDMA_READ) != 0);
	qp->ops = calloc(qp->sq_cnt, sizeof(*qp->ops));
	qp->op_free = calloc(qp->sq_cnt, sizeof(*qp->op_free));
	if (!qp->ops || !qp->op_free) {
		free(qp->ops);
		free(qp->op_free);
		qp->ops = NULL;
		qp->op_free = NULL;
		fab_qp_destroy(qp->inbox);
		qp->inbox = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < qp->sq_cnt; i++) {
		qp->ops[i].idx = i;
		qp->op_free[i] = qp->sq_cnt - 1 - i;
	}
	qp->nfree = qp->sq_cnt;
	return 0;
}

static void drop_all(struct dp_qp *qp, bool flush)
{
	struct dp_oplist *lists[] = { &qp->txq, &qp->wait, &qp->retry };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		while (lists[i]->head) {
			struct dp_op *op = lists[i]->head;

			if (flush) {
				complete_tx(qp, op, ST_FLUSHED);
			} else {
				op_move(qp, op, OPS_FREE);
				qp->op_free[qp->nfree++] = op->idx;
			}
		}
	}
	while (qp->resp_head) {
		struct dp_resp *r = qp->resp_head;

		qp->resp_head = r->next;
		free(r);
	}
	qp->resp_tail = NULL;
}

void dp_qp_teardown(struct dp_qp *qp)
{
	bool own = qp->pid == getpid();
	unsigned int b;

	if (qp->ops)
		drop_all(qp, false);
	for (b = 0; b < DP_PEER_BUCKETS; b++) {
		while (qp->peers[b]) {
			struct dp_peerent *pe = qp->peers[b];

			qp->peers[b] = pe->hnext;
			if (pe->fp && own)
				fab_peer_close(pe->fp);
			else if (pe->fp)
				fab_peer_forget(pe->fp); /* fork: the parent's claims stay */
			free(pe);
		}
	}
	free(qp->ops);
	free(qp->op_free);
	qp->ops = NULL;
	qp->op_free = NULL;
	if (own)
		fab_qp_destroy(qp->inbox);
	else
		fab_qp_forget(qp->inbox);
	qp->inbox = NULL;
}

void dp_qp_set_state(struct dp_qp *qp, uint32_t state)
{
	uint32_t old = qp->state;

	qp->state = state;
	fab_qp_publish(qp->inbox, qp->qkey, qp->state);
	if (old == state)
		return;
	if (qp->state == QPS_RESET) {
		/* the device forgets the queues; libefa restarts its counters */
		drop_all(qp, false);
		qp->sq_ci = qp->rq_ci = 0;
		if (qp->sq_db)
			*qp->sq_db = 0;
		if (qp->rq_db)
			*qp->rq_db = 0;
	} else if (qp->state == QPS_ERR) {
		struct efa_rx_desc d[16];
		struct fab_pkt none = { 0 };
		uint16_t req_id = 0;
		int n, rc;

		/* flush: what is posted completes with FLUSHED */
		while (qp->sq && (uint16_t)((uint16_t)*qp->sq_db - (uint16_t)qp->sq_ci) && qp->nfree) {
			struct dp_op *op = &qp->ops[qp->op_free[--qp->nfree]];
			struct efa_tx_wqe w;

			memcpy(&w, qp->sq + (size_t)(qp->sq_ci & (qp->sq_cnt - 1)) * sizeof(w), sizeof(w));
			op->seq = qp->sq_ci++;
			op->stage = OPS_FREE;
			op->req_id = w.req_id;
			op->comp_req = 1;
			op->kind = OP_SEND;
			op_move(qp, op, OPS_TX);
		}
		drop_all(qp, true);
		while ((rc = rq_take(qp, d, &n, &req_id)) != 0)
			complete_rx(qp, req_id, ST_FLUSHED, 0, &none, EFA_OP_SEND, false);
	}
}

/* ------------------------------------------------------------ the thread */

void dp_engine_add_qp(struct dp_qp *qp)
{
	qp->prev = NULL;
	qp->next = qps;
	if (qps)
		qps->prev = qp;
	qps = qp;
}

static bool own_qps(void)
{
	pid_t me = started_pid;
	struct dp_qp *qp;

	for (qp = qps; qp; qp = qp->next)
		if (qp->pid == me)
			return true;
	return false;
}

void dp_engine_del_qp(struct dp_qp *qp)
{
	if (qp->prev)
		qp->prev->next = qp->next;
	else if (qps == qp)
		qps = qp->next;
	if (qp->next)
		qp->next->prev = qp->prev;
	qp->next = qp->prev = NULL;
	/* the last QP: the device thread ends at once (the next QP starts
	 * another), so that a process done with RDMA runs nothing */
	if (started && started_pid == getpid() && !own_qps()) {
		atomic_store(&ending, 1);
		fab_engine_kick();
	}
}

static void reap_locked(void)
{
	if (!zombie)
		return;
	pthread_join(engine_tid, NULL); /* it holds no lock: it has returned */
	zombie = 0;
}

/* After the last QP went (called without the lock): waits, a second at
 * most, for the device thread to end, so that a program that exits next
 * leaves no thread behind. */
void dp_engine_settle(void)
{
	struct timespec until;

	if (!atomic_load_explicit(&ending, memory_order_relaxed) &&
	    !atomic_load_explicit(&zombie, memory_order_relaxed))
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	efasim_lock();
	while (atomic_load(&ending) && started && started_pid == getpid())
		if (efasim_cond_timedwait(&ended, &until))
			break;
	reap_locked();
	efasim_unlock();
}

void dp_engine_add_cq(struct dp_cq *cq)
{
	cq->pid = getpid();
	cq->prev = NULL;
	cq->next = cqs;
	if (cqs)
		cqs->prev = cq;
	cqs = cq;
}

void dp_engine_del_cq(struct dp_cq *cq)
{
	if (cq->prev)
		cq->prev->next = cq->next;
	else if (cqs == cq)
		cqs = cq->next;
	if (cq->next)
		cq->next->prev = cq->prev;
	cq->next = cq->prev = NULL;
}

/* What the device does for one QP in a pass: what arrived, the replies
 * owed, the SQ, the timers. */
static int qp_pass(struct dp_qp *qp, uint64_t now)
{
	struct rx_ctx rx = { qp, now };
	int work = 0;

	work += fab_qp_poll(qp->inbox, BUDGET, rx_one, &rx);
	work += resp_run(qp);
	work += sq_fetch(qp);
	work += tx_run(qp, now);
	timers(qp, now, &work);
	return work;
}

static int engine_pass(uint64_t now)
{
	pid_t me = started_pid; /* the engine's process (fork: reset) */
	struct dp_qp *qp;
	int work = 0;

	for (qp = qps; qp; qp = qp->next)
		if (qp->pid == me)
			work += qp_pass(qp, now);
	return work;
}

/* ------------------------------------------------------------ the program's calls */

static atomic_bool hooked;         /* the program called a hook since the last look */
static uint64_t driven_until;      /* the device thread's: driven mode lasts to then */
static atomic_int waiters;         /* threads waiting for an event file */

struct dp_qp *dp_qp_by_user_locked(uint64_t user_handle)
{
	struct dp_qp *qp;

	for (qp = qps; qp; qp = qp->next)
		if (qp->user_handle == user_handle)
			return qp;
	return NULL;
}

struct dp_cq *dp_cq_by_user_locked(uint64_t user_handle)
{
	struct dp_cq *cq;

	for (cq = cqs; cq; cq = cq->next)
		if (cq->user_handle == user_handle)
			return cq;
	return NULL;
}

void dp_qp_progress_locked(struct dp_qp *qp)
{
	if (qp->pid == efasim_pid() && qp->inbox)
		qp_pass(qp, efasim_now_ns());
}

void dp_cq_progress_locked(struct dp_cq *cq)
{
	uint64_t now = efasim_now_ns();
	pid_t me = efasim_pid();
	struct dp_qp *qp;

	for (qp = qps; qp; qp = qp->next)
		if (qp->pid == me && qp->inbox && (qp->scq == cq || qp->rcq == cq))
			qp_pass(qp, now);
}

void dp_cq_armed_locked(struct dp_cq *cq)
{
	uint32_t db = *cq->db;

	if (!cq->channel)
		return;
	cq->armed = true;
	/* the arm carries the consumer index: entries past it are unpolled */
	if ((uint16_t)cq->produced != (uint16_t)(db & EFA_CQ_DB_CI_MASK))
		cq_event(cq);
}

void dp_cq_poll_begin_locked(struct dp_cq *cq, uint32_t n)
{
	atomic_fetch_add_explicit(&cq->polling, n, memory_order_relaxed);
}

void dp_cq_poll_end(struct dp_cq *cq, uint32_t n, uint32_t got)
{
	/* consumed first: a device that reads polling after this reads it */
	atomic_fetch_add_explicit(&cq->consumed, got, memory_order_release);
	atomic_fetch_sub_explicit(&cq->polling, n, memory_order_release);
}

void dp_engine_hooked(void)
{
	if (!atomic_load_explicit(&hooked, memory_order_relaxed))
		atomic_store_explicit(&hooked, true, memory_order_relaxed);
}

void dp_engine_waiting(bool on)
{
	atomic_fetch_add(&waiters, on ? 1 : -1);
	if (on)
		fab_engine_kick();
}

/* The program drives the device through the hooks: the device thread only
 * keeps the timers and serves what comes while the program is busy
 * elsewhere, so it naps without waking on every packet. */
static bool program_drives(uint64_t now)
{
	if (atomic_exchange_explicit(&hooked, false, memory_order_relaxed))
		driven_until = now + DRIVEN_NS;
	return !atomic_load_explicit(&waiters, memory_order_relaxed) && now < driven_until;
}

static bool engine_pending(void)
{
	pid_t me = started_pid;
	struct dp_qp *qp;

	for (qp = qps; qp; qp = qp->next) {
		if (qp->pid != me)
			continue;
		if (fab_qp_has_pending(qp->inbox) || qp->resp_head || qp->retry.head ||
		    (qp->sq && (uint16_t)((uint16_t)*qp->sq_db - (uint16_t)qp->sq_ci)))
			return true;
	}
	return false;
}

/*
 * Idle policy: a doorbell is a plain store, so the engine must look; but a
 * spinning engine competes with the program's own polling threads for the
 * CPUs. It sleeps instead: 10 us naps (timer slack 1 us) while traffic is
 * recent, growing to 2 ms after HOT_NS of silence; it ends with the
 * process's last QP.
 * A sleeping engine is woken at once by a sender's futex wake, and a
 * sleeper that wakes is scheduled promptly (it has used little CPU).
 * While the program calls the hooks (DRIVEN_NS), its own calls move the
 * bytes: the engine naps DRIVEN_NAP_NS at a time without telling senders
 * to wake it.
 */
#define HOT_NS 5000000ull

static void *engine_main(void *arg)
{
	uint64_t idle_since = 0;
	long nap = 10;

	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	for (;;) {
		uint64_t now = efasim_now_ns();
		uint32_t seq;
		int work;
		bool any;

		efasim_lock();
		work = engine_pass(now);
		any = own_qps();
		if (!any) {
			started = 0;
			zombie = 1;
			atomic_store(&ending, 0);
			pthread_cond_broadcast(&ended);
			efasim_unlock();
			efasim_trace("device engine stopped: no QP left");
			return NULL;
		}
		efasim_unlock();
		if (work) {
			idle_since = 0;
			nap = 10;
			continue;
		}
		if (!idle_since)
			idle_since = now;
		if (program_drives(now)) {
			struct timespec ts = { 0, DRIVEN_NAP_NS };

			nanosleep(&ts, NULL);
			continue;
		}
		seq = fab_engine_prepare();
		efasim_lock();
		work = engine_pending();
		efasim_unlock();
		if (work) {
			fab_engine_awake();
			continue;
		}
		fab_engine_wait(seq, now - idle_since < HOT_NS ? 10 : nap);
		if (now - idle_since >= HOT_NS && nap < 2000)
			nap *= 2;
	}
	return NULL;
}

/* fork: the child runs no engine and serves none of the parent's queues
 * (their pid says whose they are); its first QP starts its own. */
static void atfork_child(void)
{
	started = 0;
	zombie = 0; /* the parent's thread is not the child's */
	atomic_store(&ending, 0);
	fab_atfork_child();
}

int dp_engine_start_locked(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int rc;

	if (started && started_pid == getpid()) {
		atomic_store(&ending, 0); /* it sees the new QP before it ends */
		return 0;
	}
	reap_locked();
	rc = efasim_atfork_child_locked(atfork_child);
	if (rc)
		return rc;
	rc = fab_engine_init();
	if (rc)
		return rc;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* the device takes none of the program's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&tid, &attr, engine_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc)
		return -rc;
	pthread_setname_np(tid, "efasim-device");
	engine_tid = tid;
	started = 1;
	started_pid = getpid();
	efasim_trace("device engine started");
	return 0;
}
