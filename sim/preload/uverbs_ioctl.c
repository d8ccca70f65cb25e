// SPDX-License-Identifier: MIT
/*
 * The emulated RDMA_VERBS_IOCTL: header checks as ib_uverbs_ioctl does, then
 * the methods that have no write() form: REG_DMABUF_MR (object MR, method
 * 4) and the efa driver's MR_QUERY (object MR, method 0x1000, from 6.8;
 * efadv_query_mr). Every other method answers EPROTONOSUPPORT, as a kernel
 * without that method does, so that libibverbs falls back to write() (the
 * probe, GET_CONTEXT, QUERY_PORT, PD and MR destroy ...) or to sysfs (GIDs);
 * README.md lists what rdma-core 44's and 56's libibverbs and libefa call.
 *
 * REG_DMABUF_MR follows the kernel's order: attributes in the order given
 * (unknown mandatory: EPROTONOSUPPORT; malformed: EINVAL; the new MR handle
 * is written back at once; the PD handle is looked up: ENOENT/EINVAL), then
 * access flags (EINVAL, or EOPNOTSUPP for what the efa driver lacks, such as
 * REMOTE_WRITE without the RDMA_WRITE cap), then the dma-buf (EBADF for a
 * closed fd, EINVAL for a file that is not a dma-buf or a range past its
 * end), then the exporter's verdict for this (NIC, owner) pair from the
 * model (refused, or a NIC whose firmware blocks peers: EOPNOTSUPP).
 */
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142
#endif

#define MAX_ATTRS ((4096 - sizeof(struct uv_ioctl_hdr)) / sizeof(struct uv_ioctl_attr))

static atomic_ulong efasim_dmabuf_mr_calls;

EFASIM_API unsigned long efasim_reg_dmabuf_mr_calls(void)
{
	return atomic_load(&efasim_dmabuf_mr_calls);
}

/* The attributes of one REG_DMABUF_MR call, once checked. */
struct dm_call {
	struct efasim_uverbs *uv;
	uint64_t uattrs;   /* user address of attrs[0] */
	uint32_t present;  /* bit per attribute id */
	uint32_t handle;   /* the new MR (pending) */
	int64_t pd;
	uint64_t offset, length, iova, access;
	int fd;
	uint16_t access_len;
	uint64_t lkey_ptr, rkey_ptr;
	unsigned int lkey_idx, rkey_idx;
	const char *why;   /* for the trace */
};

static int attr_idr(struct dm_call *c, const struct uv_ioctl_attr *a, unsigned int i)
{
	int err;

	if (a->attr_data || a->len)
		return -EINVAL;
	if (a->attr_id == UV_ATTR_REG_DMABUF_MR_PD_HANDLE) {
		c->pd = a->data_s64;
		return efasim_obj_lookup(c->uv, c->pd, &efasim_pd_type, &err) ? 0 : -err;
	}
	/* the new MR: needs a context; its id goes back to the user now */
	if (!c->uv->has_ctx)
		return -EINVAL;
	err = efasim_obj_alloc(c->uv, &efasim_pending_type, &c->handle);
	if (err)
		return err;
	c->present |= 1u << UV_ATTR_REG_DMABUF_MR_HANDLE;
	uint64_t id = c->handle;
	return efasim_copy_out(c->uattrs + i * sizeof(*a) + offsetof(struct uv_ioctl_attr, data),
			       &id, sizeof(id));
}

/* PTR_IN/PTR_OUT attributes: len within [min, max], reserved clear. */
static int attr_ptr(const struct uv_ioctl_attr *a, uint16_t min, uint16_t max)
{
	if (a->len < min || a->len > max || a->attr_data)
		return -EINVAL;
	return 0;
}

static int attr_one(struct dm_call *c, const struct uv_ioctl_attr *a, unsigned int i)
{
	int rc;

	switch (a->attr_id) {
	case UV_ATTR_REG_DMABUF_MR_HANDLE:
	case UV_ATTR_REG_DMABUF_MR_PD_HANDLE:
		return attr_idr(c, a, i);
	case UV_ATTR_REG_DMABUF_MR_OFFSET:
	case UV_ATTR_REG_DMABUF_MR_LENGTH:
	case UV_ATTR_REG_DMABUF_MR_IOVA:
		rc = attr_ptr(a, 8, 8);
		if (!rc)
			*(a->attr_id == UV_ATTR_REG_DMABUF_MR_OFFSET ? &c->offset :
			  a->attr_id == UV_ATTR_REG_DMABUF_MR_LENGTH ? &c->length : &c->iova) = a->data;
		return rc;
	case UV_ATTR_REG_DMABUF_MR_FD:
		rc = attr_ptr(a, 4, 4);
		c->fd = (int)(uint32_t)a->data;
		return rc;
	case UV_ATTR_REG_DMABUF_MR_ACCESS_FLAGS:
		rc = attr_ptr(a, 4, 8);
		c->access = a->data;
		c->access_len = a->len;
		return rc;
	case UV_ATTR_REG_DMABUF_MR_RESP_LKEY:
	case UV_ATTR_REG_DMABUF_MR_RESP_RKEY:
		rc = attr_ptr(a, 4, 4);
		if (a->attr_id == UV_ATTR_REG_DMABUF_MR_RESP_LKEY) {
			c->lkey_ptr = a->data;
			c->lkey_idx = i;
		} else {
			c->rkey_ptr = a->data;
			c->rkey_idx = i;
		}
		return rc;
	}
	return -EPROTONOSUPPORT; /* unreachable: filtered by the caller */
}

static int process_attrs(struct dm_call *c, const struct uv_ioctl_attr *attrs, unsigned int n)
{
	unsigned int i;
	int rc;

	for (i = 0; i < n; i++) {
		const struct uv_ioctl_attr *a = &attrs[i];

		if (a->attr_id > UV_ATTR_REG_DMABUF_MR_RESP_RKEY) {
			if (a->flags & UV_ATTR_F_MANDATORY)
				return -EPROTONOSUPPORT;
			continue;
		}
		if (c->present & (1u << a->attr_id))
			return -EINVAL;
		rc = attr_one(c, a, i);
		if (rc)
			return rc;
		c->present |= 1u << a->attr_id;
	}
	/* every attribute but the access flags is mandatory */
	if ((c->present | 1u << UV_ATTR_REG_DMABUF_MR_ACCESS_FLAGS) != 0x1ff)
		return -EINVAL;
	return 0;
}

static int access_flags(struct dm_call *c, uint32_t *out)
{
	const uint64_t allowed = UV_ACCESS_LOCAL_WRITE | UV_ACCESS_REMOTE_READ |
				 UV_ACCESS_REMOTE_WRITE | UV_ACCESS_REMOTE_ATOMIC |
				 UV_ACCESS_RELAXED_ORDERING;
	uint64_t flags = 0;

	if (c->present & (1u << UV_ATTR_REG_DMABUF_MR_ACCESS_FLAGS)) {
		if (c->access_len == 8)
			flags = c->access;
		else if (c->access_len == 4)
			flags = (uint32_t)c->access;
		else
			return -EINVAL;
	}
	if (flags & ~allowed)
		return -EINVAL;
	*out = (uint32_t)flags;
	return efasim_mr_access(c->uv->dev, *out);
}

/* dma_buf_get(fd): EBADF for no file, EINVAL for a file that is not a
 * dma-buf. *db is NULL for a real dma-buf we did not make (an exporter of
 * this host, system memory as far as the emulation is concerned). */
static int dmabuf_get(int fd, struct efasim_dmabuf **db)
{
	struct efasim_file *f;
	struct statfs sf;

	*db = NULL;
	if (fd < 0 || syscall(SYS_fcntl, fd, F_GETFD) < 0)
		return -EBADF;
	f = efasim_fd_get_locked(fd);
	if (f)
		return (*db = efasim_dmabuf_of(f)) ? 0 : -EINVAL;
	if (syscall(SYS_fstatfs, fd, &sf) == 0 && (unsigned long)sf.f_type == DMA_BUF_MAGIC)
		return 0;
	return -EINVAL;
}

/* The exporter attaches the NIC: the model's verdict for the pair. */
static int exporter_attach(struct dm_call *c, const struct efasim_dmabuf *db)
{
	const struct efasim_dev *dev = c->uv->dev;
	const struct efasim_verdict *v;

	if (!db || !db->owner[0]) {
		c->why = "system memory";
		return 0;
	}
	if (dev->peer_blocked) {
		c->why = "the NIC's firmware blocks peer access";
		return -EOPNOTSUPP;
	}
	v = efasim_verdict_for(efasim_config(), dev->pci, db->owner);
	/* efap2p sim write decides every pair of an EFA NIC and a function
	 * that can own memory; a pair without a decision is refused, never
	 * silently allowed. */
	if (!v || v->outcome == EFASIM_REFUSED) {
		c->why = v ? "refused by the model" : "the model decides no dma-buf for this pair";
		return -EOPNOTSUPP;
	}
	c->why = v->outcome == EFASIM_BOUNCED ? "bounced through system memory" : "p2p";
	return 0;
}

static int set_output(struct dm_call *c, uint64_t ptr, unsigned int idx, uint32_t val,
		      const struct uv_ioctl_attr *attrs)
{
	uint16_t flags = attrs[idx].flags | UV_ATTR_F_VALID_OUTPUT;
	int rc = efasim_copy_out(ptr, &val, sizeof(val));

	if (rc)
		return rc;
	return efasim_copy_out(c->uattrs + idx * sizeof(attrs[0]) +
			       offsetof(struct uv_ioctl_attr, flags), &flags, sizeof(flags));
}

static int dm_handler(struct dm_call *c, const struct uv_ioctl_attr *attrs)
{
	struct efasim_dmabuf *db;
	uint32_t access, key;
	int rc;

	rc = access_flags(c, &access);
	if (rc)
		return rc;
	if (c->offset + c->length < c->offset)
		return -EINVAL;
	rc = dmabuf_get(c->fd, &db);
	if (rc)
		return rc;
	if ((db && db->size < c->offset + c->length) || !c->length)
		return -EINVAL;
	rc = exporter_attach(c, db);
	if (rc)
		return rc;
	rc = efasim_mr_create_dmabuf(c->uv, c->handle, (uint32_t)c->pd, access, c->iova,
				     db ? &db->file : NULL, c->fd, c->offset, c->length);
	if (rc)
		return rc;
	key = efasim_mr_of(&c->uv->objs[c->handle])->dev.key;
	rc = set_output(c, c->lkey_ptr, c->lkey_idx, key, attrs);
	if (!rc)
		rc = set_output(c, c->rkey_ptr, c->rkey_idx, key, attrs);
	return rc;
}

static int reg_dmabuf_mr(struct efasim_uverbs *uv, const struct uv_ioctl_hdr *h,
			 uint64_t uattrs, struct dm_call *c)
{
	struct uv_ioctl_attr attrs[MAX_ATTRS];
	int rc;

	c->uv = uv;
	c->uattrs = uattrs;
	if (efasim_copy_in(attrs, uattrs, h->num_attrs * sizeof(attrs[0])))
		return -EFAULT;
	rc = process_attrs(c, attrs, h->num_attrs);
	if (!rc)
		rc = dm_handler(c, attrs);
	if (rc && (c->present & (1u << UV_ATTR_REG_DMABUF_MR_HANDLE)))
		efasim_obj_destroy(uv, c->handle);
	return rc;
}

/*
 * EFA_IB_METHOD_MR_QUERY (object MR, the driver's method 0x1000; efa
 * driver of 6.8): the MR (an IDR attribute, read access) and four u16
 * outputs, every one mandatory. What the device reports of the MR's
 * interconnects: the path it reaches the memory by for receives, RDMA read
 * responses and RDMA write receives, valid for what the device does (the
 * RDMA_READ and RDMA_WRITE caps); one interconnect, id 0.
 */
static int query_mr(struct efasim_uverbs *uv, const struct uv_ioctl_hdr *h, uint64_t uattrs)
{
	struct uv_ioctl_attr attrs[MAX_ATTRS];
	uint64_t out[4] = { 0 };
	unsigned int idx[4] = { 0 }, i, n;
	uint32_t present = 0;
	uint16_t val[4];
	int err;

	if (efasim_copy_in(attrs, uattrs, h->num_attrs * sizeof(attrs[0])))
		return -EFAULT;
	for (i = 0; i < h->num_attrs; i++) {
		const struct uv_ioctl_attr *a = &attrs[i];
		unsigned int k = a->attr_id - EFA_UV_ATTR_QUERY_MR_HANDLE;

		if (a->attr_id < EFA_UV_ATTR_QUERY_MR_HANDLE ||
		    a->attr_id > EFA_UV_ATTR_QUERY_MR_RESP_RDMA_RECV_IC_ID) {
			if (a->flags & UV_ATTR_F_MANDATORY)
				return -EPROTONOSUPPORT;
			continue;
		}
		if (present & (1u << k))
			return -EINVAL;
		if (k == 0) {
			if (a->attr_data || a->len)
				return -EINVAL;
			if (!efasim_obj_lookup(uv, a->data_s64, &efasim_mr_type, &err))
				return -err;
		} else {
			if (a->attr_data || a->len != sizeof(uint16_t))
				return -EINVAL;
			out[k - 1] = a->data;
			idx[k - 1] = i;
		}
		present |= 1u << k;
	}
	if (present != 0x1f)
		return -EINVAL;
	val[0] = EFA_UV_QUERY_MR_VALIDITY_RECV_IC_ID;
	if (uv->dev->device_caps & EFA_CAP_RDMA_READ)
		val[0] |= EFA_UV_QUERY_MR_VALIDITY_RDMA_READ_IC_ID;
	if (uv->dev->device_caps & EFA_CAP_RDMA_WRITE)
		val[0] |= EFA_UV_QUERY_MR_VALIDITY_RDMA_RECV_IC_ID;
	val[1] = val[2] = val[3] = 0;
	/* uverbs_copy_to, in the handler's order: the ids, then the mask */
	for (n = 0; n < 4; n++) {
		unsigned int j = (n + 1) % 4;
		uint16_t flags = attrs[idx[j]].flags | UV_ATTR_F_VALID_OUTPUT;

		if (efasim_copy_out(out[j], &val[j], sizeof(val[j])) ||
		    efasim_copy_out(uattrs + idx[j] * sizeof(attrs[0]) +
					    offsetof(struct uv_ioctl_attr, flags),
				    &flags, sizeof(flags)))
			return -EFAULT;
	}
	return 0;
}

static const char *method_name(unsigned int obj, unsigned int method)
{
	static const char *const dev_methods[] = {
		"INVOKE_WRITE", "INFO_HANDLES", "QUERY_PORT", "GET_CONTEXT",
		"QUERY_CONTEXT", "QUERY_GID_TABLE", "QUERY_GID_ENTRY",
	};
	static const char *const mr_methods[] = {
		"DM_MR_REG", "MR_DESTROY", "ADVISE_MR", "QUERY_MR", "REG_DMABUF_MR",
	};

	if (obj == UV_OBJECT_DEVICE && method < sizeof(dev_methods) / sizeof(dev_methods[0]))
		return dev_methods[method];
	if (obj == UV_OBJECT_MR && method < sizeof(mr_methods) / sizeof(mr_methods[0]))
		return mr_methods[method];
	if (obj == UV_OBJECT_PD && method == 0)
		return "PD_DESTROY";
	if (obj == UV_OBJECT_CQ && method <= 1)
		return method ? "CQ_DESTROY" : "CQ_CREATE";
	if (obj == UV_OBJECT_QP && method <= 1)
		return method ? "QP_DESTROY" : "QP_CREATE";
	if (obj == UV_OBJECT_AH && method == 0)
		return "AH_DESTROY";
	if (obj == UV_OBJECT_MR && method == EFA_UV_METHOD_MR_QUERY)
		return "EFA MR_QUERY";
	return "method";
}

static int do_ioctl(struct efasim_uverbs *uv, unsigned long req, uint64_t arg,
		    struct uv_ioctl_hdr *h, struct dm_call *c)
{
	if (req != UV_VERBS_IOCTL)
		return -ENOTTY;
	if (efasim_copy_in(h, arg, sizeof(*h)))
		return -EFAULT;
	if (h->length > 4096 ||
	    h->length != sizeof(*h) + (size_t)h->num_attrs * sizeof(struct uv_ioctl_attr))
		return -EINVAL;
	if (h->reserved1 || h->reserved2)
		return -EPROTONOSUPPORT;
	if (h->driver_id != UV_DRIVER_EFA)
		return -EINVAL;
	if (h->object_id == UV_OBJECT_MR && h->method_id == UV_METHOD_REG_DMABUF_MR) {
		/* uverbs has the method from 5.12, for a driver with dma-buf
		 * MRs: the in-tree efa from 5.16, the out-of-tree one from
		 * 1.16.0 (its efa_driver release is 6.1 or newer) */
		atomic_fetch_add(&efasim_dmabuf_mr_calls, 1);
		if (!efasim_kernel_at_least(efasim_config(), 5, 12) ||
		    !efasim_efa_at_least(efasim_config(), 5, 16)) {
			c->why = "not in the model's kernel (5.12) or efa driver (5.16, amzn-drivers 1.16.0)";
			return -EPROTONOSUPPORT;
		}
		return reg_dmabuf_mr(uv, h, arg + sizeof(*h), c);
	}
	if (h->object_id == UV_OBJECT_MR && h->method_id == EFA_UV_METHOD_MR_QUERY) {
		if (!efasim_efa_at_least(efasim_config(), 6, 8)) {
			c->why = "not in the model's efa driver (6.8, amzn-drivers 2.8.0)";
			return -EPROTONOSUPPORT;
		}
		return query_mr(uv, h, arg + sizeof(*h));
	}
	c->why = "not emulated";
	return -EPROTONOSUPPORT;
}

int efasim_uverbs_ioctl_locked(struct efasim_uverbs *uv, unsigned long req, void *arg)
{
	struct uv_ioctl_hdr h = { 0 };
	struct dm_call c = { .fd = -1 };
	int rc = do_ioctl(uv, req, (uintptr_t)arg, &h, &c);

	if (h.object_id == UV_OBJECT_MR && h.method_id == UV_METHOD_REG_DMABUF_MR)
		efasim_trace("uverbs%d ioctl REG_DMABUF_MR fd %d offset %#llx length %#llx -> %s%s%s%s",
			     uv->dev->index, c.fd, (unsigned long long)c.offset,
			     (unsigned long long)c.length, rc ? efasim_errname(-rc) : "ok",
			     c.why ? " (" : "", c.why ? c.why : "", c.why ? ")" : "");
	else
		efasim_trace("uverbs%d ioctl object %u %s -> %s%s%s%s", uv->dev->index,
			     h.object_id, method_name(h.object_id, h.method_id),
			     rc ? efasim_errname(-rc) : "ok", c.why ? " (" : "", c.why ? c.why : "",
			     c.why ? ")" : "");
	return rc;
}
