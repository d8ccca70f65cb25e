// SPDX-License-Identifier: MIT
/*
 * The emulated device as a program that writes its own WQEs sees it: a
 * minimal provider over the raw uverbs protocol (CREATE_CQ, CREATE_QP,
 * mmap of the rings and doorbells, WQEs and CQEs in the efa_io_defs.h
 * layouts) against a peer through the unmodified libibverbs/libefa.
 *
 *  - RDMA write (op type 2, as rdma-core 45+ posts it; libefa 44 cannot):
 *    into host memory, with immediate data (consumes a receive), into the
 *    memory of a fake dma-buf of an allowed pair, and into an MR without
 *    REMOTE_WRITE (remote address error);
 *  - malformed WQEs get error completions, never a crash: no meta-descriptor
 *    bit, unknown op type, bad AH, too many buffers, inline too long, bad
 *    lkey, an inline RDMA write, a doorbell far past what was written;
 *  - the driver's checks of CREATE_CQ/CREATE_QP udata and of mmap keys.
 *
 * Runs inside `efap2p sim --machine p5.48xlarge`: rdmap79s0 (4f:00.0) has
 * RDMA_WRITE in its caps (efa_defaults), max_msg_sz 8800, inline 32; the
 * H100 53:00.0 (nvidia) shares its PCIe switch: p2p.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <rdma/efa-abi.h>
#include <rdma/ib_user_verbs.h>

#include "check.h"

#define QKEY 0x5eed5eedu
#define MiB (1ul << 20)
#define SQ_N 64
#define RQ_N 64
#define CQ_N 256

/* efa_io_defs.h (rdma-core), the layouts the device reads and writes */
struct tx_buf {
	uint32_t length, lkey, lo, hi;
};
struct tx_wqe {
	uint16_t req_id;
	uint8_t ctrl1, ctrl2;
	uint16_t dest_qp_num, length;
	uint32_t imm;
	uint16_t ah, reserved;
	uint32_t qkey;
	uint8_t reserved2[12];
	union {
		struct tx_buf sgl[2];
		uint8_t inline_data[32];
		struct {
			struct tx_buf remote, local;
		} rdma;
	} d;
};
_Static_assert(sizeof(struct tx_wqe) == 64, "WQE");
struct cqe {
	uint16_t req_id;
	uint8_t status, flags;
	uint16_t qp_num, length;
	uint16_t ah, src_qp_num;
	uint32_t imm;
};
#define META_DESC 0x80
#define META_IMM 0x10
#define META_INLINE 0x20
#define C2_FIRST 0x04
#define C2_LAST 0x08
#define C2_COMP 0x10

/* ------------------------------------------------------------ raw side */

struct raw {
	int fd;
	uint32_t pd, cq, qp, qpn, ah;
	uint16_t ahn;
	volatile struct cqe *ring;
	uint32_t *cqdb, *sqdb, *rqdb;
	struct tx_wqe *sq;
	uint32_t pc, cc;
	uint8_t *buf;
	uint32_t mr, lkey;
	struct efa_ibv_create_cq_resp cqr;
	struct efa_ibv_create_qp_resp qpr;
};

static int raw_write(int fd, void *req, size_t len)
{
	return write(fd, req, len) == (ssize_t)len ? 0 : errno;
}

static int get_context(struct raw *r)
{
	struct {
		struct ib_uverbs_get_context_resp core;
		struct efa_ibv_alloc_ucontext_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
		struct efa_ibv_alloc_ucontext_cmd efa;
	} req = { { IB_USER_VERBS_CMD_GET_CONTEXT, sizeof(req) / 4, sizeof(resp) / 4 },
		  { (uintptr_t)&resp }, { 3, { 0 } } };
	int rc = raw_write(r->fd, &req, sizeof(req));

	if (!rc)
		close((int)resp.core.async_fd);
	return rc;
}

static int alloc_pd(struct raw *r)
{
	struct {
		struct ib_uverbs_alloc_pd_resp core;
		struct efa_ibv_alloc_pd_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd core;
	} req = { { IB_USER_VERBS_CMD_ALLOC_PD, sizeof(req) / 4, sizeof(resp) / 4 }, { (uintptr_t)&resp } };
	int rc = raw_write(r->fd, &req, sizeof(req));

	r->pd = resp.core.pd_handle;
	return rc;
}

static int reg_mr(struct raw *r, void *addr, size_t len)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_reg_mr core;
	} req = { { IB_USER_VERBS_CMD_REG_MR, sizeof(req) / 4, sizeof(resp) / 4 },
		  { (uintptr_t)&resp, (uintptr_t)addr, len, (uintptr_t)addr, r->pd,
		    IBV_ACCESS_LOCAL_WRITE } };
	int rc = raw_write(r->fd, &req, sizeof(req));

	r->mr = resp.mr_handle;
	r->lkey = resp.lkey;
	return rc;
}

static int create_cq(struct raw *r, uint32_t entry, uint16_t nsub, uint32_t inlen)
{
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct efa_ibv_create_cq_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq core;
		struct efa_ibv_create_cq efa;
	} req = { { IB_USER_VERBS_CMD_CREATE_CQ, 0, sizeof(resp) / 4 },
		  { (uintptr_t)&resp, 0, CQ_N, 0, -1, 0 }, { 0, entry, nsub, 0, { 0 } } };
	size_t len = sizeof(req) - sizeof(req.efa) + inlen;
	int rc;

	req.hdr.in_words = (uint16_t)(len / 4);
	rc = raw_write(r->fd, &req, len);
	r->cq = resp.core.cq_handle;
	r->cqr = resp.efa;
	return rc;
}

static int create_qp(struct raw *r, uint32_t sq_bytes, uint32_t driver_type, uint32_t comp_mask)
{
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct efa_ibv_create_qp_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp core;
		struct efa_ibv_create_qp efa;
	} req = { { IB_USER_VERBS_CMD_CREATE_QP, sizeof(req) / 4, sizeof(resp) / 4 },
		  { (uintptr_t)&resp, 0, r->pd, r->cq, r->cq, 0, SQ_N, RQ_N, 2, 1, 0, 1, 0xff, 0, 0 },
		  { comp_mask, RQ_N * 16, sq_bytes, driver_type } };
	int rc = raw_write(r->fd, &req, sizeof(req));

	r->qp = resp.core.qp_handle;
	r->qpn = resp.core.qpn;
	r->qpr = resp.efa;
	return rc;
}

static int modify(struct raw *r, uint8_t state, uint32_t mask)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_modify_qp core;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_MODIFY_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.core.qp_handle = r->qp;
	req.core.attr_mask = mask;
	req.core.qp_state = state;
	req.core.qkey = QKEY;
	req.core.port_num = 1;
	req.core.rnr_retry = 7;
	return raw_write(r->fd, &req, sizeof(req));
}

static int create_ah(struct raw *r, const union ibv_gid *gid)
{
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct efa_ibv_create_ah_resp efa;
	} resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_ah core;
	} req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.hdr = (struct ib_uverbs_cmd_hdr){ IB_USER_VERBS_CMD_CREATE_AH, sizeof(req) / 4, sizeof(resp) / 4 };
	req.core.response = (uintptr_t)&resp;
	req.core.pd_handle = r->pd;
	req.core.attr.is_global = 1;
	req.core.attr.port_num = 1;
	memcpy(req.core.attr.grh.dgid, gid->raw, 16);
	rc = raw_write(r->fd, &req, sizeof(req));
	r->ah = resp.core.ah_handle;
	r->ahn = resp.efa.efa_address_handle;
	return rc;
}

static void *map(struct raw *r, uint64_t key, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, r->fd, (off_t)key);

	CHECK(p != MAP_FAILED, "mmap key %#llx length %zu: %s", (unsigned long long)key, len,
	      strerror(errno));
	return p == MAP_FAILED ? NULL : p;
}

static int raw_open(struct raw *r, const char *dev)
{
	char path[64];
	long ps = sysconf(_SC_PAGESIZE);

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "/dev/infiniband/%s", dev);
	r->fd = open(path, O_RDWR | O_CLOEXEC);
	if (r->fd < 0 || get_context(r) || alloc_pd(r))
		return -1;
	r->buf = aligned_alloc(4096, 64 * 1024);
	memset(r->buf, 0, 64 * 1024);
	if (reg_mr(r, r->buf, 64 * 1024) || create_cq(r, 16, 1, sizeof(struct efa_ibv_create_cq)))
		return -1;
	r->ring = map(r, r->cqr.q_mmap_key, r->cqr.q_mmap_size, PROT_READ);
	r->cqdb = map(r, r->cqr.db_mmap_key, (size_t)ps, PROT_WRITE);
	if (create_qp(r, SQ_N * 64, EFA_QP_DRIVER_TYPE_SRD, 0))
		return -1;
	r->sq = map(r, r->qpr.llq_desc_mmap_key, SQ_N * 64, PROT_WRITE);
	r->sqdb = map(r, r->qpr.sq_db_mmap_key, (size_t)ps, PROT_WRITE);
	CHECK(map(r, r->qpr.rq_mmap_key, r->qpr.rq_mmap_size, PROT_WRITE) != NULL, "RQ ring");
	r->rqdb = map(r, r->qpr.rq_db_mmap_key, (size_t)ps, PROT_WRITE);
	if (!r->ring || !r->sq || !r->sqdb)
		return -1;
	if (modify(r, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ||
	    modify(r, IBV_QPS_RTR, IBV_QP_STATE) ||
	    modify(r, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY))
		return -1;
	return 0;
}

/* Posts one WQE (the phase bit as libefa sets it) and rings the doorbell. */
static void post(struct raw *r, struct tx_wqe *w, uint16_t req_id)
{
	w->req_id = req_id;
	if (w->ctrl2 & C2_FIRST)
		w->ctrl2 |= (uint8_t)((r->pc / SQ_N) & 1);
	memcpy(&r->sq[r->pc % SQ_N], w, sizeof(*w));
	r->pc++;
	__atomic_store_n(r->sqdb, r->pc & 0xffff, __ATOMIC_RELEASE);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next CQE by the phase protocol (phase 1 on the first lap), within 5 s. */
static bool raw_poll(struct raw *r, struct cqe *out)
{
	double end = now() + 5;
	unsigned int phase = ((r->cc / CQ_N) & 1) ? 0 : 1;
	volatile struct cqe *c = &r->ring[r->cc % CQ_N];

	while ((__atomic_load_n(&c->flags, __ATOMIC_ACQUIRE) & 1) != phase)
		if (now() > end) {
			CHECK(0, "no completion within 5 s");
			return false;
		}
	memcpy(out, (const void *)c, sizeof(*out));
	r->cc++;
	*r->cqdb = r->cc & 0xffff;
	return true;
}

static struct tx_wqe rdma_write(struct raw *r, uint32_t qpn, uint32_t rkey, uint64_t raddr, void *local,
				uint32_t len, bool imm)
{
	struct tx_wqe w = { 0 };

	w.ctrl1 = META_DESC | 2 | (imm ? META_IMM : 0);
	w.ctrl2 = C2_FIRST | C2_LAST | C2_COMP;
	w.dest_qp_num = (uint16_t)qpn;
	w.length = 1;
	w.imm = 0xfeedf00d;
	w.ah = r->ahn;
	w.qkey = QKEY;
	w.d.rdma.remote = (struct tx_buf){ len, rkey, (uint32_t)raddr, (uint32_t)(raddr >> 32) };
	w.d.rdma.local = (struct tx_buf){ len, r->lkey, (uint32_t)(uintptr_t)local,
					  (uint32_t)((uintptr_t)local >> 32) };
	return w;
}

static struct tx_wqe send_wqe(struct raw *r, uint32_t qpn, void *local, uint32_t len)
{
	struct tx_wqe w = { 0 };

	w.ctrl1 = META_DESC;
	w.ctrl2 = C2_FIRST | C2_LAST | C2_COMP;
	w.dest_qp_num = (uint16_t)qpn;
	w.length = 1;
	w.ah = r->ahn;
	w.qkey = QKEY;
	w.d.sgl[0] = (struct tx_buf){ len, r->lkey, (uint32_t)(uintptr_t)local,
				      (uint32_t)((uintptr_t)local >> 32) };
	return w;
}

/* ------------------------------------------------------------ the peer */

struct peer {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr, *ro;
	union ibv_gid gid;
};

/* kept to the end: libibverbs' devices stay reachable for leak checkers */
static struct ibv_device **devs;

static int peer_open(struct peer *p, const char *name)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_DRIVER, .cap = { 16, 16, 1, 1, 0 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	int i;

	devs = ibv_get_device_list(NULL);
	for (i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), name))
			p->ctx = ibv_open_device(devs[i]);
	if (!p->ctx)
		return -1;
	p->pd = ibv_alloc_pd(p->ctx);
	p->cq = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = p->cq;
	p->qp = efadv_create_driver_qp(p->pd, &ia, EFADV_QP_DRIVER_TYPE_SRD);
	if (!p->qp || ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -1;
	p->buf = aligned_alloc(4096, 128 * 1024);
	memset(p->buf, 0, 128 * 1024);
	p->mr = ibv_reg_mr(p->pd, p->buf, 64 * 1024,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	p->ro = ibv_reg_mr(p->pd, p->buf + 64 * 1024, 64 * 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	return (p->mr && p->ro && !ibv_query_gid(p->ctx, 1, 0, &p->gid)) ? 0 : -1;
}

static bool peer_poll(struct peer *p, struct ibv_wc *wc)
{
	double end = now() + 5;

	while (now() < end)
		if (ibv_poll_cq(p->cq, 1, wc) == 1)
			return true;
	CHECK(0, "peer: no completion within 5 s");
	return false;
}

/* ------------------------------------------------------------ tests */

static const char *uverbs_of(const char *ibdev)
{
	static char name[32];
	char path[4096], buf[64];
	const char *root = getenv("SYSFS_PATH");
	int i;

	for (i = 0; i < 64 && root; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/class/infiniband_verbs/uverbs%d/ibdev", root, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && !strncmp(buf, ibdev, strlen(ibdev)) &&
		    buf[strlen(ibdev)] == '\n') {
			fclose(f);
			snprintf(name, sizeof(name), "uverbs%d", i);
			return name;
		}
		fclose(f);
	}
	return NULL;
}

static void test_udata_checks(const char *dev)
{
	struct raw r;
	char path[64];

	memset(&r, 0, sizeof(r));
	snprintf(path, sizeof(path), "/dev/infiniband/%s", dev);
	r.fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK_ERR(get_context(&r), 0);
	CHECK_ERR(alloc_pd(&r), 0);
	CHECK_ERR(create_cq(&r, 24, 1, sizeof(struct efa_ibv_create_cq)), EINVAL); /* entry size */
	CHECK_ERR(create_cq(&r, 16, 2, sizeof(struct efa_ibv_create_cq)), EINVAL); /* sub CQs */
	CHECK_ERR(create_cq(&r, 16, 1, 8), EINVAL); /* udata short of num_sub_cqs */
	CHECK_ERR(create_cq(&r, 16, 1, sizeof(struct efa_ibv_create_cq)), 0);
	CHECK_ERR(create_qp(&r, SQ_N * 64 - 64, EFA_QP_DRIVER_TYPE_SRD, 0), EINVAL); /* not 2^n WQEs */
	CHECK_ERR(create_qp(&r, SQ_N * 64, 5, 0), EOPNOTSUPP);                      /* driver QP type */
	CHECK_ERR(create_qp(&r, SQ_N * 64, EFA_QP_DRIVER_TYPE_SRD, 1), EINVAL);     /* comp_mask */
	/* mmap: only the CQ's own keys, at their size, shared */
	errno = 0;
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, r.fd, 0) == MAP_FAILED && errno == EINVAL,
	      "mmap key 0: %d", errno);
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, r.fd, (off_t)r.cqr.q_mmap_key + 4096 * 100) ==
		      MAP_FAILED && errno == EINVAL, "mmap of no region: %d", errno);
	CHECK(mmap(NULL, r.cqr.q_mmap_size * 2, PROT_READ, MAP_SHARED, r.fd, (off_t)r.cqr.q_mmap_key) ==
		      MAP_FAILED && errno == EINVAL, "mmap too long: %d", errno);
	CHECK(mmap(NULL, r.cqr.q_mmap_size, PROT_READ, MAP_PRIVATE, r.fd, (off_t)r.cqr.q_mmap_key) ==
		      MAP_FAILED && errno == EINVAL, "mmap private: %d", errno);
	close(r.fd);
}

static void test_rdma_write(struct raw *r, struct peer *p)
{
	int (*dmabuf_create)(const char *, const char *, size_t) =
		(int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT, "efasim_dmabuf_create");
	struct tx_wqe w;
	struct ibv_wc wc;
	struct cqe c;
	struct ibv_mr *dmr;
	uint8_t *gpu;
	int fd, i;

	for (i = 0; i < 8192; i++)
		r->buf[i] = (uint8_t)(i * 7 + 1);
	/* into host memory */
	w = rdma_write(r, p->qp->qp_num, p->mr->rkey, (uintptr_t)p->buf + 4096, r->buf, 8192, false);
	post(r, &w, 1);
	if (raw_poll(r, &c)) {
		CHECK_EQ(c.status, 0);
		CHECK_EQ(c.req_id, 1);
		CHECK_EQ((c.flags >> 1) & 3, 1);  /* the send queue */
		CHECK_EQ((c.flags >> 4) & 7, 2);  /* op type RDMA write, as newer devices report */
	}
	CHECK(!memcmp(p->buf + 4096, r->buf, 8192), "RDMA write: bytes differ");
	/* with immediate: the target's receive reports it */
	{
		struct ibv_sge sge = { (uintptr_t)p->buf, 64, p->mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK_ERR(ibv_post_recv(p->qp, &rw, &bad), 0);
	}
	w = rdma_write(r, p->qp->qp_num, p->mr->rkey, (uintptr_t)p->buf + 20000, r->buf, 100, true);
	post(r, &w, 2);
	CHECK(raw_poll(r, &c) && c.status == 0 && c.req_id == 2, "write with imm: status %u", c.status);
	if (peer_poll(p, &wc)) {
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 9);
		CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "no imm flag");
		CHECK_EQ(be32toh(wc.imm_data), 0xfeedf00d);
	}
	CHECK(!memcmp(p->buf + 20000, r->buf, 100), "write with imm: bytes differ");
	/* into an MR without REMOTE_WRITE: the remote address error (7) */
	w = rdma_write(r, p->qp->qp_num, p->ro->rkey, (uintptr_t)p->buf + 65536, r->buf, 64, false);
	post(r, &w, 3);
	CHECK(raw_poll(r, &c) && c.status == 7, "no REMOTE_WRITE: status %u", c.status);
	/* into the GPU's memory: a dma-buf MR of an allowed pair */
	fd = dmabuf_create ? dmabuf_create("0000:53:00.0", NULL, 4 * MiB) : -1;
	CHECK(fd >= 0, "dma-buf");
	if (fd < 0)
		return;
	gpu = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	dmr = ibv_reg_dmabuf_mr(p->pd, MiB, MiB, 0, fd,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(dmr != NULL && gpu != MAP_FAILED, "dma-buf MR: %s", strerror(errno));
	if (dmr && gpu != MAP_FAILED) {
		w = rdma_write(r, p->qp->qp_num, dmr->rkey, 8192, r->buf, 8192, false);
		post(r, &w, 4);
		CHECK(raw_poll(r, &c) && c.status == 0, "write to the GPU: status %u", c.status);
		CHECK(!memcmp(gpu + MiB + 8192, r->buf, 8192), "bytes in the GPU's memory differ");
		ibv_dereg_mr(dmr);
	}
	if (gpu != MAP_FAILED)
		munmap(gpu, 4 * MiB);
	close(fd);
}

static void test_malformed(struct raw *r, struct peer *p)
{
	static const struct {
		const char *what;
		uint8_t status;
	} want[] = {
		{ "no meta-descriptor bit", 2 }, { "op type 9", 3 }, { "an AH nobody made", 4 },
		{ "three buffers", 2 }, { "inline of 40 bytes", 6 }, { "an lkey nobody registered", 5 },
		{ "9000 bytes (max_msg_sz 8800)", 6 }, { "RDMA write of two buffers", 2 },
		/* inline data over the remote address, as rdma-core 56's
		 * ibv_wr_set_inline_data writes it after ibv_wr_rdma_write: a
		 * 64-byte WQE cannot carry an inline RDMA write (UNSUPPORTED_OP) */
		{ "an inline RDMA write", 3 },
	};
	struct tx_wqe w;
	struct cqe c;
	unsigned int i;
	uint32_t qpn = p->qp->qp_num;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		w = send_wqe(r, qpn, r->buf, 64);
		switch (i) {
		case 0: w.ctrl1 &= (uint8_t)~META_DESC; break;
		case 1: w.ctrl1 = META_DESC | 9; break;
		case 2: w.ah = 999; break;
		case 3: w.length = 3; break;
		case 4: w.ctrl1 |= META_INLINE; w.length = 40; break;
		case 5: w.d.sgl[0].lkey = 0x777777; break;
		case 6: w.d.sgl[0].length = 9000; break;
		case 7: w = rdma_write(r, qpn, p->mr->rkey, (uintptr_t)p->buf, r->buf, 64, false);
			w.length = 2; break;
		case 8: w = rdma_write(r, qpn, p->mr->rkey, (uintptr_t)p->buf, r->buf, 64, false);
			memcpy(w.d.inline_data, r->buf, 2);
			w.ctrl1 |= META_INLINE;
			w.length = 2; break;
		}
		post(r, &w, (uint16_t)(100 + i));
		if (raw_poll(r, &c)) {
			CHECK(c.status == want[i].status && c.req_id == 100 + i, "%s: status %u (want %u), req_id %u",
			      want[i].what, c.status, want[i].status, c.req_id);
		}
	}
	/* a doorbell 40 WQEs past what was written (zeros): each answered with
	 * an error, none a crash */
	for (i = 0; i < 40; i++)
		memset(&r->sq[(r->pc + i) % SQ_N], 0, sizeof(struct tx_wqe));
	r->pc += 40;
	__atomic_store_n(r->sqdb, r->pc & 0xffff, __ATOMIC_RELEASE);
	for (i = 0; i < 40; i++)
		if (!raw_poll(r, &c) || c.status != 2) {
			CHECK(0, "junk WQE %u: status %u", i, c.status);
			break;
		}
	/* and the queue still works */
	w = send_wqe(r, qpn, r->buf, 64);
	{
		struct ibv_sge sge = { (uintptr_t)p->buf, 64, p->mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 11, .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_wc wc;

		CHECK_ERR(ibv_post_recv(p->qp, &rw, &bad), 0);
		post(r, &w, 7);
		CHECK(raw_poll(r, &c) && c.status == 0 && c.req_id == 7, "a good send after the junk: %u",
		      c.status);
		CHECK(peer_poll(p, &wc) && wc.wr_id == 11 && wc.status == IBV_WC_SUCCESS, "received");
	}
}

int main(void)
{
	const char *dev = uverbs_of("rdmap79s0");
	struct peer p = { 0 };
	struct raw r;

	CHECK(dev != NULL, "rdmap79s0 not found: run in efap2p sim --machine p5.48xlarge");
	if (!dev)
		return check_exit("test_wqe");
	test_udata_checks(dev);
	CHECK(peer_open(&p, "rdmap79s0") == 0, "peer: %s", strerror(errno));
	CHECK(raw_open(&r, dev) == 0, "raw QP: %s", strerror(errno));
	if (check_failures)
		return check_exit("test_wqe");
	CHECK_ERR(create_ah(&r, &p.gid), 0);
	test_rdma_write(&r, &p);
	test_malformed(&r, &p);
	close(r.fd); /* the kernel's cleanup: QP, AH, CQ, MR, PD */
	free(r.buf);
	ibv_destroy_qp(p.qp);
	ibv_dereg_mr(p.mr);
	ibv_dereg_mr(p.ro);
	ibv_destroy_cq(p.cq);
	ibv_dealloc_pd(p.pd);
	ibv_close_device(p.ctx);
	free(p.buf);
	return check_exit("test_wqe");
}
