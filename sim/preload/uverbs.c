// SPDX-License-Identifier: MIT
/*
 * The emulated kernel behind /dev/infiniband/uverbsN: the uverbs file kind
 * and the ib_uverbs write() protocol.
 *
 * A write() is split as ib_uverbs_write splits it: header checks and their
 * errno (EINVAL, ENOSPC, EFAULT) follow ib_uverbs_write and verify_hdr,
 * then the command's handler (cmd_device.c, cmd_verbs.c) by the table
 * below. A command not in the table answers EOPNOTSUPP, what ib_uverbs
 * answers for a command the driver does not implement.
 */
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>


#define UVERBS_MAJOR 231
#define UVERBS_BASE_MINOR 192

/* ---------------------------------------------------------------- write */

struct wmethod {
	const char *name;
	uint16_t req_size, resp_size;
	bool is_ex, has_resp, has_udata;
	int (*handler)(struct efasim_wcall *c);
};

#define CMD(n, req, resp, has_resp, udata, fn) \
	{ n, sizeof(req), resp, false, has_resp, udata, fn }

static const struct wmethod write_methods[] = {
	[UV_CMD_GET_CONTEXT] = CMD("GET_CONTEXT", struct uv_get_context,
		sizeof(struct uv_get_context_resp), true, true, efasim_cmd_get_context),
	[UV_CMD_QUERY_DEVICE] = CMD("QUERY_DEVICE", struct uv_query_device,
		sizeof(struct uv_query_device_resp), true, false, efasim_cmd_query_device),
	[UV_CMD_QUERY_PORT] = CMD("QUERY_PORT", struct uv_query_port,
		sizeof(struct uv_query_port_resp), true, false, efasim_cmd_query_port),
	[UV_CMD_CREATE_COMP_CHANNEL] = CMD("CREATE_COMP_CHANNEL",
		struct uv_create_comp_channel, sizeof(struct uv_create_comp_channel_resp),
		true, false, efasim_cmd_create_comp_channel),
	[UV_CMD_ALLOC_PD] = CMD("ALLOC_PD", struct uv_alloc_pd,
		sizeof(struct uv_alloc_pd_resp), true, true, efasim_cmd_alloc_pd),
	[UV_CMD_DEALLOC_PD] = CMD("DEALLOC_PD", struct uv_dealloc_pd,
		0, false, false, efasim_cmd_dealloc_pd),
	[UV_CMD_REG_MR] = CMD("REG_MR", struct uv_reg_mr,
		sizeof(struct uv_reg_mr_resp), true, true, efasim_cmd_reg_mr),
	[UV_CMD_DEREG_MR] = CMD("DEREG_MR", struct uv_dereg_mr,
		0, false, false, efasim_cmd_dereg_mr),
	[UV_CMD_CREATE_CQ] = CMD("CREATE_CQ", struct uv_create_cq,
		sizeof(struct uv_create_cq_resp), true, true, efasim_cmd_create_cq),
	[UV_CMD_DESTROY_CQ] = CMD("DESTROY_CQ", struct uv_destroy_cq,
		sizeof(struct uv_destroy_cq_resp), true, false, efasim_cmd_destroy_cq),
	[UV_CMD_CREATE_QP] = CMD("CREATE_QP", struct uv_create_qp,
		sizeof(struct uv_create_qp_resp), true, true, efasim_cmd_create_qp),
	[UV_CMD_MODIFY_QP] = CMD("MODIFY_QP", struct uv_modify_qp,
		0, false, false, efasim_cmd_modify_qp),
	[UV_CMD_QUERY_QP] = CMD("QUERY_QP", struct uv_query_qp,
		sizeof(struct uv_query_qp_resp), true, false, efasim_cmd_query_qp),
	[UV_CMD_DESTROY_QP] = CMD("DESTROY_QP", struct uv_destroy_qp,
		sizeof(struct uv_destroy_qp_resp), true, false, efasim_cmd_destroy_qp),
	[UV_CMD_CREATE_AH] = CMD("CREATE_AH", struct uv_create_ah,
		sizeof(struct uv_create_ah_resp), true, true, efasim_cmd_create_ah),
	[UV_CMD_DESTROY_AH] = CMD("DESTROY_AH", struct uv_destroy_ah,
		0, false, false, efasim_cmd_destroy_ah),
};

static const struct wmethod ex_create_cq = {
	"EX_CREATE_CQ", offsetof(struct uv_ex_create_cq, flags) + sizeof(uint32_t),
	offsetof(struct uv_ex_create_cq_resp, response_length) + sizeof(uint32_t),
	true, true, true, efasim_cmd_ex_create_cq,
};

/* The extended QUERY_DEVICE rejects buffers without response_length. */
static const struct wmethod ex_query_device = {
	"EX_QUERY_DEVICE", sizeof(struct uv_ex_query_device),
	offsetof(struct uv_ex_query_device_resp, response_length) + sizeof(uint32_t),
	true, true, false, efasim_cmd_ex_query_device,
};

/* Commands the driver does not implement: header checked as non-extended,
 * then EOPNOTSUPP (ib_uverbs_notsupp). */
static const struct wmethod notsupp = { "not emulated", 0, 0, false, false, false, NULL };

#define NUM_WRITE 64 /* the highest legacy command is below this */

static const struct wmethod *lookup_method(uint32_t command, int *err)
{
	uint32_t idx = command & UV_CMD_COMMAND_MASK;

	if (command & ~(UV_CMD_FLAG_EXTENDED | UV_CMD_COMMAND_MASK)) {
		*err = -EINVAL;
		return NULL;
	}
	if (command & UV_CMD_FLAG_EXTENDED) {
		if (idx == UV_EX_CMD_QUERY_DEVICE)
			return &ex_query_device;
		if (idx == UV_EX_CMD_CREATE_CQ)
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

static int verify_hdr(const struct uv_cmd_hdr *h, const struct uv_ex_cmd_hdr *ex,
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
			const struct uv_cmd_hdr *h, uint64_t buf)
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

static void split_ex(struct efasim_wcall *c, const struct uv_cmd_hdr *h,
		     const struct uv_ex_cmd_hdr *ex, uint64_t buf)
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

static ssize_t do_write(struct efasim_uverbs *uv, int fd, uint64_t buf, size_t count,
			const char **name, uint32_t *command)
{
	struct uv_ex_cmd_hdr ex = { 0 };
	struct uv_cmd_hdr h;
	struct efasim_wcall c = { .uv = uv, .dev = uv->dev, .fd = fd };
	const struct wmethod *m;
	int rc = 0;

	if (!uv->writable)
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

static ssize_t uverbs_write(struct efasim_file *f, int fd, const void *buf, size_t count)
{
	struct efasim_uverbs *uv = efasim_uverbs_of(f);
	const char *name = "malformed";
	uint32_t command = 0;
	ssize_t r;

	r = do_write(uv, fd, (uintptr_t)buf, count, &name, &command);

	efasim_trace("uverbs%d write %s (command %#x, %zu bytes) -> %s", uv->dev->index, name,
		     command, count, r < 0 ? efasim_errname((int)-r) : "ok");
	return r;
}

/* ---------------------------------------------------------------- the file */

static int uverbs_ioctl(struct efasim_file *f, unsigned long req, void *arg)
{
	return efasim_uverbs_ioctl_locked(efasim_uverbs_of(f), req, arg);
}

/* mmap of an emulated uverbs file maps its device memory: the offset must
 * be the key of a ring or doorbell and the length its size (EINVAL
 * otherwise, as rdma_user_mmap_entry_get answers), shared. */
static int uverbs_mmap(struct efasim_file *f, size_t len, int flags, off_t off)
{
	struct efasim_uverbs *uv = efasim_uverbs_of(f);
	int rc;

	if (!(flags & MAP_SHARED) || off < 0)
		rc = -EINVAL;
	else
		rc = efasim_region_check(uv, (uint64_t)off, len);
	efasim_trace("mmap uverbs%d offset %#llx length %#zx -> %s", uv->dev->index,
		     (unsigned long long)off, len, rc ? efasim_errname(-rc) : "ok");
	return rc;
}

static bool uverbs_fstat(struct efasim_file *f, struct stat *st)
{
	efasim_uverbs_stat(efasim_uverbs_of(f)->dev, st);
	return true;
}

static void uverbs_release(struct efasim_file *f)
{
	struct efasim_uverbs *uv = efasim_uverbs_of(f);

	efasim_uverbs_release(uv);
	free(uv);
}

static const struct efasim_file_ops uverbs_ops = {
	.kind = EFASIM_UVERBS,
	.name = "uverbs",
	.write = uverbs_write,
	.ioctl = uverbs_ioctl,
	.mmap = uverbs_mmap,
	.fstat = uverbs_fstat,
	.release = uverbs_release,
};

int efasim_uverbs_open(struct efasim_dev *dev, int flags)
{
	struct efasim_uverbs *uv;
	int fd, rc;

	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return -EEXIST;
	fd = memfd_create("efasim-uverbs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -errno;
	uv = calloc(1, sizeof(*uv));
	if (!uv || efasim_file_init(&uv->file, &uverbs_ops, fd)) {
		free(uv);
		efasim_sys_close(fd);
		return -ENOMEM;
	}
	uv->dev = dev;
	uv->writable = (flags & O_ACCMODE) != O_RDONLY;
	efasim_lock();
	rc = efasim_fd_insert_locked(fd, &uv->file);
	efasim_unlock();
	if (rc) {
		free(uv);
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
