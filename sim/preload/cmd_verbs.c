// SPDX-License-Identifier: MIT
/*
 * The verbs commands, as ib_uverbs and the efa driver answer them
 * (drivers/infiniband/hw/efa/efa_verbs.c): ALLOC_PD, DEALLOC_PD, REG_MR,
 * DEREG_MR, CREATE_CQ (both forms), DESTROY_CQ, CREATE_QP, MODIFY_QP,
 * QUERY_QP, DESTROY_QP, CREATE_AH, DESTROY_AH.
 *
 * Order of checks, errno for errno: the core first (context, handles,
 * completion vector), then efa_create_cq / efa_create_qp / efa_modify_qp
 * (limits, udata compatibility, QP types, the modify state table), then
 * what firmware would refuse (ring sizes, resources: ENOMEM). What passes
 * is made by the objects layer (obj_verbs.c).
 */
#include "commands.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>


/* what ib_check_mr_access knows */
#define ACC_SUPPORTED (((UV_ACCESS_FLUSH_PERSISTENT << 1) - 1) | UV_ACCESS_OPTIONAL_RANGE)

/* ib_qp_attr_mask */
enum {
	QP_STATE = 1 << 0, QP_CUR_STATE = 1 << 1, QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	QP_PKEY_INDEX = 1 << 4, QP_PORT = 1 << 5, QP_QKEY = 1 << 6,
	QP_RNR_RETRY = 1 << 11, QP_SQ_PSN = 1 << 16, QP_CAP = 1 << 19,
	QP_ATTR_STANDARD_BITS = (1 << 21) - 1,
};

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

static void *lookup_priv(struct efasim_uverbs *uv, int64_t handle,
			 const struct efasim_obj_type *type, int *err)
{
	struct efasim_obj *o = efasim_obj_lookup(uv, handle, type, err);

	return o ? o->priv : NULL;
}

/* ------------------------------------------------------------ channels */

int efasim_cmd_create_comp_channel(struct efasim_wcall *c)
{
	struct uv_create_comp_channel_resp resp = { 0 };
	struct uv_create_comp_channel cmd;
	struct efasim_file *f;
	int rc, fd;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!c->uv->has_ctx)
		return -EINVAL;
	fd = efasim_evq_create_locked(false, &f);
	if (fd < 0)
		return fd;
	resp.fd = (uint32_t)fd;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc) {
		efasim_fd_remove_locked(fd);
		efasim_sys_close(fd);
		return rc;
	}
	efasim_trace("uverbs%d completion channel = fd %d", c->dev->index, fd);
	return 0;
}

/* ------------------------------------------------------------ PD */

int efasim_cmd_alloc_pd(struct efasim_wcall *c)
{
	struct efa_uv_alloc_pd_resp uresp = { 0 };
	struct uv_alloc_pd_resp resp = { 0 };
	struct uv_alloc_pd cmd;
	uint32_t h;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (!rc)
		rc = efasim_udata_in_cleared(c);
	if (!rc)
		rc = efasim_obj_alloc(c->uv, &efasim_pd_type, &h);
	if (rc)
		return rc;
	uresp.pdn = (uint16_t)(c->dev->next_pdn++ % (c->dev->max_pd ? c->dev->max_pd : 1));
	resp.pd_handle = h;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (!rc)
		rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_destroy(c->uv, h);
	return rc;
}

int efasim_cmd_dealloc_pd(struct efasim_wcall *c)
{
	struct uv_dealloc_pd cmd;
	struct efasim_obj *pd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, &efasim_pd_type, &err);
	if (!pd)
		return -err;
	if (pd->usecnt)
		return -EBUSY;
	efasim_obj_destroy(c->uv, cmd.pd_handle);
	return 0;
}

/* ------------------------------------------------------------ MR */

int efasim_mr_access(const struct efasim_dev *dev, uint32_t flags)
{
	uint32_t supp = UV_ACCESS_LOCAL_WRITE;

	/* ib_check_mr_access */
	if ((flags & (UV_ACCESS_REMOTE_ATOMIC | UV_ACCESS_REMOTE_WRITE)) &&
	    !(flags & UV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (flags & ~ACC_SUPPORTED)
		return -EINVAL;
	if (flags & (UV_ACCESS_ON_DEMAND | UV_ACCESS_FLUSH_GLOBAL | UV_ACCESS_FLUSH_PERSISTENT))
		return -EOPNOTSUPP;
	/* efa_alloc_mr: what this device supports */
	if (dev->device_caps & EFA_CAP_RDMA_READ)
		supp |= UV_ACCESS_REMOTE_READ;
	if (dev->device_caps & EFA_CAP_RDMA_WRITE)
		supp |= UV_ACCESS_REMOTE_WRITE;
	flags &= ~UV_ACCESS_OPTIONAL_RANGE;
	return (flags & ~supp) ? -EOPNOTSUPP : 0;
}

int efasim_cmd_reg_mr(struct efasim_wcall *c)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct uv_reg_mr_resp resp = { 0 };
	struct uv_reg_mr cmd;
	uint32_t h;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if ((cmd.start & (page - 1)) != (cmd.hca_va & (page - 1)))
		return -EINVAL;
	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_mr_access(c->dev, cmd.access_flags);
	if (rc) {
		efasim_trace("uverbs%d REG_MR: access flags %#x refused by the device (%s)", c->dev->index,
			     cmd.access_flags, efasim_errname(-rc));
		return rc;
	}
	if (!efasim_obj_lookup(c->uv, cmd.pd_handle, &efasim_pd_type, &err))
		return -EINVAL; /* uobj_get_obj_read gives no reason */
	rc = efasim_udata_in_cleared(c);
	if (!rc)
		rc = efasim_mr_create(c->uv, cmd.pd_handle, cmd.start, cmd.length, cmd.hca_va,
				      cmd.access_flags, &h);
	if (rc)
		return rc;
	resp.mr_handle = h;
	resp.lkey = resp.rkey = efasim_mr_of(&c->uv->objs[h])->dev.key;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_destroy(c->uv, h);
	return rc;
}

int efasim_cmd_dereg_mr(struct efasim_wcall *c)
{
	struct uv_dereg_mr cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.mr_handle, &efasim_mr_type, &err))
		return -err;
	efasim_obj_destroy(c->uv, cmd.mr_handle);
	return 0;
}

/* ------------------------------------------------------------ CQ */

struct cq_args {
	uint64_t user_handle;
	uint32_t cqe, comp_vector, flags;
	int32_t comp_channel;
};

static int cq_udata(struct efasim_wcall *c, struct efa_uv_create_cq *cmd)
{
	int rc;

	/* efa_create_cq: the command must reach num_sub_cqs; unknown tail zero */
	if (c->uinlen < offsetof(struct efa_uv_create_cq, num_sub_cqs) + sizeof(cmd->num_sub_cqs))
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
	struct efa_uv_create_cq_resp uresp = { 0 };
	struct efasim_cq_attr attr = { 0 };
	struct efa_uv_create_cq ucmd;
	struct dp_cq *cq;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	if (a->comp_vector >= c->dev->num_comp_vectors)
		return -EINVAL;
	if (a->comp_channel >= 0) {
		attr.channel = efasim_fd_get_locked(a->comp_channel);
		if (!attr.channel || attr.channel->ops->kind != EFASIM_CHANNEL)
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
	    ((ucmd.flags & EFA_UV_CREATE_CQ_WITH_SGID) || ucmd.cq_entry_size != 16))
		return -EINVAL;
	if (ucmd.num_sub_cqs != c->dev->sub_cqs_per_cq || !ucmd.num_sub_cqs)
		return -EINVAL;
	if ((ucmd.flags & EFA_UV_CREATE_CQ_WITH_COMPLETION_CHANNEL) &&
	    !(c->dev->device_caps & EFA_CAP_CQ_NOTIFICATIONS))
		return -EINVAL;
	/* without the flag the driver gives the CQ no event queue: the
	 * channel never hears of it */
	if (!(ucmd.flags & EFA_UV_CREATE_CQ_WITH_COMPLETION_CHANNEL))
		attr.channel = NULL;
	attr.user_handle = a->user_handle;
	attr.depth = roundup_pow2(a->cqe); /* the device's actual depth */
	attr.entry_size = ucmd.cq_entry_size;
	attr.nsub = ucmd.num_sub_cqs;
	rc = efasim_cq_create(c->uv, c->fd, &attr, &cq);
	if (rc)
		return rc;
	uresp.comp_mask = EFA_UV_CREATE_CQ_RESP_DB_OFF;
	uresp.q_mmap_key = cq->ring_off;
	uresp.q_mmap_size = cq->ring_len;
	uresp.cq_idx = (uint16_t)cq->handle;
	uresp.db_off = 0;
	uresp.db_mmap_key = cq->db_off;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (rc) {
		efasim_obj_destroy(c->uv, cq->handle); /* releases all of it */
		return rc;
	}
	*handle = cq->handle;
	*cqe_out = cq->depth;
	return 0;
}

int efasim_cmd_create_cq(struct efasim_wcall *c)
{
	struct uv_create_cq_resp resp = { 0 };
	struct uv_create_cq cmd;
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
		efasim_obj_destroy(c->uv, resp.cq_handle);
	return rc;
}

int efasim_cmd_ex_create_cq(struct efasim_wcall *c)
{
	struct uv_ex_create_cq_resp resp = { 0 };
	struct uv_ex_create_cq cmd;
	struct cq_args a;
	int rc;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	if (cmd.flags & ~(UV_CQ_FLAGS_TIMESTAMP_COMPLETION | UV_CQ_FLAGS_IGNORE_OVERRUN))
		return -EOPNOTSUPP;
	a = (struct cq_args){ cmd.user_handle, cmd.cqe, cmd.comp_vector, cmd.flags, cmd.comp_channel };
	rc = create_cq(c, &a, &resp.base.cq_handle, &resp.base.cqe);
	if (rc)
		return rc;
	resp.response_length = (uint32_t)(c->outlen < sizeof(resp) ? c->outlen : sizeof(resp));
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_destroy(c->uv, resp.base.cq_handle);
	return rc;
}

int efasim_cmd_destroy_cq(struct efasim_wcall *c)
{
	struct uv_destroy_cq_resp resp = { 0 };
	struct uv_destroy_cq cmd;
	struct efasim_obj *o;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	o = efasim_obj_lookup(c->uv, cmd.cq_handle, &efasim_cq_type, &err);
	if (!o)
		return -err;
	if (o->usecnt)
		return -EBUSY;
	resp.comp_events_reported = ((struct dp_cq *)o->priv)->comp_events;
	resp.async_events_reported = ((struct dp_cq *)o->priv)->async_events;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		return rc;
	efasim_obj_destroy(c->uv, cmd.cq_handle);
	return 0;
}

/* ------------------------------------------------------------ QP */

/*
 * efa_create_qp's udata as the efa driver of the model's kernel release
 * reads it (abi.h): before 6.10 the command ends at driver_qp_type and
 * whatever follows must be zero (EINVAL: a flag a 6.8 kernel does not know
 * is refused); 6.10 adds flags, and the bytes after them are reserved
 * (EINVAL unless zero); 6.13 gives the first of those to sl. Then a flag
 * the device lacks (UNSOLICITED_WRITE_RECV without the device cap, or an
 * unknown one) is EOPNOTSUPP.
 */
static int qp_udata(struct efasim_wcall *c, struct efa_uv_create_qp *cmd)
{
	const struct efasim_config *cfg = efasim_config();
	const bool has_flags = efasim_efa_at_least(cfg, 6, 10);
	const bool has_sl = efasim_efa_at_least(cfg, 6, 13);
	const size_t size = has_flags ? sizeof(*cmd) : EFA_UV_CREATE_QP_SIZE_6_1;
	uint16_t supported = 0;
	size_t i;
	int rc;

	if (c->uinlen < offsetof(struct efa_uv_create_qp, driver_qp_type) + sizeof(uint32_t))
		return -EINVAL;
	if (c->uinlen > size) {
		rc = efasim_user_is_zero(c->uin + size, c->uinlen - size);
		if (rc != 1)
			return rc < 0 ? rc : -EINVAL;
	}
	memset(cmd, 0, sizeof(*cmd));
	rc = efasim_copy_in(cmd, c->uin, c->uinlen < size ? c->uinlen : size);
	if (rc)
		return rc;
	if (cmd->comp_mask || (!has_sl && cmd->sl))
		return -EINVAL;
	for (i = 0; i < sizeof(cmd->reserved_98); i++)
		if (cmd->reserved_98[i])
			return -EINVAL;
	if (c->dev->device_caps & EFA_CAP_UNSOLICITED_WRITE_RECV)
		supported |= EFA_UV_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV;
	if (cmd->flags & ~supported) {
		efasim_trace("uverbs%d CREATE_QP: flags %#x, the device supports %#x", c->dev->index,
			     cmd->flags, supported);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* efa_qp_validate_cap, efa_qp_validate_attr */
static int qp_caps(const struct efasim_dev *d, const struct uv_create_qp *q)
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
static int qp_rings(const struct efasim_dev *d, const struct uv_create_qp *q,
		    const struct efa_uv_create_qp *u)
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

static int qp_respond(struct efasim_wcall *c, struct dp_qp *qp)
{
	struct efa_uv_create_qp_resp uresp = { 0 };
	struct uv_create_qp_resp resp = { 0 };
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

int efasim_cmd_create_qp(struct efasim_wcall *c)
{
	struct efa_uv_create_qp ucmd = { 0 };
	struct uv_create_qp cmd;
	struct efasim_qp_attr a;
	struct efasim_obj *pd;
	struct dp_cq *scq, *rcq;
	struct dp_qp *qp;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!c->uv->has_ctx)
		return -EINVAL;
	/* create_qp in uverbs_cmd.c: PD, CQs, SRQ */
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, &efasim_pd_type, &err);
	rcq = lookup_priv(c->uv, cmd.recv_cq_handle, &efasim_cq_type, &err);
	scq = lookup_priv(c->uv, cmd.send_cq_handle, &efasim_cq_type, &err);
	if (!pd || !rcq || !scq || cmd.is_srq)
		return -EINVAL;
	/* efa_create_qp */
	rc = qp_caps(c->dev, &cmd);
	if (!rc)
		rc = qp_udata(c, &ucmd);
	if (rc)
		return rc;
	if (cmd.qp_type == QPT_DRIVER && ucmd.driver_qp_type != EFA_UV_QP_DRIVER_TYPE_SRD)
		return -EOPNOTSUPP;
	rc = qp_rings(c->dev, &cmd, &ucmd);
	if (rc)
		return rc;
	a = (struct efasim_qp_attr){
		.user_handle = cmd.user_handle, .pd = cmd.pd_handle, .send_cq = cmd.send_cq_handle, .recv_cq = cmd.recv_cq_handle,
		.type = cmd.qp_type, .sq_sig_all = cmd.sq_sig_all,
		.max_send_wr = cmd.max_send_wr, .max_recv_wr = cmd.max_recv_wr,
		.max_send_sge = cmd.max_send_sge, .max_recv_sge = cmd.max_recv_sge,
		.max_inline = cmd.max_inline_data,
		.sq_ring_size = ucmd.sq_ring_size, .rq_ring_size = ucmd.rq_ring_size,
		.unsolicited_write_recv = (ucmd.flags & EFA_UV_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV) != 0,
		.sl = ucmd.sl,
	};
	rc = efasim_qp_create(c->uv, c->fd, &a, &qp);
	if (rc)
		return rc;
	rc = qp_respond(c, qp);
	if (rc) {
		efasim_obj_destroy(c->uv, qp->handle); /* releases all of it */
		return rc;
	}
	efasim_trace("uverbs%d QP %u (%s) created: SQ %u WQEs, RQ %u descriptors", c->dev->index,
		     qp->qpn, qp->type == QPT_UD ? "UD" : "SRD", qp->sq_cnt, qp->rq_cnt);
	efasim_hook_qp_cqs(c, qp);
	return 0;
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

int efasim_cmd_modify_qp(struct efasim_wcall *c)
{
	const uint32_t supp = QP_STATE | QP_CUR_STATE | QP_EN_SQD_ASYNC_NOTIFY | QP_PKEY_INDEX |
			      QP_PORT | QP_QKEY | QP_SQ_PSN | QP_RNR_RETRY;
	struct uv_modify_qp cmd;
	uint32_t cur, next;
	struct dp_qp *qp;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	qp = lookup_priv(c->uv, cmd.qp_handle, &efasim_qp_type, &err);
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
	dp_qp_set_state(qp, next);
	efasim_hook_qp(c, qp);
	return 0;
}

int efasim_cmd_query_qp(struct efasim_wcall *c)
{
	const uint32_t supp = QP_STATE | QP_PKEY_INDEX | QP_PORT | QP_QKEY | QP_SQ_PSN | QP_CAP |
			      QP_RNR_RETRY;
	struct uv_query_qp_resp resp;
	struct uv_query_qp cmd;
	struct dp_qp *qp;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	qp = lookup_priv(c->uv, cmd.qp_handle, &efasim_qp_type, &err);
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

int efasim_cmd_destroy_qp(struct efasim_wcall *c)
{
	struct uv_destroy_qp_resp resp = { 0 };
	struct uv_destroy_qp cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.qp_handle, &efasim_qp_type, &err))
		return -err;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		return rc;
	efasim_obj_destroy(c->uv, cmd.qp_handle);
	return 0;
}

/* ------------------------------------------------------------ AH */

int efasim_cmd_create_ah(struct efasim_wcall *c)
{
	static const uint8_t no_gid[FAB_GID_LEN];
	struct efa_uv_create_ah_resp uresp = { 0 };
	struct uv_create_ah_resp resp = { 0 };
	struct uv_create_ah cmd;
	uint32_t h;
	uint16_t ahn;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!c->uv->has_ctx || cmd.attr.port_num != 1)
		return -EINVAL;
	if (!efasim_obj_lookup(c->uv, cmd.pd_handle, &efasim_pd_type, &err))
		return -EINVAL;
	/* the GID table has one entry */
	if (cmd.attr.is_global && cmd.attr.grh.sgid_index != 0)
		return -EINVAL;
	rc = efasim_udata_in_cleared(c);
	if (rc)
		return rc;
	rc = efasim_ah_create(c->uv, cmd.pd_handle, cmd.attr.is_global ? cmd.attr.grh.dgid : no_gid,
			      &h, &ahn);
	if (rc)
		return rc;
	uresp.efa_address_handle = ahn;
	resp.ah_handle = h;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (!rc)
		rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_destroy(c->uv, h);
	return rc;
}

int efasim_cmd_destroy_ah(struct efasim_wcall *c)
{
	struct uv_destroy_ah cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.ah_handle, &efasim_ah_type, &err))
		return -err;
	efasim_obj_destroy(c->uv, cmd.ah_handle);
	return 0;
}
