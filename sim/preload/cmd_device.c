// SPDX-License-Identifier: MIT
/*
 * The device commands: GET_CONTEXT (the efa driver's udata and its
 * handshake, the async event file), QUERY_DEVICE and its
 * extended form (the core's fields and the efa udata), QUERY_PORT, as
 * efa_query_device and efa_query_port answer them from the model.
 */
#include "commands.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>


static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

int efasim_cmd_get_context(struct efasim_wcall *c)
{
	struct efa_uv_alloc_ucontext_resp uresp = { 0 };
	struct efa_uv_alloc_ucontext_cmd ucmd = { 0 };
	struct uv_get_context_resp resp = { 0 };
	struct uv_get_context cmd;
	struct efasim_file *async;
	int rc, efd;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_copy_in(&ucmd, c->uin, min_sz(sizeof(ucmd), c->uinlen));
	if (rc)
		return rc;
	/* efa_user_comp_handshake: userspace must acknowledge these fields */
	if ((c->dev->max_tx_batch && !(ucmd.comp_mask & EFA_UV_UCONTEXT_CMD_TX_BATCH)) ||
	    (c->dev->min_sq_wr && !(ucmd.comp_mask & EFA_UV_UCONTEXT_CMD_MIN_SQ_WR)))
		return -EOPNOTSUPP;
	/* the async event file (IBV_EVENT_CQ_ERR ...), held by the context */
	efd = efasim_evq_create_locked(true, &async);
	if (efd < 0)
		return efd;
	resp.async_fd = (uint32_t)efd;
	resp.num_comp_vectors = c->dev->num_comp_vectors;
	uresp.cmds_supp_udata_mask = EFA_UV_CMDS_SUPP_UDATA_QUERY_DEVICE |
				     EFA_UV_CMDS_SUPP_UDATA_CREATE_AH;
	uresp.sub_cqs_per_cq = (uint16_t)c->dev->sub_cqs_per_cq;
	uresp.inline_buf_size = (uint16_t)c->dev->inline_buf_size;
	uresp.max_llq_size = c->dev->max_llq_size;
	uresp.max_tx_batch = (uint16_t)c->dev->max_tx_batch;
	uresp.min_sq_wr = (uint16_t)c->dev->min_sq_wr;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (!rc)
		rc = efasim_udata_out(c, &uresp, sizeof(uresp));
	if (rc) {
		efasim_fd_remove_locked(efd);
		efasim_sys_close(efd);
		return rc;
	}
	efasim_file_get(async);
	c->uv->async = async;
	c->uv->has_ctx = 1;
	return 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* copy_query_dev_fields over what efa_query_device reports */
static void fill_device(const struct efasim_dev *d, struct uv_query_device_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->fw_ver = d->fw_ver;
	r->node_guid = htobe64(d->node_guid);
	r->sys_image_guid = htobe64(d->node_guid);
	r->max_mr_size = d->max_mr_size;
	r->page_size_cap = d->page_size_cap;
	r->vendor_id = d->vendor_id;
	r->vendor_part_id = d->vendor_part_id;
	r->hw_ver = d->hw_ver;
	r->max_qp = d->max_qp;
	r->max_qp_wr = min_u32(d->max_sq_wr, d->max_rq_wr);
	r->max_sge = min_u32(d->max_sq_sge, d->max_rq_sge);
	r->max_sge_rd = d->max_wr_rdma_sge;
	r->max_cq = d->max_cq;
	r->max_cqe = d->max_cqe;
	r->max_mr = d->max_mr;
	r->max_pd = d->max_pd;
	r->max_ah = d->max_ah;
	r->max_pkeys = 1;
	r->phys_port_cnt = 1;
}

int efasim_cmd_query_device(struct efasim_wcall *c)
{
	struct uv_query_device_resp resp;
	struct uv_query_device cmd;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	fill_device(c->dev, &resp);
	return efasim_w_response(c, &resp, sizeof(resp));
}

int efasim_cmd_ex_query_device(struct efasim_wcall *c)
{
	struct efa_uv_ex_query_device_resp uresp = { 0 };
	struct uv_ex_query_device_resp resp;
	struct uv_ex_query_device cmd;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (cmd.comp_mask || cmd.reserved)
		return -EINVAL;
	rc = efasim_udata_in_cleared(c);
	if (rc)
		return rc;
	if (c->uoutlen) {
		uresp.max_sq_wr = c->dev->max_sq_wr;
		uresp.max_rq_wr = c->dev->max_rq_wr;
		uresp.max_sq_sge = (uint16_t)c->dev->max_sq_sge;
		uresp.max_rq_sge = (uint16_t)c->dev->max_rq_sge;
		uresp.max_rdma_size = c->dev->max_rdma_size;
		uresp.device_caps = c->dev->device_caps;
		rc = efasim_udata_out(c, &uresp, sizeof(uresp));
		if (rc)
			return rc;
	}
	memset(&resp, 0, sizeof(resp));
	fill_device(c->dev, &resp.base);
	resp.response_length = (uint32_t)min_sz(c->outlen, sizeof(resp));
	return efasim_w_response(c, &resp, sizeof(resp));
}

static uint8_t mtu_enum(uint32_t mtu)
{
	if (mtu >= 4096)
		return 5;
	if (mtu >= 2048)
		return 4;
	if (mtu >= 1024)
		return 3;
	if (mtu >= 512)
		return 2;
	return 1;
}

int efasim_cmd_query_port(struct efasim_wcall *c)
{
	struct uv_query_port_resp resp = { 0 };
	struct uv_query_port cmd;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (cmd.port_num != 1)
		return -EINVAL;
	/* efa_query_port */
	resp.state = 4;      /* IB_PORT_ACTIVE */
	resp.phys_state = 5; /* LinkUp */
	resp.max_mtu = resp.active_mtu = mtu_enum(c->dev->port_mtu);
	resp.gid_tbl_len = 1;
	resp.pkey_tbl_len = 1;
	resp.max_msg_sz = c->dev->max_msg_sz;
	resp.lmc = 1;
	resp.max_vl_num = 1;
	resp.active_width = 2;  /* 4X */
	resp.active_speed = 32; /* EDR */
	resp.link_layer = 0;    /* unspecified */
	return efasim_w_response(c, &resp, sizeof(resp));
}
