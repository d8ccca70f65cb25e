// SPDX-License-Identifier: MIT
/*
 * Drives every command the emulator answers, and their error paths, through
 * the unmodified libibverbs/libefa and through the raw uverbs protocol.
 *
 * Runs inside `efap2p sim --model ctests/emulator/refused.json`. The
 * expected values below were read by hand from that model file:
 *   uverbs0 = rdmap3s0 = 0000:03:00.0: efa_defaults: caps RDMA_READ,
 *     RNR_RETRY, CQ_NOTIFICATIONS, CQ_WITH_SGID, UNSOLICITED_WRITE_RECV (no
 *     RDMA_WRITE); max_sq_wr 4096, max_rq_wr 32768, sge 2/3, inline 32,
 *     max_rdma_size 1 GiB; fw 0.1.2.3.
 *   uverbs1 = rdmap5s0 = 0000:05:00.0: peer_access_blocked; caps RDMA_READ,
 *     RDMA_WRITE; max_sq_wr 2048, max_rq_wr 8192, sge 1/2, inline 64,
 *     max_rdma_size 8 MiB.
 *   The driver (the model's kernel: the newest) adds CQ_WITH_SGID and
 *   CQ_WITH_EXT_MEM to every device's caps.
 *   dma-buf owners: 04:00.0 nvidia (p2p with 03:00.0), 06:00.0 habanalabs
 *     (refused), 07:00.0 amdgpu (bounced: accepted), 00:00.0 no driver.
 *   efadv_query_device's caps are the kernel's, less those the installed
 *   libefa does not know (ctests/stack.py: EFADV_CAPS_MASK): A 0x17
 *   (RDMA_READ, RNR_RETRY, CQ_WITH_SGID, UNSOLICITED_WRITE_RECV), B 0xd
 *   (RDMA_READ, CQ_WITH_SGID, RDMA_WRITE).
 *
 * With --passthrough it runs without an emulated host and checks that the
 * preloaded library stays out of the way.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <rdma/efa-abi.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "check.h"
#include "../stack.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142
#endif
#define NETLINK_RDMA_PROTO 20
#define MiB (1ul << 20)

/* The library's API, reached as a ctypes or purego user would. */
static int (*dmabuf_create)(const char *, const char *, size_t);
static unsigned long (*dmabuf_mr_calls)(void);
static int (*emu_active)(void);

static void load_api(void)
{
	dmabuf_create = (int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT, "efasim_dmabuf_create");
	dmabuf_mr_calls = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "efasim_reg_dmabuf_mr_calls");
	emu_active = (int (*)(void))dlsym(RTLD_DEFAULT, "efasim_active");
	if (!dmabuf_create || !dmabuf_mr_calls || !emu_active) {
		fprintf(stderr, "libefasim is not preloaded\n");
		exit(99);
	}
}

static struct ibv_device **devs;
static struct ibv_device *nic_a, *nic_b; /* rdmap3s0, rdmap5s0 */

static void test_discovery(void)
{
	int n = -1, i;

	devs = ibv_get_device_list(&n);
	CHECK(devs != NULL, "ibv_get_device_list: %s", strerror(errno));
	CHECK_EQ(n, 2);
	for (i = 0; devs && i < n; i++) {
		if (!strcmp(ibv_get_device_name(devs[i]), "rdmap3s0"))
			nic_a = devs[i];
		if (!strcmp(ibv_get_device_name(devs[i]), "rdmap5s0"))
			nic_b = devs[i];
	}
	CHECK(nic_a && nic_b, "devices rdmap3s0 and rdmap5s0 not both found");
	if (!nic_a || !nic_b)
		exit(check_exit("test_uverbs"));
	CHECK_EQ(be64toh(ibv_get_device_guid(nic_a)), 0x0300);
	CHECK_EQ(be64toh(ibv_get_device_guid(nic_b)), 0x0500);
}

static void test_netlink(void)
{
	int fd;

	errno = 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA_PROTO);
	CHECK(fd == -1, "the RDMA netlink socket must fail");
	CHECK_ERR(errno, EPROTONOSUPPORT);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0, "other sockets pass through: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void test_stat(void)
{
	int (*xstat)(int, const char *, struct stat *);
	struct statx sx;
	struct stat st;

	errno = EXDEV;
	CHECK(stat("/dev/infiniband/uverbs0", &st) == 0, "stat uverbs0: %s", strerror(errno));
	CHECK_ERR(errno, EXDEV); /* untouched on success */
	CHECK(S_ISCHR(st.st_mode), "uverbs0 mode %o", st.st_mode);
	CHECK_EQ(st.st_rdev, makedev(231, 192));
	CHECK(lstat("/dev/infiniband/uverbs1", &st) == 0, "lstat uverbs1");
	CHECK_EQ(st.st_rdev, makedev(231, 193));
	CHECK(fstatat(AT_FDCWD, "/dev/infiniband/uverbs1", &st, 0) == 0, "fstatat");
	CHECK_EQ(st.st_rdev, makedev(231, 193));
	CHECK(statx(AT_FDCWD, "/dev/infiniband/uverbs0", 0, STATX_BASIC_STATS, &sx) == 0, "statx");
	CHECK(S_ISCHR(sx.stx_mode) && sx.stx_rdev_major == 231 && sx.stx_rdev_minor == 192,
	      "statx mode %o rdev %u:%u", sx.stx_mode, sx.stx_rdev_major, sx.stx_rdev_minor);
	CHECK(stat("/dev/infiniband/uverbs2", &st) == -1, "uverbs2 is not in the model");
	CHECK(access("/dev/infiniband/uverbs0", R_OK | W_OK) == 0, "access rw");
	CHECK(access("/dev/infiniband/uverbs0", X_OK) == -1 && errno == EACCES, "access x");
	/* binaries built against glibc < 2.33 call __xstat */
	xstat = (int (*)(int, const char *, struct stat *))dlsym(RTLD_DEFAULT, "__xstat");
	CHECK(xstat != NULL, "__xstat not found");
	if (xstat) {
		CHECK(xstat(1, "/dev/infiniband/uverbs1", &st) == 0, "__xstat");
		CHECK_EQ(st.st_rdev, makedev(231, 193));
	}
}

static void test_open_fstat(void)
{
	struct stat st;
	int fd;

	errno = EXDEV;
	fd = open("/dev/infiniband/uverbs1", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open: %s", strerror(errno));
	CHECK_ERR(errno, EXDEV);
	if (fd < 0)
		return;
	CHECK(fstat(fd, &st) == 0 && S_ISCHR(st.st_mode), "fstat");
	CHECK_EQ(st.st_rdev, makedev(231, 193));
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "O_CLOEXEC kept");
	CHECK(close(fd) == 0, "close");
	CHECK(fstat(fd, &st) == -1 && errno == EBADF, "closed");
	CHECK(open("/dev/infiniband/uverbs0", O_RDWR | O_DIRECTORY) == -1 && errno == ENOTDIR,
	      "O_DIRECTORY");
	CHECK(open("/dev/infiniband/uverbs7", O_RDWR) == -1 && errno == ENOENT, "uverbs7");
}

struct nic_expect {
	const char *name;
	uint64_t guid;
	uint32_t efadv_caps; /* as the kernel reports them, in efadv bits */
	uint32_t max_sq_wr, max_rq_wr, max_rdma_size;
	uint16_t max_sq_sge, max_rq_sge, inline_buf_size;
};

static const struct nic_expect expect_a = { "rdmap3s0", 0x0300, 0x17, 4096, 32768, 1u << 30, 2, 3, 32 };
static const struct nic_expect expect_b = { "rdmap5s0", 0x0500, 0xd, 2048, 8192, 8u << 20, 1, 2, 64 };

static void check_query(struct ibv_context *ctx, const struct nic_expect *e)
{
	struct efadv_device_attr ea;
	struct ibv_device_attr_ex ax;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rc;

	rc = ibv_query_device_ex(ctx, NULL, &ax);
	CHECK_ERR(rc, 0);
	CHECK_EQ(ax.orig_attr.vendor_id, 0x1d0f);
	CHECK_EQ(ax.orig_attr.vendor_part_id, 0xefa1);
	CHECK_EQ(ax.orig_attr.hw_ver, 0xefa1);
	CHECK_EQ(be64toh(ax.orig_attr.node_guid), e->guid);
	CHECK(!strcmp(ax.orig_attr.fw_ver, "0.1.2.3"), "fw_ver %s", ax.orig_attr.fw_ver);
	CHECK_EQ(ax.orig_attr.max_qp, 256);
	CHECK_EQ(ax.orig_attr.max_qp_wr, e->max_sq_wr < e->max_rq_wr ? e->max_sq_wr : e->max_rq_wr);
	CHECK_EQ(ax.orig_attr.max_sge, e->max_sq_sge < e->max_rq_sge ? e->max_sq_sge : e->max_rq_sge);
	CHECK_EQ(ax.orig_attr.max_mr_size, 0x3fffff000000ull);
	CHECK_EQ(ax.orig_attr.phys_port_cnt, 1);
	rc = ibv_query_port(ctx, 1, &pa);
	CHECK_ERR(rc, 0);
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.active_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.lmc, 1);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_UNSPECIFIED);
	CHECK_ERR(ibv_query_port(ctx, 2, &pa), EINVAL);
	CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0, "query_gid");
	/* efa_query_pkey: index 0 is 0xffff, there is no other */
	{
		__be16 pkey = 0;

		CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htobe16(0xffff),
		      "query_pkey 0: %#x", be16toh(pkey));
		CHECK(ibv_query_pkey(ctx, 1, 1, &pkey) != 0, "query_pkey 1 answered");
	}
	CHECK_EQ(be64toh(gid.global.interface_id), (e->guid << 16) | 1);
	memset(&ea, 0xff, sizeof(ea));
	rc = efadv_query_device(ctx, &ea, sizeof(ea));
	CHECK_ERR(rc, 0);
	CHECK_EQ(ea.device_caps, e->efadv_caps & stack_num("EFADV_CAPS_MASK"));
	CHECK_EQ(ea.max_sq_wr, e->max_sq_wr);
	CHECK_EQ(ea.max_rq_wr, e->max_rq_wr);
	CHECK_EQ(ea.max_sq_sge, e->max_sq_sge);
	CHECK_EQ(ea.max_rq_sge, e->max_rq_sge);
	CHECK_EQ(ea.inline_buf_size, e->inline_buf_size);
	CHECK_EQ(ea.max_rdma_size, e->max_rdma_size);
}

static void test_contexts(void)
{
	struct ibv_context *a = ibv_open_device(nic_a), *b = ibv_open_device(nic_b);

	CHECK(a && b, "ibv_open_device: %s", strerror(errno));
	if (a)
		check_query(a, &expect_a);
	if (b)
		check_query(b, &expect_b);
	if (a)
		CHECK_ERR(ibv_close_device(a), 0);
	if (b)
		CHECK_ERR(ibv_close_device(b), 0);
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int access, int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(pd, addr, len, access);
	*err = mr ? 0 : errno;
	return mr;
}

static void test_pd_mr(void)
{
	const int lw = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_context *a = ibv_open_device(nic_a), *b = ibv_open_device(nic_b);
	struct ibv_pd *pd = NULL, *pdb = NULL, fake;
	struct ibv_mr *mr, *mr2;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *buf = aligned_alloc(page, 16 * page), *hole;
	int err;

	CHECK(a && b && buf, "setup");
	if (!a || !b || !buf)
		goto out;
	pd = ibv_alloc_pd(a);
	pdb = ibv_alloc_pd(b);
	CHECK(pd && pdb, "ibv_alloc_pd: %s", strerror(errno));
	if (!pd || !pdb)
		goto out;
	CHECK_EQ(pd->handle, 0); /* the first handle of the file's idr */
	mr = reg(pd, buf, 16 * page, lw | IBV_ACCESS_REMOTE_READ, &err);
	CHECK(mr != NULL, "ibv_reg_mr: %s", strerror(err));
	if (mr) {
		CHECK(mr->lkey != 0 && mr->lkey == mr->rkey, "keys %u %u", mr->lkey, mr->rkey);
		CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
		CHECK_ERR(ibv_dereg_mr(mr), 0);
	}
	/* a bad address: an unmapped hole, and page 0 */
	hole = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED, "mmap");
	munmap(hole + page, page);
	mr = reg(pd, hole, 4 * page, lw, &err);
	CHECK(!mr && err == EFAULT, "REG_MR over a hole: %s", strerror(err));
	munmap(hole, 4 * page);
	mr = reg(pd, NULL, page, lw, &err);
	CHECK(!mr && err == EFAULT, "REG_MR of page 0: %s", strerror(err));
	mr = reg(pd, buf, 0, lw, &err);
	CHECK(!mr && err == EINVAL, "REG_MR of 0 bytes: %s", strerror(err));
	/* access flags: NIC A has no RDMA_WRITE cap; NIC B has it */
	mr = reg(pd, buf, page, lw | IBV_ACCESS_REMOTE_WRITE, &err);
	CHECK(!mr && err == EOPNOTSUPP, "REMOTE_WRITE without the cap: %s", strerror(err));
	mr2 = reg(pdb, buf, page, lw | IBV_ACCESS_REMOTE_WRITE, &err);
	CHECK(mr2 != NULL, "REMOTE_WRITE with the cap: %s", strerror(err));
	if (mr2)
		CHECK_ERR(ibv_dereg_mr(mr2), 0);
	mr = reg(pd, buf, page, IBV_ACCESS_REMOTE_WRITE, &err);
	CHECK(!mr && err == EINVAL, "REMOTE_WRITE without LOCAL_WRITE: %s", strerror(err));
	mr = reg(pd, buf, page, lw | IBV_ACCESS_ON_DEMAND, &err);
	CHECK(!mr && err == EOPNOTSUPP, "ON_DEMAND: %s", strerror(err));
	mr = reg(pd, buf, page, lw | IBV_ACCESS_MW_BIND, &err);
	CHECK(!mr && err == EOPNOTSUPP, "MW_BIND: %s", strerror(err));
	/* unknown handles: REG_MR says EINVAL, a destroy ENOENT */
	fake = *pd;
	fake.handle = 999;
	mr = reg(&fake, buf, page, lw, &err);
	CHECK(!mr && err == EINVAL, "REG_MR on a bad PD: %s", strerror(err));
	CHECK_ERR(ibv_dealloc_pd(&fake), ENOENT);
	/* the handle of an MR is not a PD */
	mr2 = reg(pd, buf, page, lw, &err);
	CHECK(mr2 != NULL, "ibv_reg_mr: %s", strerror(err));
	if (mr2) {
		fake.handle = mr2->handle;
		mr = reg(&fake, buf, page, lw, &err);
		CHECK(!mr && err == EINVAL, "REG_MR with an MR's handle as PD: %s", strerror(err));
		CHECK_ERR(ibv_dealloc_pd(&fake), EINVAL);
		CHECK_ERR(ibv_dereg_mr(mr2), 0);
	}
out:
	if (pd)
		CHECK_ERR(ibv_dealloc_pd(pd), 0);
	if (pdb)
		CHECK_ERR(ibv_dealloc_pd(pdb), 0);
	if (a)
		ibv_close_device(a);
	if (b)
		ibv_close_device(b);
	free(buf);
}

/* ------------------------------------------------------------ raw write */

static int raw_write(int fd, const void *buf, size_t len)
{
	ssize_t r = write(fd, buf, len);

	if (r < 0)
		return errno;
	return r == (ssize_t)len ? 0 : -1;
}

struct get_ctx_req {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_get_context core;
	struct efa_ibv_alloc_ucontext_cmd efa;
};

struct get_ctx_resp {
	struct ib_uverbs_get_context_resp core;
	struct efa_ibv_alloc_ucontext_resp efa;
};

static int raw_get_context(int fd, uint32_t comp_mask, struct get_ctx_resp *resp)
{
	struct get_ctx_req req = { 0 };

	req.hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(*resp) / 4;
	req.core.response = (uintptr_t)resp;
	req.efa.comp_mask = comp_mask;
	return raw_write(fd, &req, sizeof(req));
}

struct query_req {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_device core;
};

static int raw_query(int fd, uint16_t in_words, uint16_t out_words, uint64_t response, size_t len)
{
	struct query_req req = { { IB_USER_VERBS_CMD_QUERY_DEVICE, in_words, out_words }, { response } };

	return raw_write(fd, &req, len);
}

static int raw_destroy(int fd, uint32_t command, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		uint32_t handle;
	} req = { { command, sizeof(req) / 4, 0 }, handle };

	return raw_write(fd, &req, sizeof(req));
}

static int raw_alloc_pd(int fd, uint32_t *handle)
{
	struct {
		struct ib_uverbs_alloc_pd_resp core;
		struct efa_ibv_alloc_pd_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd core;
	} req = { { IB_USER_VERBS_CMD_ALLOC_PD, sizeof(req) / 4, sizeof(resp) / 4 }, { (uintptr_t)&resp } };
	int rc = raw_write(fd, &req, sizeof(req));

	*handle = resp.core.pd_handle;
	return rc;
}

static int raw_reg_mr(int fd, uint32_t pd, void *addr, size_t len, uint32_t *handle)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_reg_mr core;
	} req = { { IB_USER_VERBS_CMD_REG_MR, sizeof(req) / 4, sizeof(resp) / 4 },
		  { (uintptr_t)&resp, (uintptr_t)addr, len, (uintptr_t)addr, pd,
		    IBV_ACCESS_LOCAL_WRITE } };
	int rc = raw_write(fd, &req, sizeof(req));

	*handle = resp.mr_handle;
	return rc;
}

struct ex_query_req {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex;
	struct ib_uverbs_ex_query_device core;
};

static int raw_ex_query(int fd, struct ex_query_req *req, void *resp)
{
	req->hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE;
	req->ex.response = (uintptr_t)resp;
	return raw_write(fd, req, sizeof(*req));
}

static void test_raw_write(void)
{
	struct ib_uverbs_query_device_resp qresp;
	struct get_ctx_resp gresp;
	uint8_t big[512];
	struct {
		struct ib_uverbs_ex_query_device_resp core;
		struct efa_ibv_ex_query_device_resp efa;
	} xresp;
	struct ex_query_req xreq;
	uint32_t pd, mr, words = sizeof(struct query_req) / 4;
	char *page;
	int fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC), ro;

	CHECK(fd >= 0, "open");
	if (fd < 0)
		return;
	/* before GET_CONTEXT */
	CHECK_ERR(raw_query(fd, words, sizeof(qresp) / 4, (uintptr_t)&qresp, words * 4), EINVAL);
	CHECK_ERR(raw_alloc_pd(fd, &pd), EINVAL);
	CHECK_ERR(raw_get_context(fd, 0, &gresp), EOPNOTSUPP); /* no handshake ack */
	CHECK_ERR(raw_get_context(fd, EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH |
				  EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR, &gresp), 0);
	CHECK(fcntl((int)gresp.core.async_fd, F_GETFD) == FD_CLOEXEC, "async_fd is a real fd");
	CHECK(gresp.efa.cmds_supp_udata_mask & EFA_USER_CMDS_SUPP_UDATA_CREATE_AH, "CREATE_AH udata");
	CHECK_EQ(gresp.efa.inline_buf_size, 32);
	close((int)gresp.core.async_fd);
	CHECK_ERR(raw_get_context(fd, 3, &gresp), EINVAL); /* a second context */
	/* malformed headers */
	CHECK_ERR(raw_write(fd, "abc", 3), EINVAL);
	CHECK_ERR(raw_query(fd, words, sizeof(qresp) / 4, (uintptr_t)&qresp, words * 4 - 4), EINVAL);
	CHECK_ERR(raw_query(fd, 2, sizeof(qresp) / 4, (uintptr_t)&qresp, 8), ENOSPC);
	CHECK_ERR(raw_query(fd, words, 10, (uintptr_t)&qresp, words * 4), ENOSPC);
	CHECK_ERR(raw_query(fd, words, sizeof(qresp) / 4, 8, words * 4), EFAULT);
	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK_ERR(raw_query(fd, words, sizeof(qresp) / 4, (uintptr_t)page, words * 4), EFAULT);
	munmap(page, 4096);
	CHECK_ERR(raw_query(fd, words, sizeof(qresp) / 4, (uintptr_t)&qresp, words * 4), 0);
	CHECK_EQ(qresp.vendor_id, 0x1d0f);
	/* a longer response buffer is zero-filled past the response */
	memset(big, 0xab, sizeof(big));
	CHECK_ERR(raw_query(fd, words, sizeof(big) / 4, (uintptr_t)big, words * 4), 0);
	CHECK(big[200] == 0 && big[511] == 0, "zero fill");
	{
		struct query_req req = { { 0x12345601, words, 0 }, { 0 } };

		CHECK_ERR(raw_write(fd, &req, sizeof(req)), EINVAL); /* bits outside the mask */
		req.hdr.command = IB_USER_VERBS_CMD_CREATE_SRQ;      /* not emulated */
		CHECK_ERR(raw_write(fd, &req, sizeof(req)), EOPNOTSUPP);
		req.hdr.command = 200;
		CHECK_ERR(raw_write(fd, &req, sizeof(req)), EOPNOTSUPP);
	}
	/* extended QUERY_DEVICE */
	memset(&xreq, 0, sizeof(xreq));
	xreq.hdr.in_words = sizeof(xreq.core) / 8;
	xreq.hdr.out_words = sizeof(xresp.core) / 8;
	xreq.ex.provider_out_words = sizeof(xresp.efa) / 8;
	CHECK_ERR(raw_ex_query(fd, &xreq, &xresp), 0);
	/* kernel bits: the model's 0x47 and the driver's CQ_WITH_SGID (0x08)
	 * and CQ_WITH_EXT_MEM (0x80) */
	CHECK_EQ(xresp.efa.device_caps, 0xcf);
	CHECK_EQ(xresp.efa.max_rdma_size, 1u << 30);
	CHECK_EQ(xresp.core.response_length, sizeof(xresp.core));
	xreq.core.comp_mask = 1;
	CHECK_ERR(raw_ex_query(fd, &xreq, &xresp), EINVAL);
	xreq.core.comp_mask = 0;
	xreq.ex.cmd_hdr_reserved = 1;
	CHECK_ERR(raw_ex_query(fd, &xreq, &xresp), EINVAL);
	xreq.ex.cmd_hdr_reserved = 0;
	xreq.hdr.out_words = 2;
	CHECK_ERR(raw_ex_query(fd, &xreq, &xresp), ENOSPC);
	xreq.hdr.out_words = sizeof(xresp.core) / 8;
	xreq.hdr.in_words = 2;
	CHECK_ERR(raw_ex_query(fd, &xreq, &xresp), EINVAL); /* words disagree with the size */
	/* handles: the idr is shared by every type */
	CHECK_ERR(raw_alloc_pd(fd, &pd), 0);
	CHECK_ERR(raw_reg_mr(fd, pd, big, sizeof(big), &mr), 0);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEALLOC_PD, pd), EBUSY);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEALLOC_PD, mr), EINVAL);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEREG_MR, pd), EINVAL);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEREG_MR, 1234), ENOENT);
	{
		struct {
			struct ib_uverbs_cmd_hdr hdr;
			uint32_t handle, extra;
		} req = { { IB_USER_VERBS_CMD_DEREG_MR, sizeof(req) / 4, 0 }, mr, 7 };

		CHECK_ERR(raw_write(fd, &req, sizeof(req)), EOPNOTSUPP); /* unknown non-zero tail */
	}
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEREG_MR, mr), 0);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEALLOC_PD, pd), 0);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEALLOC_PD, pd), ENOENT);
	close(fd);
	/* a read-only descriptor cannot write commands */
	ro = open("/dev/infiniband/uverbs0", O_RDONLY | O_CLOEXEC);
	CHECK(ro >= 0, "open O_RDONLY");
	CHECK_ERR(raw_get_context(ro, 3, &gresp), EBADF);
	close(ro);
}

/* ------------------------------------------------------------ raw ioctl */

struct ioctl_buf {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[12];
};

static int raw_ioctl(int fd, struct ioctl_buf *b, uint16_t obj, uint16_t method, unsigned int n)
{
	b->hdr.length = (uint16_t)(sizeof(b->hdr) + n * sizeof(b->attrs[0]));
	b->hdr.object_id = obj;
	b->hdr.method_id = method;
	b->hdr.num_attrs = (uint16_t)n;
	b->hdr.driver_id = RDMA_DRIVER_EFA;
	return ioctl(fd, RDMA_VERBS_IOCTL, b) ? errno : 0;
}

static void attr(struct ib_uverbs_attr *a, uint16_t id, uint16_t len, uint64_t data)
{
	memset(a, 0, sizeof(*a));
	a->attr_id = id;
	a->len = len;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	a->data = data;
}

/* A full REG_DMABUF_MR in the order libibverbs sends it; returns n. */
static unsigned int dmabuf_attrs(struct ioctl_buf *b, uint32_t pd, int dmafd, uint64_t len,
				 uint32_t *lkey, uint32_t *rkey)
{
	memset(b, 0, sizeof(*b));
	attr(&b->attrs[0], UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0, 0);
	attr(&b->attrs[1], UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, 4, (uintptr_t)lkey);
	attr(&b->attrs[2], UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, 4, (uintptr_t)rkey);
	attr(&b->attrs[3], UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, 0, pd);
	attr(&b->attrs[4], UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 8, 0);
	attr(&b->attrs[5], UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 8, len);
	attr(&b->attrs[6], UVERBS_ATTR_REG_DMABUF_MR_IOVA, 8, 0);
	attr(&b->attrs[7], UVERBS_ATTR_REG_DMABUF_MR_FD, 4, (uint32_t)dmafd);
	attr(&b->attrs[8], UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, 4, IBV_ACCESS_LOCAL_WRITE);
	b->attrs[8].flags = 0;
	return 9;
}

static void test_raw_ioctl(void)
{
	struct get_ctx_resp gresp;
	struct ioctl_buf b;
	uint32_t pd, lkey, rkey;
	unsigned int n;
	int fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
	int dmafd = dmabuf_create("0000:04:00.0", NULL, 4 * MiB);

	CHECK(fd >= 0 && dmafd >= 0, "setup");
	if (fd < 0 || dmafd < 0)
		return;
	memset(&b, 0, sizeof(b));
	/* a method the emulator does not know: the caller falls back */
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 0), EPROTONOSUPPORT);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, 0), EPROTONOSUPPORT);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, 0), EPROTONOSUPPORT);
	CHECK(ioctl(fd, 0x1234, &b) == -1 && errno == ENOTTY, "other ioctl requests: ENOTTY");
	b.hdr.reserved1 = 1;
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, 0), EPROTONOSUPPORT);
	b.hdr.reserved1 = 0;
	b.hdr.driver_id = 0;
	b.hdr.length = sizeof(b.hdr);
	b.hdr.object_id = UVERBS_OBJECT_MR;
	b.hdr.method_id = UVERBS_METHOD_REG_DMABUF_MR;
	CHECK(ioctl(fd, RDMA_VERBS_IOCTL, &b) == -1 && errno == EINVAL, "another driver's id: EINVAL");
	b.hdr.driver_id = RDMA_DRIVER_EFA;
	b.hdr.length = sizeof(b.hdr) + 8; /* not a whole number of attributes */
	CHECK(ioctl(fd, RDMA_VERBS_IOCTL, &b) == -1 && errno == EINVAL, "length: EINVAL");
	/* a context is needed for the new MR */
	n = dmabuf_attrs(&b, 0, dmafd, MiB, &lkey, &rkey);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n), EINVAL);
	CHECK_ERR(raw_get_context(fd, 3, &gresp), 0);
	close((int)gresp.core.async_fd);
	CHECK_ERR(raw_alloc_pd(fd, &pd), 0);
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n), 0);
	CHECK(b.attrs[1].flags & UVERBS_ATTR_F_VALID_OUTPUT, "VALID_OUTPUT set on lkey");
	CHECK_EQ(b.attrs[0].data, pd + 1); /* the new handle, written back */
	CHECK(lkey == rkey && lkey != 0, "keys %u %u", lkey, rkey);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEREG_MR, (uint32_t)b.attrs[0].data), 0);
	/* attribute errors */
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n - 2), EINVAL);
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	attr(&b.attrs[n], 77, 0, 0);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n + 1), EPROTONOSUPPORT);
	b.attrs[n].flags = 0; /* an unknown optional attribute is ignored */
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n + 1), 0);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEREG_MR, (uint32_t)b.attrs[0].data), 0);
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	b.attrs[n] = b.attrs[5];
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n + 1), EINVAL);
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	b.attrs[4].len = 4;
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n), EINVAL);
	n = dmabuf_attrs(&b, pd + 50, dmafd, MiB, &lkey, &rkey);
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n), ENOENT);
	n = dmabuf_attrs(&b, pd, dmafd, MiB, &lkey, &rkey);
	b.attrs[8].data = 1u << 12; /* not an access flag of this method */
	CHECK_ERR(raw_ioctl(fd, &b, UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, n), EINVAL);
	CHECK_ERR(raw_destroy(fd, IB_USER_VERBS_CMD_DEALLOC_PD, pd), 0);
	close(fd);
	close(dmafd);
}

/* ------------------------------------------------------------ dma-buf */

static int read_fdinfo(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static void test_dmabuf_fake(void)
{
	char path[64], text[512], line[128];
	struct statfs sf;
	struct stat st;
	FILE *f;
	int fd, rc;

	errno = EXDEV;
	fd = dmabuf_create("0000:04:00.0", NULL, 2 * MiB);
	CHECK(fd >= 0, "efasim_dmabuf_create: %s", strerror(errno));
	CHECK_ERR(errno, EXDEV);
	if (fd < 0)
		return;
	CHECK(fstatfs(fd, &sf) == 0 && sf.f_type == DMA_BUF_MAGIC, "fstatfs magic %#lx", (unsigned long)sf.f_type);
	CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)(2 * MiB), "fstat size");
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "close-on-exec");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	CHECK(read_fdinfo(path, text, sizeof(text)) == 0, "read %s", path);
	CHECK(strstr(text, "exp_name:\tnvidia\n") != NULL, "fdinfo: %s", text);
	CHECK(strstr(text, "size:\t2097152\n") != NULL, "fdinfo: %s", text);
	CHECK(strstr(text, "count:\t1\n") != NULL, "fdinfo: %s", text);
	CHECK(strstr(text, "flags:\t02000002\n") != NULL, "fdinfo: %s", text);
	CHECK(!strstr(text, "\nname:"), "no name before SET_NAME: %s", text);
	rc = ioctl(fd, DMA_BUF_SET_NAME_B, "gpu0-weights");
	CHECK(rc == 0, "DMA_BUF_SET_NAME: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)getpid(), fd);
	f = fopen(path, "re");
	CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
	rc = 0;
	while (f && fgets(line, sizeof(line), f))
		rc |= !strcmp(line, "name:\tgpu0-weights\n");
	if (f)
		fclose(f);
	CHECK(rc, "the name set is shown");
	CHECK(ioctl(fd, DMA_BUF_SET_NAME_B, "a name longer than thirty-two bytes") == -1 && errno == EINVAL,
	      "long name");
	CHECK(write(fd, "x", 1) == -1 && errno == EINVAL, "a dma-buf has no write");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	CHECK(open(path, O_WRONLY) == -1 && errno == EACCES, "fdinfo is read-only");
	close(fd);
	/* other fdinfo files are the kernel's */
	CHECK(read_fdinfo("/proc/self/fdinfo/1", text, sizeof(text)) == 0 && !strstr(text, "exp_name"),
	      "fdinfo of stdout");
	/* creation errors */
	errno = 0;
	CHECK(dmabuf_create("0000:99:00.0", NULL, MiB) == -1 && errno == ENODEV, "not in the model");
	CHECK(dmabuf_create("zz", NULL, MiB) == -1 && errno == EINVAL, "malformed address");
	CHECK(dmabuf_create("0000:04:00.0", NULL, 0) == -1 && errno == EINVAL, "size 0");
	CHECK(dmabuf_create("0000:00:00.0", NULL, MiB) == -1 && errno == EINVAL, "no driver, no name");
	fd = dmabuf_create("04:00.0", "custom_exporter", MiB);
	CHECK(fd >= 0, "short address and exporter name");
	if (fd >= 0) {
		snprintf(path, sizeof(path), "/proc/thread-self/fdinfo/%d", fd);
		CHECK(read_fdinfo(path, text, sizeof(text)) == 0 && strstr(text, "exp_name:\tcustom_exporter\n"),
		      "exporter name given: %s", text);
		close(fd);
	}
}

static int reg_dmabuf(struct ibv_pd *pd, int fd, uint64_t off, size_t len, int access)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, off, len, off, fd, access);
	if (!mr)
		return errno ? errno : -1;
	return ibv_dereg_mr(mr);
}

static void test_dmabuf_registration(void)
{
	const int lw = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_context *a = ibv_open_device(nic_a), *b = ibv_open_device(nic_b);
	struct ibv_pd *pa = a ? ibv_alloc_pd(a) : NULL, *pb = b ? ibv_alloc_pd(b) : NULL;
	int nv = dmabuf_create("0000:04:00.0", NULL, 4 * MiB);
	int hl = dmabuf_create("0000:06:00.0", NULL, 4 * MiB);
	int amd = dmabuf_create("0000:07:00.0", NULL, 4 * MiB);
	int sys = dmabuf_create(NULL, "system", 4 * MiB);
	int closed, uv = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
	int plain = memfd_create("plain", MFD_CLOEXEC);
	unsigned long calls = dmabuf_mr_calls();
	char path[64], text[512];
	struct ibv_mr *mr;

	CHECK(pa && pb && nv >= 0 && hl >= 0 && amd >= 0 && sys >= 0 && uv >= 0 && plain >= 0, "setup");
	if (!pa || !pb || nv < 0 || hl < 0 || amd < 0 || sys < 0)
		goto out;
	CHECK_ERR(reg_dmabuf(pa, nv, 0, 4 * MiB, lw), 0);              /* p2p */
	CHECK_ERR(reg_dmabuf(pa, amd, 0, MiB, lw | IBV_ACCESS_REMOTE_READ), 0); /* bounced */
	CHECK_ERR(reg_dmabuf(pa, hl, 0, MiB, lw), EOPNOTSUPP);         /* refused */
	CHECK_ERR(reg_dmabuf(pb, nv, 0, MiB, lw), EOPNOTSUPP);         /* peer blocked */
	CHECK_ERR(reg_dmabuf(pb, sys, 0, MiB, lw), 0);                 /* system memory */
	CHECK_ERR(reg_dmabuf(pb, sys, 0, MiB, lw | IBV_ACCESS_REMOTE_WRITE), 0);
	CHECK_ERR(reg_dmabuf(pa, sys, 0, MiB, lw | IBV_ACCESS_REMOTE_WRITE), EOPNOTSUPP); /* no cap */
	CHECK_ERR(reg_dmabuf(pa, nv, 3 * MiB, 2 * MiB, lw), EINVAL);   /* past the end */
	CHECK_ERR(reg_dmabuf(pa, nv, 0, 0, lw), EINVAL);
	CHECK_ERR(reg_dmabuf(pa, plain, 0, MiB, lw), EINVAL);          /* not a dma-buf */
	CHECK_ERR(reg_dmabuf(pa, uv, 0, MiB, lw), EINVAL);
	closed = dup(nv);
	close(closed);
	CHECK_ERR(reg_dmabuf(pa, closed, 0, MiB, lw), EBADF);
	CHECK_ERR(reg_dmabuf(pa, -1, 0, MiB, lw), EBADF);
	CHECK_EQ(dmabuf_mr_calls() - calls, 13);
	/* a live MR holds the dma-buf (count 2) and its PD */
	mr = ibv_reg_dmabuf_mr(pa, 0, MiB, 0, nv, lw);
	CHECK(mr != NULL, "ibv_reg_dmabuf_mr: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", nv);
	CHECK(read_fdinfo(path, text, sizeof(text)) == 0 && strstr(text, "count:\t2\n"), "count: %s", text);
	CHECK_ERR(ibv_dealloc_pd(pa), EBUSY);
	close(nv);
	nv = -1;
	if (mr)
		CHECK_ERR(ibv_dereg_mr(mr), 0);
out:
	if (pa)
		CHECK_ERR(ibv_dealloc_pd(pa), 0);
	if (pb)
		CHECK_ERR(ibv_dealloc_pd(pb), 0);
	if (a)
		ibv_close_device(a);
	if (b)
		ibv_close_device(b);
	for (int *fd = (int[]){ nv, hl, amd, sys, uv, plain }, i = 0; i < 6; i++)
		if (fd[i] >= 0)
			close(fd[i]);
}

/* ------------------------------------------------------------ descriptors */

static int query_ok(int fd)
{
	struct ib_uverbs_query_device_resp r;
	uint16_t words = sizeof(struct query_req) / 4;

	return raw_query(fd, words, sizeof(r) / 4, (uintptr_t)&r, words * 4) == 0 && r.vendor_id == 0x1d0f;
}

static void test_descriptors(void)
{
	struct get_ctx_resp g;
	char tmpl[] = "/tmp/efasim-test-XXXXXX", back[8] = { 0 };
	int fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC), d, d2, d3, reuse;
	pid_t pid;
	int status, p[2];
	char ok;

	CHECK(fd >= 0 && raw_get_context(fd, 3, &g) == 0, "setup");
	close((int)g.core.async_fd);
	/* dup shares the open file; closing one leaves the other working */
	d = dup(fd);
	d2 = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	d3 = dup3(fd, 200, O_CLOEXEC);
	CHECK(d >= 0 && d2 >= 100 && d3 == 200, "dups %d %d %d", d, d2, d3);
	close(fd);
	CHECK(query_ok(d) && query_ok(d2) && query_ok(d3), "queries through dups");
	CHECK_ERR(raw_get_context(d2, 3, &g), EINVAL); /* the same file: one context */
	/* fork: the child sees its copy of the context. It reports through a
	 * pipe and ends with SIGKILL, so that a memory checker's report on the
	 * child's exit (libnl's static data, copied) does not count. */
	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		ok = (char)query_ok(d);
		if (write(p[1], &ok, 1) == 1)
			kill(getpid(), SIGKILL);
		_exit(1);
	}
	ok = 0;
	CHECK(pid > 0 && read(p[0], &ok, 1) == 1 && ok == 1, "query in a forked child");
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	close(p[0]);
	close(p[1]);
	close(d2);
	close(d3);
	/* closed behind the emulator's back (raw system calls), the number
	 * reused by a plain file: writes go to the file */
	syscall(SYS_close, d);
	reuse = mkostemp(tmpl, O_CLOEXEC);
	CHECK(reuse >= 0, "mkostemp");
	if (reuse != d && reuse >= 0) {
		CHECK(syscall(SYS_dup3, reuse, d, O_CLOEXEC) == d, "dup3");
		syscall(SYS_close, reuse);
		reuse = d;
	}
	CHECK(write(reuse, "hello", 5) == 5, "write to the file now at that number: %s", strerror(errno));
	CHECK(pread(reuse, back, 5, 0) == 5 && !strcmp(back, "hello"), "file content %s", back);
	close(reuse);
	unlink(tmpl);
	/* close_range forgets what it closes */
	fd = open("/dev/infiniband/uverbs1", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0 && close_range((unsigned)fd, (unsigned)fd, 0) == 0, "close_range");
	CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "closed by close_range");
	/* untracked descriptors are not touched */
	CHECK(close(-1) == -1 && errno == EBADF, "close(-1)");
}

/* ------------------------------------------------------------ threads */

#define THREADS 16
#define ROUNDS 25

static void *thread_main(void *arg)
{
	struct ibv_device *dev = ((uintptr_t)arg & 1) ? nic_b : nic_a;
	char *buf = malloc(8192);
	uintptr_t bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		struct ibv_context *ctx = ibv_open_device(dev);
		struct efadv_device_attr ea;
		struct ibv_pd *pd;
		struct ibv_mr *mr;

		if (!ctx) {
			bad++;
			continue;
		}
		pd = ibv_alloc_pd(ctx);
		mr = pd ? ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE) : NULL;
		bad += !pd || !mr || efadv_query_device(ctx, &ea, sizeof(ea)) != 0 ||
		       ea.max_sq_wr != (dev == nic_a ? 4096u : 2048u);
		if (mr)
			bad += ibv_dereg_mr(mr) != 0;
		if (pd)
			bad += ibv_dealloc_pd(pd) != 0;
		bad += ibv_close_device(ctx) != 0;
	}
	free(buf);
	return (void *)bad;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	void *bad;
	int i;

	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)i) == 0, "pthread_create");
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], &bad);
		CHECK(bad == NULL, "thread %d: %lu failures", i, (unsigned long)(uintptr_t)bad);
	}
}

/* ------------------------------------------------------------ pass-through */

static int passthrough(void)
{
	char buf[8];
	int p[2];

	load_api();
	CHECK_EQ(emu_active(), 0);
	errno = 0;
	CHECK(dmabuf_create("0000:04:00.0", "nvidia", MiB) == -1 && errno == ENODEV,
	      "no emulated host: ENODEV (%s)", strerror(errno));
	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	errno = EXDEV;
	CHECK(write(p[1], "abc", 3) == 3 && read(p[0], buf, 3) == 3, "pipe io");
	CHECK_ERR(errno, EXDEV);
	CHECK(close(p[0]) == 0 && close(p[1]) == 0, "close");
	CHECK(close(p[0]) == -1 && errno == EBADF, "close twice");
	return check_exit("test_uverbs --passthrough");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--passthrough"))
		return passthrough();
	load_api();
	CHECK_EQ(emu_active(), 1);
	test_discovery();
	test_netlink();
	test_stat();
	test_open_fstat();
	test_contexts();
	test_pd_mr();
	test_raw_write();
	test_raw_ioctl();
	test_dmabuf_fake();
	test_dmabuf_registration();
	test_descriptors();
	test_threads();
	ibv_free_device_list(devs);
	return check_exit("test_uverbs");
}
