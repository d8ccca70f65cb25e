// SPDX-License-Identifier: MIT
/*
 * What the emulated kernel accepts and refuses follows the release of the
 * model's efa driver, whatever rdma-core the emulator and this test were
 * built with:
 *
 *  - CREATE_QP's efa udata (efa_create_qp): up to 6.9 the command ends at
 *    driver_qp_type and anything after it must be zero (EINVAL); 6.10 adds
 *    flags (UNSOLICITED_WRITE_RECV where the device has it, else
 *    EOPNOTSUPP, as for an unknown flag) and reserved bytes (EINVAL unless
 *    zero); 6.13 gives the first reserved byte to sl;
 *  - the efa driver's MR_QUERY ioctl (efadv_query_mr): from 6.8, before it
 *    EPROTONOSUPPORT (no such method);
 *  - the device caps the driver reports: RDMA_WRITE from 6.4,
 *    UNSOLICITED_WRITE_RECV from 6.10;
 *  - dma-buf MRs (ibv_reg_dmabuf_mr): uverbs' method from 5.12, the efa
 *    driver's support from 5.16 (before, EPROTONOSUPPORT).
 *
 * Both over the raw uverbs protocol (what any libefa sends) and, where the
 * installed libefa has them (rdma-core 52+), through efadv_create_qp_ex and
 * efadv_query_mr.
 *
 * Usage: test_kernel_abi RELEASE IBDEV=CAPS..., run inside `efap2p sim`
 * with a model whose efa driver has that release's ABI (the kernel's
 * in-tree driver, or AWS's out-of-tree one: 2.17.3g on p5.48xlarge's 6.8
 * has 6.13's); CAPS are the model device's own caps: r RDMA_READ, w
 * RDMA_WRITE, u UNSOLICITED_WRITE_RECV ("-" none).
 * The expectations below are the kernel's rules, written by hand.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "check.h"

/* efa_ibv_create_qp as 6.13 lays it out (include/uapi/rdma/efa-abi.h) */
struct efa_qp_udata {
	uint32_t comp_mask, rq_ring_size, sq_ring_size, driver_qp_type;
	uint16_t flags;
	uint8_t sl;
	uint8_t reserved[5];
};
#define QP_UNSOLICITED_WRITE_RECV 1

/* the release as major << 8 | minor */
static unsigned int release;

static bool at_least(unsigned int major, unsigned int minor)
{
	return release >= (major << 8 | minor);
}

struct dev {
	const char *name;
	bool read, write, unsol; /* the device's own caps */
};

/* CREATE_QP over write(): SRD, 64 SQ WQEs, 64 RQ descriptors, the efa udata
 * of udata_len bytes from u (then zeros up to 32 bytes); 0 or the errno. The
 * QP made is destroyed. */
static int raw_create_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
			 const struct efa_qp_udata *u, size_t udata_len)
{
	struct {
		struct ib_uverbs_create_qp_resp core;
		uint8_t efa[72];
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp core;
		uint8_t efa[32];
	} req;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp core;
	} del;
	struct ib_uverbs_destroy_qp_resp dresp;
	size_t len = sizeof(req.hdr) + sizeof(req.core) + udata_len;

	memset(&req, 0, sizeof(req));
	memcpy(req.efa, u, udata_len < sizeof(*u) ? udata_len : sizeof(*u));
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = (uint16_t)(len / 4);
	req.hdr.out_words = (uint16_t)(sizeof(resp) / 4);
	req.core.response = (uintptr_t)&resp;
	req.core.pd_handle = pd->handle;
	req.core.send_cq_handle = req.core.recv_cq_handle = cq->handle;
	req.core.max_send_wr = 64;
	req.core.max_recv_wr = 64;
	req.core.max_send_sge = 1;
	req.core.max_recv_sge = 1;
	req.core.sq_sig_all = 1;
	req.core.qp_type = IBV_QPT_DRIVER;
	if (write(ctx->cmd_fd, &req, len) != (ssize_t)len)
		return errno;
	memset(&del, 0, sizeof(del));
	del.hdr.command = IB_USER_VERBS_CMD_DESTROY_QP;
	del.hdr.in_words = sizeof(del) / 4;
	del.hdr.out_words = sizeof(dresp) / 4;
	del.core.response = (uintptr_t)&dresp;
	del.core.qp_handle = resp.core.qp_handle;
	CHECK(write(ctx->cmd_fd, &del, sizeof(del)) == sizeof(del), "DESTROY_QP: %s", strerror(errno));
	return 0;
}

static void test_create_qp(struct ibv_context *ctx, const struct dev *d)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	struct efa_qp_udata u;
	int want;

	CHECK(pd && cq, "%s: PD or CQ: %s", d->name, strerror(errno));
	if (!pd || !cq)
		return;
#define BASE() (memset(&u, 0, sizeof(u)), u.rq_ring_size = 64 * 16, u.sq_ring_size = 64 * 64)
	/* libefa 44's command (16 bytes), and 56's with nothing set: every release */
	BASE();
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 16), 0);
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), 0);
	/* the unsolicited flag: unknown trailing bytes before 6.10; then the
	 * device decides */
	BASE();
	u.flags = QP_UNSOLICITED_WRITE_RECV;
	want = !at_least(6, 10) ? EINVAL : d->unsol ? 0 : EOPNOTSUPP;
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), want);
	/* a flag no release knows */
	BASE();
	u.flags = 2;
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), at_least(6, 10) ? EOPNOTSUPP : EINVAL);
	/* a service level: a reserved byte before 6.13 */
	BASE();
	u.sl = 8;
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), at_least(6, 13) ? 0 : EINVAL);
	/* the reserved bytes, and what lies past the command */
	BASE();
	u.reserved[4] = 1;
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), EINVAL);
	BASE();
	u.comp_mask = 1;
	CHECK_ERR(raw_create_qp(ctx, pd, cq, &u, 24), EINVAL);
#undef BASE
#ifdef HAVE_EFADV_QP_FLAGS
	/* libefa 52+ asks only for what the kernel reports (device caps) */
	{
		struct ibv_qp_init_attr_ex ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_DRIVER,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
		};
		struct efadv_qp_init_attr ea = {
			.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD,
			.flags = EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV,
		};
		struct ibv_qp *qp = efadv_create_qp_ex(ctx, &ia, &ea, sizeof(ea));
		bool reported = at_least(6, 10) && d->unsol;

		CHECK((qp != NULL) == reported, "%s: efadv_create_qp_ex with the unsolicited flag: %s, "
		      "want %s", d->name, qp ? "made" : strerror(errno), reported ? "made" : "refused");
		if (qp)
			ibv_destroy_qp(qp);
		else if (!reported)
			CHECK_ERR(errno, EOPNOTSUPP);
	}
#endif
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
}

/* EFA_IB_METHOD_MR_QUERY over RDMA_VERBS_IOCTL: 0 or the errno; *validity,
 * and whether each output was marked valid. */
static int raw_query_mr(struct ibv_context *ctx, struct ibv_mr *mr, uint16_t out[4], bool *marked)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[5];
	} req;
	int i;

	memset(&req, 0, sizeof(req));
	req.hdr.length = sizeof(req);
	req.hdr.object_id = 7; /* UVERBS_OBJECT_MR */
	req.hdr.method_id = 0x1000; /* EFA_IB_METHOD_MR_QUERY */
	req.hdr.num_attrs = 5;
	req.hdr.driver_id = 17; /* RDMA_DRIVER_EFA */
	req.attrs[0].attr_id = 0x1000;
	req.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	req.attrs[0].data = mr->handle;
	for (i = 0; i < 4; i++) {
		out[i] = 0xffff;
		req.attrs[i + 1].attr_id = (uint16_t)(0x1001 + i);
		req.attrs[i + 1].len = 2;
		req.attrs[i + 1].flags = UVERBS_ATTR_F_MANDATORY;
		req.attrs[i + 1].data = (uintptr_t)&out[i];
	}
	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &req))
		return errno;
	*marked = true;
	for (i = 1; i < 5; i++)
		*marked = *marked && (req.attrs[i].flags & UVERBS_ATTR_F_VALID_OUTPUT);
	return 0;
}

static void test_query_mr(struct ibv_context *ctx, const struct dev *d)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	void *buf = calloc(1, 8192);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE) : NULL;
	/* validity: receives always; RDMA read responses with RDMA_READ;
	 * RDMA write receives with RDMA_WRITE as the release reports it */
	uint16_t want = 1 | (d->read ? 2 : 0) | (d->write && at_least(6, 4) ? 4 : 0);
	uint16_t out[4];
	bool marked = false;

	CHECK(mr != NULL, "%s: MR: %s", d->name, strerror(errno));
	if (!mr)
		goto out;
	if (at_least(6, 8)) {
		CHECK_ERR(raw_query_mr(ctx, mr, out, &marked), 0);
		CHECK_EQ(out[0], want);
		CHECK(marked, "%s: the outputs were not marked valid", d->name);
	} else {
		CHECK_ERR(raw_query_mr(ctx, mr, out, &marked), EPROTONOSUPPORT);
	}
#ifdef HAVE_EFADV_QUERY_MR
	{
		struct efadv_mr_attr a;

		memset(&a, 0, sizeof(a));
		CHECK_ERR(efadv_query_mr(mr, &a, sizeof(a)), at_least(6, 8) ? 0 : EPROTONOSUPPORT);
		if (at_least(6, 8))
			CHECK_EQ(a.ic_id_validity, want);
	}
#endif
	ibv_dereg_mr(mr);
out:
	if (pd)
		ibv_dealloc_pd(pd);
	free(buf);
}

/* ibv_reg_dmabuf_mr (uverbs' REG_DMABUF_MR, ioctl only) of a system-memory
 * dma-buf: uverbs has the method from 5.12, for a driver with dma-buf MRs
 * (the in-tree efa from 5.16); before, no such method: the kernel's
 * EPROTONOSUPPORT, which libibverbs passes on. */
static void test_dmabuf(struct ibv_context *ctx, const struct dev *d)
{
	int (*create)(const char *, const char *, size_t) =
		(int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT, "efasim_dmabuf_create");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	int fd = create ? create(NULL, "system", 1 << 20) : -1;

	CHECK(pd && fd >= 0, "%s: PD or dma-buf: %s", d->name, strerror(errno));
	if (!pd || fd < 0)
		goto out;
	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 1 << 20, 0, fd, IBV_ACCESS_LOCAL_WRITE);
	if (at_least(5, 16)) {
		CHECK(mr != NULL, "%s: dma-buf MR: %s", d->name, strerror(errno));
	} else {
		CHECK(mr == NULL, "%s: a dma-buf MR before 5.16", d->name);
		CHECK_ERR(errno, EPROTONOSUPPORT);
	}
	if (mr)
		ibv_dereg_mr(mr);
out:
	if (fd >= 0)
		close(fd);
	if (pd)
		ibv_dealloc_pd(pd);
}

static void test_caps(struct ibv_context *ctx, const struct dev *d)
{
	struct efadv_device_attr a;

	memset(&a, 0, sizeof(a));
	CHECK_ERR(efadv_query_device(ctx, &a, sizeof(a)), 0);
#ifdef HAVE_EFADV_QP_FLAGS
	CHECK_EQ(!!(a.device_caps & EFADV_DEVICE_ATTR_CAPS_UNSOLICITED_WRITE_RECV),
		 at_least(6, 10) && d->unsol);
	CHECK_EQ(!!(a.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE), at_least(6, 4) && d->write);
#else
	(void)d;
#endif
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	unsigned int major = 0, minor = 0;
	int i, j, n, found = 0;

	if (argc < 3 || sscanf(argv[1], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: test_kernel_abi RELEASE IBDEV=CAPS...\n");
		return 2;
	}
	release = major << 8 | minor;
	list = ibv_get_device_list(&n);
	CHECK(list && n > 0, "no devices: run inside efap2p sim");
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		struct dev d = { 0 };

		if (!eq)
			return 2;
		*eq = '\0';
		d.name = argv[i];
		d.read = strchr(eq + 1, 'r') != NULL;
		d.write = strchr(eq + 1, 'w') != NULL;
		d.unsol = strchr(eq + 1, 'u') != NULL;
		for (j = 0; list && j < n; j++) {
			struct ibv_context *ctx;

			if (strcmp(ibv_get_device_name(list[j]), d.name))
				continue;
			found++;
			ctx = ibv_open_device(list[j]);
			CHECK(ctx != NULL, "%s: %s", d.name, strerror(errno));
			if (!ctx)
				continue;
			test_caps(ctx, &d);
			test_create_qp(ctx, &d);
			test_query_mr(ctx, &d);
			test_dmabuf(ctx, &d);
			ibv_close_device(ctx);
		}
	}
	CHECK_EQ(found, argc - 2);
	if (list)
		ibv_free_device_list(list);
	printf("kernel %u.%u\n", major, minor);
	return check_exit("test_kernel_abi");
}
