// SPDX-License-Identifier: MIT
/*
 * The emulated kernel's data-path commands, as ib_uverbs and the efa driver
 * answer them (drivers/infiniband/hw/efa/efa_verbs.c), and the device
 * memory libefa maps from the uverbs descriptor.
 *
 * Device memory: the descriptor of an emulated uverbs file is a memfd.
 * Rings and doorbells are ranges of it ("regions"); the mmap key of a
 * region is its offset, as rdma_user_mmap_get_offset makes one. libefa
 * maps them with mmap(cmd_fd, key) and gets the same pages the engine
 * maps for itself: the memory the device reads and writes. Page 0 holds
 * the allocation cursor, shared with a fork child.
 *
 * Order of checks, errno for errno: the core first (context, handles,
 * completion vector), then efa_create_cq / efa_create_qp / efa_modify_qp
 * (limits, udata compatibility, QP types, the modify state table), then
 * what firmware would refuse (ring sizes, resources: ENOMEM).
 */
#include "datapath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/efa-abi.h>
#include <rdma/ib_user_verbs.h>

#define EFA_CAP_RDMA_READ (1u << 0)
#define EFA_CAP_CQ_NOTIFICATIONS (1u << 2)

/* ib_qp_state */
enum { QPS_RESET, QPS_INIT, QPS_RTR, QPS_RTS, QPS_SQD, QPS_SQE, QPS_ERR };
/* ib_qp_attr_mask */
enum {
	QP_STATE = 1 << 0, QP_CUR_STATE = 1 << 1, QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	QP_PKEY_INDEX = 1 << 4, QP_PORT = 1 << 5, QP_QKEY = 1 << 6,
	QP_RNR_RETRY = 1 << 11, QP_SQ_PSN = 1 << 16, QP_CAP = 1 << 19,
	QP_ATTR_STANDARD_BITS = (1 << 21) - 1,
};
#define QPT_UD 4
#define QPT_DRIVER 0xff

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t page_align(uint64_t n)
{
	return (n + page_size() - 1) & ~(page_size() - 1);
}

static bool is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

static uint32_t roundup_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n && p < (1u << 31))
		p <<= 1;
	return p;
}

/* ------------------------------------------------------------ regions */

static void *raw_mmap(int fd, uint64_t off, uint64_t len, int prot)
{
	long p = syscall(SYS_mmap, NULL, (size_t)len, prot, MAP_SHARED, fd, (off_t)off);

	return (p == -1) ? NULL : (void *)p;
}

static int region_add(struct efasim_uverbs *uv, uint64_t off, uint64_t len)
{
	struct efasim_region *r = realloc(uv->regions, (uv->nregions + 1) * sizeof(*r));

	if (!r)
		return -ENOMEM;
	uv->regions = r;
	r[uv->nregions].off = off;
	r[uv->nregions].len = len;
	uv->nregions++;
	return 0;
}

static void region_del(struct efasim_uverbs *uv, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < uv->nregions; i++) {
		if (uv->regions[i].off != off)
			continue;
		uv->regions[i] = uv->regions[--uv->nregions];
		return;
	}
}

/* A zeroed range of the memfd, mapped for the engine in *map. */
static int region_alloc(struct efasim_wcall *c, uint64_t len, uint64_t *off, void **map)
{
	struct efasim_uverbs *uv = c->uv;
	uint64_t o;
	int rc;

	len = page_align(len);
	if (!uv->cursor) {
		if (syscall(SYS_fallocate, c->fd, 0, (off_t)0, (off_t)page_size()))
			return -ENOMEM;
		uv->cursor = raw_mmap(c->fd, 0, page_size(), PROT_READ | PROT_WRITE);
		if (!uv->cursor)
			return -ENOMEM;
	}
	o = __atomic_load_n(uv->cursor, __ATOMIC_ACQUIRE);
	for (;;) {
		uint64_t start = o < page_size() ? page_size() : o;

		if (__atomic_compare_exchange_n(uv->cursor, &o, start + len, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			o = start;
			break;
		}
	}
	/* fallocate only grows the file, even when a fork child races us */
	if (syscall(SYS_fallocate, c->fd, 0, (off_t)o, (off_t)len))
		return -ENOMEM;
	*map = raw_mmap(c->fd, o, len, PROT_READ | PROT_WRITE);
	if (!*map)
		return -ENOMEM;
	rc = region_add(uv, o, len);
	if (rc) {
		munmap(*map, len);
		return rc;
	}
	*off = o;
	return 0;
}

/* punch: give the pages back (a stale mapping of the application then
 * reads zeros); never in a fork child, whose parent still uses them. */
static void region_free_p(struct efasim_uverbs *uv, uint64_t off, uint64_t len, void *map,
			  bool punch)
{
	if (!len)
		return;
	if (map) {
		if (punch)
			madvise(map, len, MADV_REMOVE);
		munmap(map, len);
	}
	region_del(uv, off);
}

static void region_free(struct efasim_uverbs *uv, uint64_t off, uint64_t len, void *map)
{
	region_free_p(uv, off, len, map, true);
}

int dp_mmap_check(struct efasim_uverbs *uv, uint64_t off, uint64_t len)
{
	uint32_t i;

	/* rdma_user_mmap_entry_get: an entry at that offset, of that size */
	for (i = 0; i < uv->nregions; i++)
		if (uv->regions[i].off == off && page_align(len) == uv->regions[i].len)
			return 0;
	return -EINVAL;
}

/* ------------------------------------------------------------ lookups */

static void *lookup_dp(struct efasim_uverbs *uv, int64_t handle, uint8_t type, int *err)
{
	struct efasim_obj *o = efasim_obj_lookup(uv, handle, type, err);

	return o ? o->dp : NULL;
}

struct efasim_obj *dp_mr_lookup(struct efasim_uverbs *uv, uint32_t key, uint32_t pd)
{
	uint32_t i;

	for (i = 0; i < uv->nobjs; i++) {
		struct efasim_obj *o = &uv->objs[i];

		if (o->type == EFASIM_OBJ_MR && (o->key & EFA_LKEY_MASK) == (key & EFA_LKEY_MASK) &&
		    o->pd == pd)
			return o;
	}
	return NULL;
}

uint16_t dp_ah_number(struct efasim_uverbs *uv, uint32_t pd, const uint8_t gid[FAB_GID_LEN])
{
	uint32_t i;

	for (i = 0; i < uv->nobjs; i++) {
		struct efasim_obj *o = &uv->objs[i];
		struct dp_ah *ah = o->dp;

		if (o->type == EFASIM_OBJ_AH && ah->pd == pd && !memcmp(ah->gid, gid, FAB_GID_LEN))
			return ah->ahn;
	}
	return EFA_AH_UNKNOWN;
}

const struct dp_ah *dp_ah_lookup(struct efasim_uverbs *uv, uint16_t ahn, uint32_t pd)
{
	uint32_t i;

	for (i = 0; i < uv->nobjs; i++) {
		struct efasim_obj *o = &uv->objs[i];
		struct dp_ah *ah = o->dp;

		if (o->type == EFASIM_OBJ_AH && ah->ahn == ahn && ah->pd == pd)
			return ah;
	}
	return NULL;
}

/* ------------------------------------------------------------ CQ */

struct cq_args {
	uint64_t user_handle;
	uint32_t cqe, comp_vector, flags;
	int32_t comp_channel;
};

static int cq_udata(struct efasim_wcall *c, struct efa_ibv_create_cq *cmd)
{
	int rc;

	/* efa_create_cq: the command must reach num_sub_cqs; unknown tail zero */
	if (c->uinlen < offsetof(struct efa_ibv_create_cq, num_sub_cqs) + sizeof(cmd->num_sub_cqs))
		return -EINVAL;
	if (c->uinlen > sizeof(*cmd)) {
		rc = efasim_user_is_zero(c->uin + sizeof(*cmd), c->uinlen - sizeof(*cmd));
		if (rc != 1)
			return rc < 0 ? rc : -EINVAL;
	}
	memset(cmd, 0, sizeof(*cmd));
	rc = efasim_copy_in(cmd, c->uin, c->uinlen < sizeof(*cmd) ? c->uinlen : sizeof(*cmd));
	if (rc)
		return rc;
	if (cmd->comp_mask || cmd->reserved_58[0] || cmd->reserved_58[1] || cmd->reserved_58[2] ||
	    cmd->reserved_58[3] || cmd->reserved_58[4])
		return -EINVAL;
	return 0;
}

static int create_cq(struct efasim_wcall *c, const struct cq_args *a, uint32_t *handle,
		     uint32_t *cqe_out)
{
	struct efa_ibv_create_cq_resp uresp = { 0 };
	struct efa_ibv_create_cq ucmd;
	struct efasim_file *channel = NULL;
	struct dp_cq *cq;
	uint32_t h, depth;
	void *ring, *db;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	if (a->comp_vector >= c->dev->num_comp_vectors)
		return -EINVAL;
	if (a->comp_channel >= 0) {
		channel = efasim_fd_get_locked(a->comp_channel);
		if (!channel || channel->kind != EFASIM_CHANNEL)
			return -EBADF;
	}
	if (a->flags)
		return -EOPNOTSUPP;
	if (a->cqe < 1 || a->cqe > c->dev->max_cqe)
		return -EINVAL;
	rc = cq_udata(c, &ucmd);
	if (rc)
		return rc;
	if ((ucmd.cq_entry_size != sizeof(struct efa_cqe)) &&
	    ((ucmd.flags & EFA_CREATE_CQ_WITH_SGID) || ucmd.cq_entry_size != 16))
		return -EINVAL;
	if (ucmd.num_sub_cqs != c->dev->sub_cqs_per_cq || !ucmd.num_sub_cqs)
		return -EINVAL;
	if ((ucmd.flags & EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL) &&
	    !(c->dev->device_caps & EFA_CAP_CQ_NOTIFICATIONS))
		return -EINVAL;
	if (c->uv->ncq >= c->dev->max_cq)
		return -ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	depth = roundup_pow2(a->cqe); /* the device's actual depth */
	cq->uv = c->uv;
	cq->user_handle = a->user_handle;
	cq->depth = depth;
	cq->entry_size = ucmd.cq_entry_size;
	cq->nsub = ucmd.num_sub_cqs;
	cq->ring_len = page_align((uint64_t)cq->entry_size * depth * cq->nsub);
	cq->channel = channel;
	rc = region_alloc(c, cq->ring_len, &cq->ring_off, &ring);
	if (rc)
		goto err_free;
	cq->ring = ring;
	rc = region_alloc(c, page_size(), &cq->db_off, &db);
	if (rc)
		goto err_ring;
	cq->db = db;
	rc = efasim_obj_alloc(c->uv, EFASIM_OBJ_CQ, &h);
	if (rc)
		goto err_db;
	cq->handle = h;
	c->uv->objs[h].dp = cq;
	c->uv->ncq++;
	dp_engine_add_cq(cq);
	uresp.comp_mask = EFA_CREATE_CQ_RESP_DB_OFF;
	uresp.q_mmap_key = cq->ring_off;
	uresp.q_mmap_size = cq->ring_len;
	uresp.cq_idx = (uint16_t)h;
	uresp.db_off = 0;
	uresp.db_mmap_key = cq->db_off;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (rc) {
		efasim_obj_free(c->uv, h); /* releases all of it */
		return rc;
	}
	*handle = h;
	*cqe_out = depth;
	return 0;

err_db:
	region_free(c->uv, cq->db_off, page_size(), db);
err_ring:
	region_free(c->uv, cq->ring_off, cq->ring_len, ring);
err_free:
	free(cq);
	return rc;
}

int dp_cmd_create_cq(struct efasim_wcall *c)
{
	struct ib_uverbs_create_cq_resp resp = { 0 };
	struct ib_uverbs_create_cq cmd;
	struct cq_args a;
	int rc;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	a = (struct cq_args){ cmd.user_handle, cmd.cqe, cmd.comp_vector, 0, cmd.comp_channel };
	rc = create_cq(c, &a, &resp.cq_handle, &resp.cqe);
	if (rc)
		return rc;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_free(c->uv, resp.cq_handle);
	return rc;
}

int dp_cmd_ex_create_cq(struct efasim_wcall *c)
{
	struct ib_uverbs_ex_create_cq_resp resp = { 0 };
	struct ib_uverbs_ex_create_cq cmd;
	struct cq_args a;
	int rc;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	if (cmd.flags & ~(IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN))
		return -EOPNOTSUPP;
	a = (struct cq_args){ cmd.user_handle, cmd.cqe, cmd.comp_vector, cmd.flags, cmd.comp_channel };
	rc = create_cq(c, &a, &resp.base.cq_handle, &resp.base.cqe);
	if (rc)
		return rc;
	resp.response_length = (uint32_t)(c->outlen < sizeof(resp) ? c->outlen : sizeof(resp));
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_free(c->uv, resp.base.cq_handle);
	return rc;
}

int dp_cmd_destroy_cq(struct efasim_wcall *c)
{
	struct ib_uverbs_destroy_cq_resp resp = { 0 };
	struct ib_uverbs_destroy_cq cmd;
	struct efasim_obj *o;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	o = efasim_obj_lookup(c->uv, cmd.cq_handle, EFASIM_OBJ_CQ, &err);
	if (!o)
		return -err;
	if (o->usecnt)
		return -EBUSY;
	resp.comp_events_reported = ((struct dp_cq *)o->dp)->comp_events;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		return rc;
	efasim_obj_free(c->uv, cmd.cq_handle);
	return 0;
}

/* ------------------------------------------------------------ QP */

static int qp_udata(struct efasim_wcall *c, struct efa_ibv_create_qp *cmd)
{
	int rc;

	if (c->uinlen < offsetof(struct efa_ibv_create_qp, driver_qp_type) + sizeof(uint32_t))
		return -EINVAL;
	if (c->uinlen > sizeof(*cmd)) {
		rc = efasim_user_is_zero(c->uin + sizeof(*cmd), c->uinlen - sizeof(*cmd));
		if (rc != 1)
			return rc < 0 ? rc : -EINVAL;
	}
	rc = efasim_copy_in(cmd, c->uin, sizeof(*cmd));
	if (rc)
		return rc;
	return cmd->comp_mask ? -EINVAL : 0;
}

/* efa_qp_validate_cap, efa_qp_validate_attr */
static int qp_caps(const struct efasim_dev *d, const struct ib_uverbs_create_qp *q)
{
	if (q->max_send_wr > d->max_sq_wr || q->max_recv_wr > d->max_rq_wr ||
	    q->max_send_sge > d->max_sq_sge || q->max_recv_sge > d->max_rq_sge ||
	    q->max_inline_data > d->inline_buf_size)
		return -EINVAL;
	if (q->qp_type != QPT_DRIVER && q->qp_type != QPT_UD)
		return -EOPNOTSUPP;
	return 0;
}

/* What firmware would refuse: rings that are not whole power-of-two
 * numbers of descriptors, or larger than the device's LLQ. */
static int qp_rings(const struct efasim_dev *d, const struct ib_uverbs_create_qp *q,
		    const struct efa_ibv_create_qp *u)
{
	uint32_t sq = u->sq_ring_size / sizeof(struct efa_tx_wqe);
	uint32_t rq = u->rq_ring_size / sizeof(struct efa_rx_desc);

	if (u->sq_ring_size % sizeof(struct efa_tx_wqe) || !is_pow2(sq) || sq > 65536 ||
	    u->sq_ring_size > d->max_llq_size || sq < q->max_send_wr)
		return -EINVAL;
	if (u->rq_ring_size % sizeof(struct efa_rx_desc) || (rq && !is_pow2(rq)) || rq > 65536 ||
	    (q->max_recv_wr && !rq))
		return -EINVAL;
	return 0;
}

static void qp_free_regions(struct efasim_uverbs *uv, struct dp_qp *qp, bool own)
{
	region_free_p(uv, qp->sq_off, qp->sq_len, qp->sq, own);
	region_free_p(uv, qp->rq_off, qp->rq_len, qp->rq, own);
	region_free_p(uv, qp->sqdb_off, qp->sq_db ? page_size() : 0, (void *)qp->sq_db, own);
	region_free_p(uv, qp->rqdb_off, qp->rq_db ? page_size() : 0, (void *)qp->rq_db, own);
}

static int qp_regions(struct efasim_wcall *c, struct dp_qp *qp, const struct efa_ibv_create_qp *u)
{
	void *m;
	int rc;

	qp->sq_cnt = u->sq_ring_size / sizeof(struct efa_tx_wqe);
	qp->rq_cnt = u->rq_ring_size / sizeof(struct efa_rx_desc);
	qp->sq_len = page_align(u->sq_ring_size);
	rc = region_alloc(c, qp->sq_len, &qp->sq_off, &m);
	if (rc)
		return rc;
	qp->sq = m;
	rc = region_alloc(c, page_size(), &qp->sqdb_off, &m);
	if (rc)
		return rc;
	qp->sq_db = m;
	if (!qp->rq_cnt)
		return 0;
	qp->rq_len = page_align(u->rq_ring_size);
	rc = region_alloc(c, qp->rq_len, &qp->rq_off, &m);
	if (rc)
		return rc;
	qp->rq = m;
	rc = region_alloc(c, page_size(), &qp->rqdb_off, &m);
	if (rc)
		return rc;
	qp->rq_db = m;
	return 0;
}

static int qp_respond(struct efasim_wcall *c, struct dp_qp *qp)
{
	struct efa_ibv_create_qp_resp uresp = { 0 };
	struct ib_uverbs_create_qp_resp resp = { 0 };
	int rc;

	uresp.sq_db_offset = 0;
	uresp.llq_desc_offset = 0;
	uresp.sq_db_mmap_key = qp->sqdb_off;
	uresp.llq_desc_mmap_key = qp->sq_off;
	if (qp->rq_cnt) {
		uresp.rq_db_offset = 0;
		uresp.rq_mmap_key = qp->rq_off;
		uresp.rq_mmap_size = qp->rq_len;
		uresp.rq_db_mmap_key = qp->rqdb_off;
	}
	uresp.send_sub_cq_idx = 0;
	uresp.recv_sub_cq_idx = 0;
	resp.qp_handle = qp->handle;
	resp.qpn = qp->qpn;
	resp.max_send_wr = qp->max_send_wr;
	resp.max_recv_wr = qp->max_recv_wr;
	resp.max_send_sge = qp->max_send_sge;
	resp.max_recv_sge = qp->max_recv_sge;
	resp.max_inline_data = qp->max_inline;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	return rc ? rc : efasim_w_response(c, &resp, sizeof(resp));
}

int dp_cmd_create_qp(struct efasim_wcall *c)
{
	struct efa_ibv_create_qp ucmd = { 0 };
	struct ib_uverbs_create_qp cmd;
	struct efasim_obj *pd;
	struct dp_cq *scq, *rcq;
	struct dp_qp *qp;
	uint32_t h;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!c->uv->has_ctx)
		return -EINVAL;
	/* create_qp in uverbs_cmd.c: PD, CQs, SRQ */
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, EFASIM_OBJ_PD, &err);
	rcq = lookup_dp(c->uv, cmd.recv_cq_handle, EFASIM_OBJ_CQ, &err);
	scq = lookup_dp(c->uv, cmd.send_cq_handle, EFASIM_OBJ_CQ, &err);
	if (!pd || !rcq || !scq || cmd.is_srq)
		return -EINVAL;
	/* efa_create_qp */
	rc = qp_caps(c->dev, &cmd);
	if (!rc)
		rc = qp_udata(c, &ucmd);
	if (rc)
		return rc;
	if (cmd.qp_type == QPT_DRIVER && ucmd.driver_qp_type != EFA_QP_DRIVER_TYPE_SRD)
		return -EOPNOTSUPP;
	rc = qp_rings(c->dev, &cmd, &ucmd);
	if (rc)
		return rc;
	rc = dp_engine_start_locked();
	if (rc)
		return rc;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->uv = c->uv;
	qp->dev = c->dev;
	qp->pd = cmd.pd_handle;
	qp->type = cmd.qp_type;
	qp->sq_sig_all = cmd.sq_sig_all;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->max_send_wr = cmd.max_send_wr;
	qp->max_recv_wr = cmd.max_recv_wr;
	qp->max_send_sge = cmd.max_send_sge;
	qp->max_recv_sge = cmd.max_recv_sge;
	qp->max_inline = cmd.max_inline_data;
	qp->rnr_retry = 3; /* until MODIFY_QP sets it; 7 retries forever */
	rc = qp_regions(c, qp, &ucmd);
	if (rc)
		goto err_regions;
	rc = fab_qp_create(c->dev->gid, c->dev->max_qp, cmd.qp_type == QPT_UD ? 1 : 2,
			   c->dev->max_msg_sz, &qp->inbox, &qp->qpn);
	if (rc)
		goto err_regions;
	rc = dp_qp_setup(qp);
	if (rc)
		goto err_inbox;
	rc = efasim_obj_alloc(c->uv, EFASIM_OBJ_QP, &h);
	if (rc)
		goto err_setup;
	qp->handle = h;
	c->uv->objs[h].dp = qp;
	c->uv->objs[h].pd = cmd.pd_handle;
	c->uv->objs[cmd.pd_handle].usecnt++;
	c->uv->objs[cmd.send_cq_handle].usecnt++;
	c->uv->objs[cmd.recv_cq_handle].usecnt++;
	dp_engine_add_qp(qp);
	rc = qp_respond(c, qp);
	if (rc) {
		efasim_obj_free(c->uv, h); /* releases all of it */
		return rc;
	}
	efasim_trace("uverbs%d QP %u (%s) created: SQ %u WQEs, RQ %u descriptors", c->dev->index,
		     qp->qpn, qp->type == QPT_UD ? "UD" : "SRD", qp->sq_cnt, qp->rq_cnt);
	return 0;

err_setup:
	dp_qp_teardown(qp);
err_inbox:
	fab_qp_destroy(qp->inbox);
err_regions:
	qp_free_regions(c->uv, qp, true);
	free(qp);
	return rc;
}

/* The modify state table: ib_modify_qp_is_ok for UD, efa's own for SRD
 * (which adds RNR_RETRY to RTR->RTS and has no RESET->ERR). */
static bool modify_ok(bool srd, uint32_t cur, uint32_t next, uint32_t mask)
{
	uint32_t req = 0, opt = 0;
	bool valid = false;

	if ((mask & QP_CUR_STATE) && cur != QPS_RTR && cur != QPS_RTS && cur != QPS_SQD &&
	    cur != QPS_SQE)
		return false;
	if (next == QPS_RESET || (next == QPS_ERR && (cur != QPS_RESET || !srd))) {
		valid = true;
	} else {
		switch (cur) {
		case QPS_RESET:
			valid = next == QPS_INIT;
			req = QP_PKEY_INDEX | QP_PORT | QP_QKEY;
			break;
		case QPS_INIT:
			valid = next == QPS_INIT || next == QPS_RTR;
			opt = next == QPS_INIT ? QP_PKEY_INDEX | QP_PORT | QP_QKEY
					       : QP_PKEY_INDEX | QP_QKEY;
			break;
		case QPS_RTR:
			valid = next == QPS_RTS;
			req = QP_SQ_PSN;
			opt = QP_CUR_STATE | QP_QKEY | (srd ? QP_RNR_RETRY : 0);
			break;
		case QPS_RTS:
			valid = next == QPS_RTS || next == QPS_SQD;
			opt = next == QPS_RTS ? QP_CUR_STATE | QP_QKEY : QP_EN_SQD_ASYNC_NOTIFY;
			break;
		case QPS_SQD:
			valid = next == QPS_RTS || next == QPS_SQD;
			opt = next == QPS_RTS ? QP_CUR_STATE | QP_QKEY : QP_PKEY_INDEX | QP_QKEY;
			break;
		case QPS_SQE:
			valid = next == QPS_RTS;
			opt = QP_CUR_STATE | QP_QKEY;
			break;
		}
	}
	if (!valid || (mask & req) != req)
		return false;
	return !(mask & ~(req | opt | QP_STATE));
}

int dp_cmd_modify_qp(struct efasim_wcall *c)
{
	const uint32_t supp = QP_STATE | QP_CUR_STATE | QP_EN_SQD_ASYNC_NOTIFY | QP_PKEY_INDEX |
			      QP_PORT | QP_QKEY | QP_SQ_PSN | QP_RNR_RETRY;
	struct ib_uverbs_modify_qp cmd;
	uint32_t cur, next, old;
	struct dp_qp *qp;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	qp = lookup_dp(c->uv, cmd.qp_handle, EFASIM_OBJ_QP, &err);
	if (!qp)
		return -EINVAL;
	/* the core */
	if (((cmd.attr_mask & QP_STATE) && cmd.qp_state > QPS_ERR) ||
	    ((cmd.attr_mask & QP_CUR_STATE) && cmd.cur_qp_state > QPS_ERR))
		return -EINVAL;
	if ((cmd.attr_mask & QP_PORT) && cmd.port_num != 1)
		return -EINVAL;
	/* efa_modify_qp */
	if (cmd.attr_mask & ~QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (cmd.attr_mask & ~supp)
		return -EOPNOTSUPP;
	cur = (cmd.attr_mask & QP_CUR_STATE) ? cmd.cur_qp_state : qp->state;
	next = (cmd.attr_mask & QP_STATE) ? cmd.qp_state : cur;
	if (!modify_ok(qp->type == QPT_DRIVER, cur, next, cmd.attr_mask))
		return -EINVAL;
	if ((cmd.attr_mask & QP_PKEY_INDEX) && cmd.pkey_index)
		return -EOPNOTSUPP;
	if (cmd.attr_mask & QP_QKEY)
		qp->qkey = cmd.qkey;
	if (cmd.attr_mask & QP_SQ_PSN)
		qp->sq_psn = cmd.sq_psn;
	if (cmd.attr_mask & QP_RNR_RETRY)
		qp->rnr_retry = cmd.rnr_retry;
	old = qp->state;
	qp->state = next;
	fab_qp_publish(qp->inbox, qp->qkey, qp->state);
	if (old != next)
		dp_qp_state_changed(qp, old);
	return 0;
}

int dp_cmd_query_qp(struct efasim_wcall *c)
{
	const uint32_t supp = QP_STATE | QP_PKEY_INDEX | QP_PORT | QP_QKEY | QP_SQ_PSN | QP_CAP |
			      QP_RNR_RETRY;
	struct ib_uverbs_query_qp_resp resp;
	struct ib_uverbs_query_qp cmd;
	struct dp_qp *qp;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	qp = lookup_dp(c->uv, cmd.qp_handle, EFASIM_OBJ_QP, &err);
	if (!qp)
		return -EINVAL;
	if (cmd.attr_mask & ~supp)
		return -EOPNOTSUPP;
	memset(&resp, 0, sizeof(resp));
	resp.qp_state = (uint8_t)qp->state;
	resp.qkey = qp->qkey;
	resp.sq_psn = qp->sq_psn;
	resp.port_num = 1;
	resp.rnr_retry = (uint8_t)qp->rnr_retry;
	resp.max_send_wr = qp->max_send_wr;
	resp.max_recv_wr = qp->max_recv_wr;
	resp.max_send_sge = qp->max_send_sge;
	resp.max_recv_sge = qp->max_recv_sge;
	resp.max_inline_data = qp->max_inline;
	return efasim_w_response(c, &resp, sizeof(resp));
}

int dp_cmd_destroy_qp(struct efasim_wcall *c)
{
	struct ib_uverbs_destroy_qp_resp resp = { 0 };
	struct ib_uverbs_destroy_qp cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.qp_handle, EFASIM_OBJ_QP, &err))
		return -err;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		return rc;
	efasim_obj_free(c->uv, cmd.qp_handle);
	return 0;
}

/* ------------------------------------------------------------ AH */

int dp_cmd_create_ah(struct efasim_wcall *c)
{
	struct efa_ibv_create_ah_resp uresp = { 0 };
	struct ib_uverbs_create_ah_resp resp = { 0 };
	struct ib_uverbs_create_ah cmd;
	struct efasim_obj *pd;
	struct dp_ah *ah;
	uint32_t h, i;
	uint16_t ahn;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!c->uv->has_ctx || cmd.attr.port_num != 1)
		return -EINVAL;
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, EFASIM_OBJ_PD, &err);
	if (!pd)
		return -EINVAL;
	/* the GID table has one entry */
	if (cmd.attr.is_global && cmd.attr.grh.sgid_index != 0)
		return -EINVAL;
	rc = efasim_udata_in_cleared(c);
	if (rc)
		return rc;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->pd = cmd.pd_handle;
	if (cmd.attr.is_global)
		memcpy(ah->gid, cmd.attr.grh.dgid, FAB_GID_LEN);
	/* the device keeps one AH per (PD, address): the same number again */
	ahn = dp_ah_number(c->uv, ah->pd, ah->gid);
	if (ahn == EFA_AH_UNKNOWN) {
		if (c->uv->nah >= c->dev->max_ah || c->uv->nah >= EFA_AH_UNKNOWN) {
			free(ah);
			return -ENOMEM;
		}
		for (ahn = 0;; ahn++) {
			for (i = 0; i < c->uv->nobjs; i++)
				if (c->uv->objs[i].type == EFASIM_OBJ_AH &&
				    ((struct dp_ah *)c->uv->objs[i].dp)->ahn == ahn)
					break;
			if (i == c->uv->nobjs)
				break;
		}
	}
	ah->ahn = ahn;
	rc = efasim_obj_alloc(c->uv, EFASIM_OBJ_AH, &h);
	if (rc) {
		free(ah);
		return rc;
	}
	c->uv->objs[h].dp = ah;
	c->uv->objs[h].pd = ah->pd;
	c->uv->nah++;
	c->uv->objs[cmd.pd_handle].usecnt++;
	uresp.efa_address_handle = ahn;
	resp.ah_handle = h;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (!rc)
		rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_free(c->uv, h);
	return rc;
}

int dp_cmd_destroy_ah(struct efasim_wcall *c)
{
	struct ib_uverbs_destroy_ah cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.ah_handle, EFASIM_OBJ_AH, &err))
		return -err;
	efasim_obj_free(c->uv, cmd.ah_handle);
	return 0;
}

/* ------------------------------------------------------------ release */

void dp_obj_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	if (!o->dp)
		return;
	if (o->type == EFASIM_OBJ_QP) {
		struct dp_qp *qp = o->dp;

		bool own = qp->pid == getpid();

		dp_engine_del_qp(qp);
		dp_qp_teardown(qp);
		if (own)
			fab_qp_destroy(qp->inbox);
		else
			fab_qp_forget(qp->inbox);
		qp_free_regions(uv, qp, own);
		efasim_obj_put(uv, qp->pd);
		if (qp->scq)
			efasim_obj_put(uv, qp->scq->handle);
		if (qp->rcq)
			efasim_obj_put(uv, qp->rcq->handle);
		free(qp);
	} else if (o->type == EFASIM_OBJ_CQ) {
		struct dp_cq *cq = o->dp;

		bool own = cq->pid == getpid();

		dp_engine_del_cq(cq);
		region_free_p(uv, cq->ring_off, cq->ring_len, cq->ring, own);
		region_free_p(uv, cq->db_off, page_size(), (void *)cq->db, own);
		if (uv->ncq)
			uv->ncq--;
		free(cq);
	} else if (o->type == EFASIM_OBJ_AH) {
		efasim_obj_put(uv, o->pd);
		if (uv->nah)
			uv->nah--;
		free(o->dp);
	}
	o->dp = NULL;
}

/* The kernel destroys what a closed file holds: QPs, then AHs and CQs. */
void dp_file_release(struct efasim_uverbs *uv)
{
	static const uint8_t order[] = { EFASIM_OBJ_QP, EFASIM_OBJ_AH, EFASIM_OBJ_CQ };
	uint32_t i, k;

	for (k = 0; k < sizeof(order); k++)
		for (i = 0; i < uv->nobjs; i++)
			if (uv->objs[i].type == order[k])
				efasim_obj_free(uv, i);
	if (uv->cursor)
		munmap((void *)uv->cursor, page_size());
	uv->cursor = NULL;
	free(uv->regions);
	uv->regions = NULL;
	uv->nregions = 0;
}
