// SPDX-License-Identifier: MIT
/*
 * The emulated kernel behind /dev/infiniband/uverbsN: the ib_uverbs write()
 * protocol and the efa driver's answers, for the commands libibverbs and
 * libefa need to open a device, query it, and register memory.
 *
 * Emulated write commands: GET_CONTEXT, QUERY_DEVICE, QUERY_PORT, ALLOC_PD,
 * DEALLOC_PD, REG_MR, DEREG_MR, and the extended QUERY_DEVICE. Any other
 * command answers EOPNOTSUPP, what ib_uverbs answers for a command the
 * driver does not implement. Header checks and their errno (EINVAL, ENOSPC,
 * EFAULT) follow ib_uverbs_write and verify_hdr.
 */
#include "datapath.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <rdma/efa-abi.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

/* The efa driver's device_caps bits that gate access flags. */
#define EFA_CAP_RDMA_READ (1u << 0)
#define EFA_CAP_RDMA_WRITE (1u << 5)

/* ib_access_flags past the ones the installed headers name */
#define ACC_FLUSH_GLOBAL (1u << 8)
#define ACC_FLUSH_PERSISTENT (1u << 9)
#define ACC_SUPPORTED (((ACC_FLUSH_PERSISTENT << 1) - 1) | IB_UVERBS_ACCESS_OPTIONAL_RANGE)

#define UVERBS_MAJOR 231
#define UVERBS_BASE_MINOR 192

static uint64_t pinned_pages; /* REG_MR pages, for RLIMIT_MEMLOCK */

/* ---------------------------------------------------------------- files */

int efasim_uverbs_open(struct efasim_dev *dev, int flags)
{
	struct efasim_file *f;
	int fd, rc;

	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return -EEXIST;
	fd = memfd_create("efasim-uverbs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -errno;
	f = efasim_file_new(EFASIM_UVERBS, fd);
	if (!f) {
		efasim_sys_close(fd);
		return -ENOMEM;
	}
	f->uv.dev = dev;
	f->uv.writable = (flags & O_ACCMODE) != O_RDONLY;
	efasim_lock();
	rc = efasim_fd_insert_locked(fd, f);
	efasim_unlock();
	if (rc) {
		free(f);
		efasim_sys_close(fd);
		return rc;
	}
	efasim_trace("open /dev/infiniband/uverbs%d (%s, %s) = fd %d", dev->index,
		     dev->ibdev, dev->pci, fd);
	return fd;
}

void efasim_uverbs_stat(const struct efasim_dev *dev, struct stat *st)
{
	const struct efasim_config *c = efasim_config();

	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(0, 5); /* devtmpfs */
	st->st_ino = 0x3000 + (ino_t)dev->index;
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	st->st_rdev = makedev(UVERBS_MAJOR, UVERBS_BASE_MINOR + dev->index);
	st->st_blksize = 4096;
	if (c) {
		st->st_atim = c->loaded;
		st->st_mtim = c->loaded;
		st->st_ctim = c->loaded;
	}
}

static void obj_release(struct efasim_uverbs *uv, struct efasim_obj *o)
{
	dp_obj_release(uv, o);
	if (o->type == EFASIM_OBJ_MR) {
		if (o->map)
			munmap(o->map, o->map_len);
		efasim_obj_put(uv, o->pd);
		pinned_pages -= o->pinned;
		if (o->dmabuf)
			efasim_file_put_locked(o->dmabuf);
	}
	memset(o, 0, sizeof(*o));
}

void efasim_uverbs_release(struct efasim_uverbs *uv)
{
	uint32_t i;

	/* The kernel destroys what a closed file still holds: QPs, AHs, CQs,
	 * then MRs. */
	dp_file_release(uv);
	for (i = 0; i < uv->nobjs; i++)
		if (uv->objs[i].type == EFASIM_OBJ_MR)
			obj_release(uv, &uv->objs[i]);
	free(uv->objs);
	uv->objs = NULL;
	uv->nobjs = 0;
	if (uv->has_ctx)
		efasim_trace("uverbs%d context closed", uv->dev->index);
}

/* ---------------------------------------------------------------- idr */

int efasim_obj_alloc(struct efasim_uverbs *uv, uint8_t type, uint32_t *handle)
{
	struct efasim_obj *objs;
	uint32_t i, n;

	for (i = 0; i < uv->nobjs; i++)
		if (uv->objs[i].type == EFASIM_OBJ_FREE)
			goto found;
	n = uv->nobjs ? uv->nobjs * 2 : 8;
	objs = realloc(uv->objs, n * sizeof(*objs));
	if (!objs)
		return -ENOMEM;
	memset(objs + uv->nobjs, 0, (n - uv->nobjs) * sizeof(*objs));
	uv->objs = objs;
	i = uv->nobjs;
	uv->nobjs = n;
found:
	memset(&uv->objs[i], 0, sizeof(uv->objs[i]));
	uv->objs[i].type = type;
	*handle = i;
	return 0;
}

struct efasim_obj *efasim_obj_lookup(struct efasim_uverbs *uv, int64_t handle,
				     uint8_t type, int *err)
{
	struct efasim_obj *o;

	if (handle < 0) {
		*err = EINVAL;
		return NULL;
	}
	if ((uint64_t)handle >= uv->nobjs ||
	    (o = &uv->objs[handle])->type == EFASIM_OBJ_FREE || o->type == EFASIM_OBJ_PENDING) {
		*err = ENOENT;
		return NULL;
	}
	if (o->type != type) {
		*err = EINVAL;
		return NULL;
	}
	return o;
}

void efasim_obj_free(struct efasim_uverbs *uv, uint32_t handle)
{
	if (handle < uv->nobjs)
		obj_release(uv, &uv->objs[handle]);
}

void efasim_obj_put(struct efasim_uverbs *uv, uint32_t handle)
{
	if (handle < uv->nobjs && uv->objs[handle].usecnt)
		uv->objs[handle].usecnt--;
}

int efasim_mr_access(const struct efasim_dev *dev, uint32_t flags)
{
	uint32_t supp = IB_UVERBS_ACCESS_LOCAL_WRITE;

	/* ib_check_mr_access */
	if ((flags & (IB_UVERBS_ACCESS_REMOTE_ATOMIC | IB_UVERBS_ACCESS_REMOTE_WRITE)) &&
	    !(flags & IB_UVERBS_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (flags & ~ACC_SUPPORTED)
		return -EINVAL;
	if (flags & (IB_UVERBS_ACCESS_ON_DEMAND | ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT))
		return -EOPNOTSUPP;
	/* efa_alloc_mr: what this device supports */
	if (dev->device_caps & EFA_CAP_RDMA_READ)
		supp |= IB_UVERBS_ACCESS_REMOTE_READ;
	if (dev->device_caps & EFA_CAP_RDMA_WRITE)
		supp |= IB_UVERBS_ACCESS_REMOTE_WRITE;
	flags &= ~IB_UVERBS_ACCESS_OPTIONAL_RANGE;
	return (flags & ~supp) ? -EOPNOTSUPP : 0;
}

/* ---------------------------------------------------------------- write */

struct wmethod {
	const char *name;
	uint16_t req_size, resp_size;
	bool is_ex, has_resp, has_udata;
	int (*handler)(struct efasim_wcall *c);
};

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* uverbs_request: the user's struct may be shorter (zero-extended) or
 * longer (the excess must be zero). */
int efasim_w_request(struct efasim_wcall *c, void *req, size_t len)
{
	int rc = efasim_copy_in(req, c->in, min_sz(c->inlen, len));

	if (rc)
		return rc;
	if (c->inlen < len) {
		memset((char *)req + c->inlen, 0, len - c->inlen);
	} else if (c->inlen > len) {
		rc = efasim_user_is_zero(c->in + len, c->inlen - len);
		if (rc != 1)
			return rc < 0 ? rc : -EOPNOTSUPP;
	}
	return 0;
}

/* uverbs_response: copy what fits, zero the rest the user provided. */
int efasim_w_response(struct efasim_wcall *c, const void *resp, size_t len)
{
	int rc = efasim_copy_out(c->out, resp, min_sz(c->outlen, len));

	if (rc)
		return rc;
	if (len < c->outlen)
		return efasim_clear_out(c->out + len, c->outlen - len);
	return 0;
}

int efasim_udata_out(struct efasim_wcall *c, const void *resp, size_t len)
{
	return efasim_copy_out(c->uout, resp, min_sz(len, c->uoutlen));
}

/* The efa driver refuses udata input it does not know (non-zero bytes). */
int efasim_udata_in_cleared(struct efasim_wcall *c)
{
	int rc;

	if (!c->uinlen)
		return 0;
	rc = efasim_user_is_zero(c->uin, c->uinlen);
	return rc == 1 ? 0 : rc < 0 ? rc : -EINVAL;
}

static int cmd_get_context(struct efasim_wcall *c)
{
	struct efa_ibv_alloc_ucontext_resp uresp = { 0 };
	struct efa_ibv_alloc_ucontext_cmd ucmd = { 0 };
	struct ib_uverbs_get_context_resp resp = { 0 };
	struct ib_uverbs_get_context cmd;
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
	if ((c->dev->max_tx_batch && !(ucmd.comp_mask & EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH)) ||
	    (c->dev->min_sq_wr && !(ucmd.comp_mask & EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR)))
		return -EOPNOTSUPP;
	efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	resp.async_fd = (uint32_t)efd;
	resp.num_comp_vectors = c->dev->num_comp_vectors;
	uresp.cmds_supp_udata_mask = EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE |
				     EFA_USER_CMDS_SUPP_UDATA_CREATE_AH;
	uresp.sub_cqs_per_cq = (uint16_t)c->dev->sub_cqs_per_cq;
	uresp.inline_buf_size = (uint16_t)c->dev->inline_buf_size;
	uresp.max_llq_size = c->dev->max_llq_size;
	uresp.max_tx_batch = (uint16_t)c->dev->max_tx_batch;
	uresp.min_sq_wr = (uint16_t)c->dev->min_sq_wr;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (!rc)
		rc = efasim_udata_out(c, &uresp, sizeof(uresp));
	if (rc) {
		efasim_sys_close(efd);
		return rc;
	}
	c->uv->has_ctx = 1;
	return 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* copy_query_dev_fields over what efa_query_device reports */
static void fill_device(const struct efasim_dev *d, struct ib_uverbs_query_device_resp *r)
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

static int cmd_query_device(struct efasim_wcall *c)
{
	struct ib_uverbs_query_device_resp resp;
	struct ib_uverbs_query_device cmd;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	fill_device(c->dev, &resp);
	return efasim_w_response(c, &resp, sizeof(resp));
}

static int cmd_ex_query_device(struct efasim_wcall *c)
{
	struct efa_ibv_ex_query_device_resp uresp = { 0 };
	struct ib_uverbs_ex_query_device_resp resp;
	struct ib_uverbs_ex_query_device cmd;
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

static int cmd_query_port(struct efasim_wcall *c)
{
	struct ib_uverbs_query_port_resp resp = { 0 };
	struct ib_uverbs_query_port cmd;
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

static int cmd_alloc_pd(struct efasim_wcall *c)
{
	struct efa_ibv_alloc_pd_resp uresp = { 0 };
	struct ib_uverbs_alloc_pd_resp resp = { 0 };
	struct ib_uverbs_alloc_pd cmd;
	uint32_t h;
	int rc;

	if (!c->uv->has_ctx)
		return -EINVAL;
	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (!rc)
		rc = efasim_udata_in_cleared(c);
	if (!rc)
		rc = efasim_obj_alloc(c->uv, EFASIM_OBJ_PD, &h);
	if (rc)
		return rc;
	uresp.pdn = (uint16_t)(c->dev->next_pdn++ % (c->dev->max_pd ? c->dev->max_pd : 1));
	resp.pd_handle = h;
	rc = c->uoutlen ? efasim_udata_out(c, &uresp, sizeof(uresp)) : 0;
	if (!rc)
		rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_free(c->uv, h);
	return rc;
}

static int cmd_dealloc_pd(struct efasim_wcall *c)
{
	struct ib_uverbs_dealloc_pd cmd;
	struct efasim_obj *pd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, EFASIM_OBJ_PD, &err);
	if (!pd)
		return -err;
	if (pd->usecnt)
		return -EBUSY;
	efasim_obj_free(c->uv, cmd.pd_handle);
	return 0;
}

/* ib_umem_get's checks: overflow, no pages, RLIMIT_MEMLOCK, then pinning
 * (every page must be mapped). */
static int umem_check(uint64_t start, uint64_t len, uint64_t *pages)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), end = start + len;
	struct rlimit rl;

	if (end < start || ((end + page - 1) & ~(page - 1)) < end)
		return -EINVAL;
	*pages = (((end + page - 1) & ~(page - 1)) - (start & ~(page - 1))) / page;
	if (!*pages)
		return -EINVAL;
	if (geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		if (rl.rlim_cur == 0)
			return -EPERM;
		if (pinned_pages + *pages > rl.rlim_cur / page)
			return -ENOMEM;
	}
	return efasim_user_mapped(start, len);
}

static int cmd_reg_mr(struct efasim_wcall *c)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pages;
	struct ib_uverbs_reg_mr_resp resp = { 0 };
	struct ib_uverbs_reg_mr cmd;
	struct efasim_obj *pd;
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
	if (rc)
		return rc;
	pd = efasim_obj_lookup(c->uv, cmd.pd_handle, EFASIM_OBJ_PD, &err);
	if (!pd)
		return -EINVAL; /* uobj_get_obj_read gives no reason */
	rc = efasim_udata_in_cleared(c);
	if (!rc)
		rc = umem_check(cmd.start, cmd.length, &pages);
	if (!rc)
		rc = efasim_obj_alloc(c->uv, EFASIM_OBJ_MR, &h);
	if (rc)
		return rc;
	pd = &c->uv->objs[cmd.pd_handle]; /* the array may have moved */
	pd->usecnt++;
	c->uv->objs[h].pd = cmd.pd_handle;
	c->uv->objs[h].key = c->dev->next_key++;
	c->uv->objs[h].pinned = pages;
	c->uv->objs[h].access = cmd.access_flags;
	c->uv->objs[h].iova = cmd.hca_va;
	c->uv->objs[h].length = cmd.length;
	c->uv->objs[h].start = cmd.start;
	pinned_pages += pages;
	resp.mr_handle = h;
	resp.lkey = resp.rkey = c->uv->objs[h].key;
	rc = efasim_w_response(c, &resp, sizeof(resp));
	if (rc)
		efasim_obj_free(c->uv, h);
	return rc;
}

static int cmd_dereg_mr(struct efasim_wcall *c)
{
	struct ib_uverbs_dereg_mr cmd;
	int rc, err;

	rc = efasim_w_request(c, &cmd, sizeof(cmd));
	if (rc)
		return rc;
	if (!efasim_obj_lookup(c->uv, cmd.mr_handle, EFASIM_OBJ_MR, &err))
		return -err;
	efasim_obj_free(c->uv, cmd.mr_handle);
	return 0;
}

#define CMD(n, req, resp, has_resp, udata, fn) \
	{ n, sizeof(req), resp, false, has_resp, udata, fn }

static const struct wmethod write_methods[] = {
	[IB_USER_VERBS_CMD_GET_CONTEXT] = CMD("GET_CONTEXT", struct ib_uverbs_get_context,
		sizeof(struct ib_uverbs_get_context_resp), true, true, cmd_get_context),
	[IB_USER_VERBS_CMD_QUERY_DEVICE] = CMD("QUERY_DEVICE", struct ib_uverbs_query_device,
		sizeof(struct ib_uverbs_query_device_resp), true, false, cmd_query_device),
	[IB_USER_VERBS_CMD_QUERY_PORT] = CMD("QUERY_PORT", struct ib_uverbs_query_port,
		sizeof(struct ib_uverbs_query_port_resp), true, false, cmd_query_port),
	[IB_USER_VERBS_CMD_ALLOC_PD] = CMD("ALLOC_PD", struct ib_uverbs_alloc_pd,
		sizeof(struct ib_uverbs_alloc_pd_resp), true, true, cmd_alloc_pd),
	[IB_USER_VERBS_CMD_DEALLOC_PD] = CMD("DEALLOC_PD", struct ib_uverbs_dealloc_pd,
		0, false, false, cmd_dealloc_pd),
	[IB_USER_VERBS_CMD_REG_MR] = CMD("REG_MR", struct ib_uverbs_reg_mr,
		sizeof(struct ib_uverbs_reg_mr_resp), true, true, cmd_reg_mr),
	[IB_USER_VERBS_CMD_DEREG_MR] = CMD("DEREG_MR", struct ib_uverbs_dereg_mr,
		0, false, false, cmd_dereg_mr),
	[IB_USER_VERBS_CMD_CREATE_CQ] = CMD("CREATE_CQ", struct ib_uverbs_create_cq,
		sizeof(struct ib_uverbs_create_cq_resp), true, true, dp_cmd_create_cq),
	[IB_USER_VERBS_CMD_DESTROY_CQ] = CMD("DESTROY_CQ", struct ib_uverbs_destroy_cq,
		sizeof(struct ib_uverbs_destroy_cq_resp), true, false, dp_cmd_destroy_cq),
	[IB_USER_VERBS_CMD_CREATE_QP] = CMD("CREATE_QP", struct ib_uverbs_create_qp,
		sizeof(struct ib_uverbs_create_qp_resp), true, true, dp_cmd_create_qp),
	[IB_USER_VERBS_CMD_MODIFY_QP] = CMD("MODIFY_QP", struct ib_uverbs_modify_qp,
		0, false, false, dp_cmd_modify_qp),
	[IB_USER_VERBS_CMD_QUERY_QP] = CMD("QUERY_QP", struct ib_uverbs_query_qp,
		sizeof(struct ib_uverbs_query_qp_resp), true, false, dp_cmd_query_qp),
	[IB_USER_VERBS_CMD_DESTROY_QP] = CMD("DESTROY_QP", struct ib_uverbs_destroy_qp,
		sizeof(struct ib_uverbs_destroy_qp_resp), true, false, dp_cmd_destroy_qp),
	[IB_USER_VERBS_CMD_CREATE_AH] = CMD("CREATE_AH", struct ib_uverbs_create_ah,
		sizeof(struct ib_uverbs_create_ah_resp), true, true, dp_cmd_create_ah),
	[IB_USER_VERBS_CMD_DESTROY_AH] = CMD("DESTROY_AH", struct ib_uverbs_destroy_ah,
		0, false, false, dp_cmd_destroy_ah),
};

static const struct wmethod ex_create_cq = {
	"EX_CREATE_CQ", offsetof(struct ib_uverbs_ex_create_cq, flags) + sizeof(uint32_t),
	offsetof(struct ib_uverbs_ex_create_cq_resp, response_length) + sizeof(uint32_t),
	true, true, true, dp_cmd_ex_create_cq,
};

/* The extended QUERY_DEVICE rejects buffers without response_length. */
static const struct wmethod ex_query_device = {
	"EX_QUERY_DEVICE", sizeof(struct ib_uverbs_ex_query_device),
	offsetof(struct ib_uverbs_ex_query_device_resp, response_length) + sizeof(uint32_t),
	true, true, false, cmd_ex_query_device,
};

/* Commands the driver does not implement: header checked as non-extended,
 * then EOPNOTSUPP (ib_uverbs_notsupp). */
static const struct wmethod notsupp = { "not emulated", 0, 0, false, false, false, NULL };

#define NUM_WRITE 64 /* the highest legacy command is below this */

static const struct wmethod *lookup_method(uint32_t command, int *err)
{
	uint32_t idx = command & IB_USER_VERBS_CMD_COMMAND_MASK;

	if (command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK)) {
		*err = -EINVAL;
		return NULL;
	}
	if (command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		if (idx == IB_USER_VERBS_EX_CMD_QUERY_DEVICE)
			return &ex_query_device;
		if (idx == IB_USER_VERBS_EX_CMD_CREATE_CQ)
			return &ex_create_cq;
		if (idx >= NUM_WRITE) {
			*err = -EOPNOTSUPP;
			return NULL;
		}
		return &notsupp;
	}
	if (idx >= NUM_WRITE) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	if (idx < sizeof(write_methods) / sizeof(write_methods[0]) && write_methods[idx].handler)
		return &write_methods[idx];
	return &notsupp;
}

static int verify_hdr(const struct ib_uverbs_cmd_hdr *h, const struct ib_uverbs_ex_cmd_hdr *ex,
		      size_t count, const struct wmethod *m)
{
	if (m->is_ex) {
		count -= sizeof(*h) + sizeof(*ex);
		if (((size_t)h->in_words + ex->provider_in_words) * 8 != count)
			return -EINVAL;
		if ((size_t)h->in_words * 8 < m->req_size)
			return -ENOSPC;
		if (ex->cmd_hdr_reserved)
			return -EINVAL;
		if (ex->response) {
			if (!h->out_words && !ex->provider_out_words)
				return -EINVAL;
			if ((size_t)h->out_words * 8 < m->resp_size)
				return -ENOSPC;
		} else if (h->out_words || ex->provider_out_words) {
			return -EINVAL;
		}
		return 0;
	}
	if ((size_t)h->in_words * 4 != count)
		return -EINVAL;
	if (count < m->req_size + sizeof(*h))
		return -ENOSPC;
	if ((size_t)h->out_words * 4 < m->resp_size)
		return -ENOSPC;
	return 0;
}

static int split_legacy(struct efasim_wcall *c, const struct wmethod *m,
			const struct ib_uverbs_cmd_hdr *h, uint64_t buf)
{
	size_t in_len = (size_t)h->in_words * 4 - sizeof(*h), out_len = (size_t)h->out_words * 4;
	uint64_t response = 0;
	int rc;

	buf += sizeof(*h);
	if (m->has_udata) {
		c->uinlen = in_len - m->req_size;
		in_len = m->req_size;
		c->uin = c->uinlen ? buf + in_len : 0;
	}
	if (m->has_resp) {
		rc = efasim_copy_in(&response, buf, sizeof(response));
		if (rc)
			return rc;
		if (m->has_udata) {
			c->uoutlen = out_len - m->resp_size;
			out_len = m->resp_size;
			c->uout = c->uoutlen ? response + out_len : 0;
		}
	}
	c->in = in_len ? buf : 0;
	c->inlen = in_len;
	c->out = out_len ? response : 0;
	c->outlen = out_len;
	return 0;
}

static void split_ex(struct efasim_wcall *c, const struct ib_uverbs_cmd_hdr *h,
		     const struct ib_uverbs_ex_cmd_hdr *ex, uint64_t buf)
{
	buf += sizeof(*h) + sizeof(*ex);
	c->in = buf;
	c->inlen = (size_t)h->in_words * 8;
	c->out = ex->response;
	c->outlen = (size_t)h->out_words * 8;
	c->uin = buf + c->inlen;
	c->uinlen = (size_t)ex->provider_in_words * 8;
	c->uout = ex->response + c->outlen;
	c->uoutlen = (size_t)ex->provider_out_words * 8;
}

static ssize_t do_write(struct efasim_file *f, int fd, uint64_t buf, size_t count,
			const char **name, uint32_t *command)
{
	struct ib_uverbs_ex_cmd_hdr ex = { 0 };
	struct ib_uverbs_cmd_hdr h;
	struct efasim_wcall c = { .uv = &f->uv, .dev = f->uv.dev, .fd = fd };
	const struct wmethod *m;
	int rc = 0;

	if (!f->uv.writable)
		return -EBADF;
	if (count < sizeof(h))
		return -EINVAL;
	if (efasim_copy_in(&h, buf, sizeof(h)))
		return -EFAULT;
	*command = h.command;
	m = lookup_method(h.command, &rc);
	if (!m)
		return rc;
	*name = m->name;
	if (m->is_ex) {
		if (count < sizeof(h) + sizeof(ex))
			return -EINVAL;
		if (efasim_copy_in(&ex, buf + sizeof(h), sizeof(ex)))
			return -EFAULT;
	}
	rc = verify_hdr(&h, &ex, count, m);
	if (rc)
		return rc;
	if (!m->handler)
		return -EOPNOTSUPP;
	if (m->is_ex)
		split_ex(&c, &h, &ex, buf);
	else if ((rc = split_legacy(&c, m, &h, buf)))
		return rc;
	rc = m->handler(&c);
	return rc ? rc : (ssize_t)count;
}

ssize_t efasim_uverbs_write_locked(struct efasim_file *f, int fd, const void *buf, size_t count)
{
	const char *name = "malformed";
	uint32_t command = 0;
	ssize_t r;

	f->uv.self = f;
	r = do_write(f, fd, (uintptr_t)buf, count, &name, &command);

	efasim_trace("uverbs%d write %s (command %#x, %zu bytes) -> %s", f->uv.dev->index, name,
		     command, count, r < 0 ? efasim_errname((int)-r) : "ok");
	return r;
}
