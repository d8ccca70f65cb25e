// SPDX-License-Identifier: MIT
/*
 * The emulator's data path through the unmodified libibverbs and libefa:
 * CQs (plain, extended, efadv), UD and SRD QPs and their state machine,
 * AHs and efadv_query_ah, sends with and without immediate data, RDMA
 * reads into host memory and into fake dma-buf memory, and the errors the
 * device reports (RNR, unknown QPN, unknown GID, bad lkey, lengths, flush).
 *
 * Runs inside `efap2p sim --model ctests/emulator/refused.json`. Expected
 * values, read by hand from that model and the efa driver's rules:
 *   rdmap3s0 (03:00.0): caps RDMA_READ, RNR_RETRY, CQ_NOTIFICATIONS,
 *     CQ_WITH_SGID (no RDMA_WRITE); max_sq_wr 4096, max_rq_wr 32768,
 *     sge 2/3, inline 32; builtin max_cqe 32768, max_cq 512, max_msg_sz
 *     0x2260 (8800); one completion vector.
 *   rdmap5s0 (05:00.0): caps RDMA_READ, RDMA_WRITE (and CQ_WITH_SGID, which
 *     the driver sets for every device); sge 1/2, inline 64;
 *     peer access blocked (every dma-buf refused).
 *   GIDs fe80::<domain>:<bus><devfn>:1: rdmap3s0 fe80::300:1, rdmap5s0
 *     fe80::500:1.
 *   dma-buf owner 04:00.0 (nvidia): p2p with rdmap3s0.
 * Completion statuses as libefa maps the device's: RNR 10 ->
 * IBV_WC_RNR_RETRY_EXC_ERR, bad dest QPN 9 -> IBV_WC_REM_INV_RD_REQ_ERR,
 * bad address 7 -> IBV_WC_GENERAL_ERR before rdma-core 52,
 * IBV_WC_REM_ACCESS_ERR from 52 (ctests/stack.py: BAD_ADDRESS_STATUS),
 * bad lkey 5 -> IBV_WC_LOC_PROT_ERR,
 * bad length 6 -> IBV_WC_LOC_LEN_ERR, remote bad length 11 ->
 * IBV_WC_REM_INV_REQ_ERR, flushed 1 -> IBV_WC_WR_FLUSH_ERR.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "../stack.h"

#define QKEY 0x11111111u
#define MSG 4096
#define MiB (1ul << 20)

static int (*dmabuf_create)(const char *, const char *, size_t);

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	uint8_t *buf;
	struct ibv_mr *mr;
	union ibv_gid gid;
};

static struct ibv_device **devs;

static struct ibv_context *open_dev(const char *name)
{
	int i;

	for (i = 0; devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), name))
			return ibv_open_device(devs[i]);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One completion within 5 s, or a failed check (never a hang). */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double end = now() + 5;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	} while (now() < end);
	CHECK(0, "no completion within 5 s");
	return 0;
}

/* No completion for 200 ms. */
static void poll_none(struct ibv_cq *cq)
{
	double end = now() + 0.2;
	struct ibv_wc wc;

	while (now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion: status %d", wc.status);
}

static int to_rts(struct ibv_qp *qp, int rnr_retry)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	int rc;

	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.rnr_retry = (uint8_t)rnr_retry;
	if (rnr_retry >= 0)
		mask |= IBV_QP_RNR_RETRY;
	return rc ? rc : ibv_modify_qp(qp, &a, mask);
}

/* A QP in RTS with a buffer of 4 MSG registered; ops and access are
 * added to the send ops and the MR's access flags. */
static void side_open_with(struct side *s, const char *dev, bool srd, int rnr_retry, uint64_t ops,
			   int access)
{
	struct ibv_qp_init_attr_ex ia = { 0 };
	struct efadv_qp_init_attr ea = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };

	memset(s, 0, sizeof(*s));
	s->ctx = open_dev(dev);
	CHECK(s->ctx != NULL, "open %s", dev);
	if (!s->ctx)
		exit(check_exit("test_datapath"));
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	CHECK(s->pd && s->cq, "PD and CQ on %s: %s", dev, strerror(errno));
	ia.qp_type = srd ? IBV_QPT_DRIVER : IBV_QPT_UD;
	ia.send_cq = ia.recv_cq = s->cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = s->pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    (srd ? IBV_QP_EX_WITH_RDMA_READ : 0) | ops;
	s->qp = srd ? efadv_create_qp_ex(s->ctx, &ia, &ea, sizeof(ea)) : ibv_create_qp_ex(s->ctx, &ia);
	CHECK(s->qp != NULL, "QP on %s: %s", dev, strerror(errno));
	if (!s->qp)
		exit(check_exit("test_datapath"));
	s->qpx = ibv_qp_to_qp_ex(s->qp);
	CHECK_ERR(to_rts(s->qp, srd ? rnr_retry : -1), 0);
	s->buf = aligned_alloc(4096, 4 * MSG);
	memset(s->buf, 0, 4 * MSG);
	s->mr = ibv_reg_mr(s->pd, s->buf, 4 * MSG,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | access);
	CHECK(s->mr != NULL, "MR: %s", strerror(errno));
	CHECK_ERR(ibv_query_gid(s->ctx, 1, 0, &s->gid), 0);
}

static void side_open(struct side *s, const char *dev, bool srd, int rnr_retry)
{
	side_open_with(s, dev, srd, rnr_retry, 0, 0);
}

static void side_close(struct side *s)
{
	CHECK_ERR(ibv_destroy_qp(s->qp), 0);
	CHECK_ERR(ibv_dereg_mr(s->mr), 0);
	CHECK_ERR(ibv_destroy_cq(s->cq), 0);
	CHECK_ERR(ibv_dealloc_pd(s->pd), 0);
	CHECK_ERR(ibv_close_device(s->ctx), 0);
	free(s->buf);
}

static struct ibv_ah *ah_to(struct side *from, const union ibv_gid *gid)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	a.grh.dgid = *gid;
	return ibv_create_ah(from->pd, &a);
}

static int post_recv(struct side *s, size_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

static int post_send(struct side *s, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, void *addr,
		     uint32_t len, uint32_t lkey, bool imm, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0xabcd1234);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

static int rdma_read(struct side *s, struct ibv_ah *ah, uint32_t qpn, uint32_t rkey, uint64_t raddr,
		     uint32_t lkey, void *local, uint32_t len)
{
	ibv_wr_start(s->qpx);
	s->qpx->wr_id = 77;
	s->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(s->qpx, rkey, raddr);
	ibv_wr_set_sge(s->qpx, lkey, (uintptr_t)local, len);
	ibv_wr_set_ud_addr(s->qpx, ah, qpn, QKEY);
	return ibv_wr_complete(s->qpx);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

/* ------------------------------------------------------------ control */

static void test_cq(void)
{
	struct ibv_context *a = open_dev("rdmap3s0"), *b = open_dev("rdmap5s0");
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct efadv_cq_init_attr ea = { .wc_flags = EFADV_WC_EX_WITH_SGID };
	struct ibv_cq *cqs[520];
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	int n;

	errno = 0;
	CHECK(!ibv_create_cq(a, 32769, NULL, NULL, 0) && errno == EINVAL, "cqe over max_cqe: %d", errno);
	errno = 0;
	CHECK(!ibv_create_cq(a, 16, NULL, NULL, 1) && errno == EINVAL, "comp vector 1: %d", errno);
	cq = ibv_create_cq(a, 100, NULL, NULL, 0);
	CHECK(cq && cq->cqe == 128, "cqe rounded up to 128: %d", cq ? cq->cqe : -1);
	CHECK_ERR(ibv_destroy_cq(cq), 0);
	cqx = ibv_create_cq_ex(a, &ca);
	CHECK(cqx != NULL, "ibv_create_cq_ex: %s", strerror(errno));
	CHECK_ERR(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	cqx = efadv_create_cq(a, &ca, &ea, sizeof(ea));
	CHECK(cqx != NULL, "efadv_create_cq WITH_SGID on rdmap3s0: %s", strerror(errno));
	if (cqx)
		CHECK_ERR(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	/* the driver sets CQ_WITH_SGID for every device, this one too */
	cqx = efadv_create_cq(b, &ca, &ea, sizeof(ea));
	CHECK(cqx != NULL, "efadv_create_cq WITH_SGID on rdmap5s0: %s", strerror(errno));
	if (cqx)
		CHECK_ERR(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	/* max_cq: 512 per device context */
	for (n = 0; n < 520; n++) {
		cqs[n] = ibv_create_cq(b, 1, NULL, NULL, 0);
		if (!cqs[n])
			break;
	}
	CHECK(n == 512 && errno == ENOMEM, "created %d CQs, then errno %d", n, errno);
	while (n--)
		ibv_destroy_cq(cqs[n]);
	ibv_close_device(a);
	ibv_close_device(b);
}

static void test_qp_control(void)
{
	struct ibv_context *ctx = open_dev("rdmap3s0");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				       .cap = { 16, 16, 1, 1, 0 } };
	struct ibv_qp_attr a = { 0 }, qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *ud, *srd, *qp;
	struct ibv_ah *ah1, *ah2, *ah3;
	struct efadv_ah_attr eah1, eah2, eah3;
	union ibv_gid g = { .raw = { 0xfe, 0x80, [14] = 0x12, 0x34 } };

	ia.cap.max_inline_data = 33; /* inline_buf_size is 32: the driver says EINVAL */
	errno = 0;
	CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL, "inline 33: %d", errno);
	ia.cap.max_inline_data = 32;
	ud = ibv_create_qp(pd, &ia);
	CHECK(ud && ud->qp_num > 0, "UD QP: %s", strerror(errno));
	ia.qp_type = IBV_QPT_DRIVER;
	srd = efadv_create_driver_qp(pd, &ia, EFADV_QP_DRIVER_TYPE_SRD);
	CHECK(srd && srd->qp_num != ud->qp_num, "SRD QP: %s", strerror(errno));
	ia.qp_type = IBV_QPT_RC;
	errno = 0;
	CHECK(!ibv_create_qp(pd, &ia) && errno == EOPNOTSUPP, "RC: %d", errno);
	if (!ud || !srd)
		return;
	/* the state table */
	a.qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE), EINVAL); /* RESET -> RTS */
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	a.pkey_index = 1;
	a.qkey = QKEY;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
		  EOPNOTSUPP);
	a.pkey_index = 0;
	a.port_num = 2;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
		  EINVAL);
	a.port_num = 1;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.rnr_retry = 3;
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY), EINVAL);
	CHECK_ERR(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	a.qp_state = IBV_QPS_RESET;
	CHECK_ERR(ibv_modify_qp(srd, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_ERR;
	CHECK_ERR(ibv_modify_qp(srd, &a, IBV_QP_STATE), EINVAL); /* SRD: no RESET -> ERR */
	CHECK_ERR(to_rts(srd, 5), 0);
	CHECK_ERR(ibv_query_qp(srd, &qa, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_CAP | IBV_QP_RNR_RETRY, &qia),
		  0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qa.qkey, QKEY);
	CHECK_EQ(qa.rnr_retry, 5);
	CHECK_EQ(qa.cap.max_send_wr, 16);
	CHECK_EQ(qa.cap.max_inline_data, 32);
	CHECK_ERR(ibv_query_qp(srd, &qa, IBV_QP_AV, &qia), EOPNOTSUPP);
	/* AHs: one number per (PD, address) */
	ah1 = ah_to(&(struct side){ .pd = pd }, &g);
	ah2 = ah_to(&(struct side){ .pd = pd }, &g);
	g.raw[15] = 0x35;
	ah3 = ah_to(&(struct side){ .pd = pd }, &g);
	CHECK(ah1 && ah2 && ah3, "AHs: %s", strerror(errno));
	if (ah1 && ah2 && ah3) {
		CHECK_ERR(efadv_query_ah(ah1, &eah1, sizeof(eah1)), 0);
		CHECK_ERR(efadv_query_ah(ah2, &eah2, sizeof(eah2)), 0);
		CHECK_ERR(efadv_query_ah(ah3, &eah3, sizeof(eah3)), 0);
		CHECK_EQ(eah1.ahn, eah2.ahn);
		CHECK(eah1.ahn != eah3.ahn, "two addresses, one AH number %u", eah1.ahn);
		CHECK_ERR(ibv_destroy_ah(ah1), 0);
		CHECK_ERR(ibv_destroy_ah(ah2), 0);
		CHECK_ERR(ibv_destroy_ah(ah3), 0);
	}
	/* what is in use cannot go */
	CHECK_ERR(ibv_destroy_cq(cq), EBUSY);
	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
	CHECK_ERR(ibv_destroy_qp(ud), 0);
	CHECK_ERR(ibv_destroy_qp(srd), 0);
	/* QPNs are reused once free */
	ia.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp != NULL, "QP again");
	if (qp)
		CHECK_ERR(ibv_destroy_qp(qp), 0);
	CHECK_ERR(ibv_destroy_cq(cq), 0);
	CHECK_ERR(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

/* ------------------------------------------------------------ traffic */

static void test_srd_send(const char *from, const char *to)
{
	struct side s, r;
	struct ibv_ah *ah, *back;
	struct efadv_ah_attr eback;
	struct ibv_wc wc;
	int i;

	side_open(&s, from, true, 7);
	side_open(&r, to, true, 7);
	ah = ah_to(&s, &r.gid);
	back = ah_to(&r, &s.gid); /* the receiver knows the sender: slid names it */
	CHECK(ah && back, "AH: %s", strerror(errno));
	CHECK_ERR(efadv_query_ah(back, &eback, sizeof(eback)), 0);
	for (i = 0; i < 3; i++) {
		memset(r.buf, 0, MSG);
		fill(s.buf, MSG, (unsigned int)i);
		CHECK_ERR(post_recv(&r, 0, MSG, 100 + (uint64_t)i), 0);
		CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, MSG, s.mr->lkey, i == 1, 200 + (uint64_t)i),
			  0);
		if (poll1(r.cq, &wc)) {
			CHECK_EQ(wc.status, IBV_WC_SUCCESS);
			CHECK_EQ(wc.opcode, IBV_WC_RECV);
			CHECK_EQ(wc.wr_id, 100 + (uint64_t)i);
			CHECK_EQ(wc.byte_len, MSG);
			CHECK_EQ(wc.src_qp, s.qp->qp_num);
			CHECK_EQ(wc.qp_num, r.qp->qp_num);
			CHECK_EQ(wc.slid, eback.ahn);
			CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), i == 1);
			if (i == 1)
				CHECK_EQ(be32toh(wc.imm_data), 0xabcd1234);
		}
		CHECK(!memcmp(r.buf, s.buf, MSG), "%s -> %s: bytes differ", from, to);
		if (poll1(s.cq, &wc)) {
			CHECK_EQ(wc.status, IBV_WC_SUCCESS);
			CHECK_EQ(wc.opcode, IBV_WC_SEND);
			CHECK_EQ(wc.wr_id, 200 + (uint64_t)i);
		}
	}
	ibv_destroy_ah(ah);
	ibv_destroy_ah(back);
	side_close(&s);
	side_close(&r);
}

static void test_ud(void)
{
	struct side s, r;
	struct ibv_ah *ah, *nowhere;
	union ibv_gid dead = { .raw = { 0xfe, 0x80, [14] = 0xde, 0xad } };
	struct ibv_wc wc;
	int i;

	side_open(&s, "rdmap3s0", false, 0);
	side_open(&r, "rdmap5s0", false, 0);
	ah = ah_to(&s, &r.gid);
	nowhere = ah_to(&s, &dead);
	fill(s.buf, 1000, 9);
	CHECK_ERR(post_recv(&r, 0, 2048, 1), 0);
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 1000, s.mr->lkey, false, 2), 0);
	if (poll1(r.cq, &wc)) {
		/* the GRH first: 40 bytes, version 6, sender and receiver GIDs */
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, 1040);
		CHECK_EQ(wc.slid, 0xffff); /* no AH for the sender on this side */
		CHECK_EQ(r.buf[0] >> 4, 6);
		CHECK(!memcmp(r.buf + 8, s.gid.raw, 16) && !memcmp(r.buf + 24, r.gid.raw, 16), "GRH GIDs");
		CHECK(!memcmp(r.buf + 40, s.buf, 1000), "UD payload");
	}
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "UD send completion");
	/* UD to nowhere, to a wrong QPN, with a wrong Q-key, without a posted
	 * receive: the send completes, the receiver sees nothing */
	CHECK_ERR(post_send(&s, nowhere, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 3), 0);
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "to an unknown GID: %d", wc.status);
	CHECK_ERR(post_send(&s, ah, 250, QKEY, s.buf, 64, s.mr->lkey, false, 4), 0);
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "to an unknown QPN: %d", wc.status);
	CHECK_ERR(post_recv(&r, 0, 2048, 5), 0);
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY + 1, s.buf, 64, s.mr->lkey, false, 6), 0);
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "wrong Q-key: %d", wc.status);
	poll_none(r.cq);
	/* the posted receive is still there: it takes the next one */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 7), 0);
	CHECK(poll1(r.cq, &wc) && wc.wr_id == 5 && wc.byte_len == 104, "next receive");
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "send 7");
	for (i = 0; i < 2; i++) {
		CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 8), 0);
		CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "no receive posted: dropped");
	}
	poll_none(r.cq);
	ibv_destroy_ah(ah);
	ibv_destroy_ah(nowhere);
	side_close(&s);
	side_close(&r);
}

static void test_srd_errors(void)
{
	union ibv_gid dead = { .raw = { 0xfe, 0x80, [14] = 0xde, 0xad } };
	struct ibv_ah *ah, *nowhere;
	struct side s, r;
	struct ibv_wc wc;
	uint8_t *big = aligned_alloc(4096, 16384);
	struct ibv_mr *bigmr;

	side_open(&s, "rdmap3s0", true, 0); /* rnr_retry 0: the first RNR is final */
	side_open(&r, "rdmap3s0", true, 0);
	ah = ah_to(&s, &r.gid);
	nowhere = ah_to(&s, &dead);
	bigmr = ibv_reg_mr(s.pd, big, 16384, IBV_ACCESS_LOCAL_WRITE);
	/* no receive posted */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 1), 0);
	if (poll1(s.cq, &wc)) {
		CHECK_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
		CHECK_EQ(wc.vendor_err, 10);
	}
	/* a QPN nobody has */
	CHECK_ERR(post_send(&s, ah, 250, QKEY, s.buf, 64, s.mr->lkey, false, 2), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 9, "unknown QPN: vendor_err %u", wc.vendor_err);
	/* a GID no device has */
	CHECK_ERR(post_send(&s, nowhere, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 3), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 7 && wc.status == stack_num("BAD_ADDRESS_STATUS"),
	      "unknown GID: vendor_err %u status %d (rdma-core %s)", wc.vendor_err, wc.status,
	      stack_release("rdma-core"));
	/* a wrong Q-key on SRD */
	CHECK_ERR(post_recv(&r, 0, MSG, 4), 0);
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY + 1, s.buf, 64, s.mr->lkey, false, 5), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 9, "wrong Q-key: vendor_err %u", wc.vendor_err);
	/* an lkey nobody registered */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 64, 0x7777, false, 6), 0);
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_LOC_PROT_ERR, "bad lkey: %d", wc.status);
	/* longer than the port's max_msg_sz (8800) */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, big, 9000, bigmr->lkey, false, 7), 0);
	CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_LOC_LEN_ERR, "too long: %d", wc.status);
	/* longer than the receive buffer (posted with wr_id 4) */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, big, 8000, bigmr->lkey, false, 8), 0);
	if (poll1(s.cq, &wc))
		CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.vendor_err == 11, "receiver too small: %d",
		      wc.status);
	if (poll1(r.cq, &wc))
		CHECK(wc.wr_id == 4 && wc.status == IBV_WC_LOC_LEN_ERR, "receiver: %d", wc.status);
	/* to ERR: posted receives are flushed */
	CHECK_ERR(post_recv(&r, 0, MSG, 9), 0);
	CHECK_ERR(ibv_modify_qp(r.qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR }, IBV_QP_STATE), 0);
	CHECK(poll1(r.cq, &wc) && wc.wr_id == 9 && wc.status == IBV_WC_WR_FLUSH_ERR, "flush: %d",
	      wc.status);
	/* a receiver in ERR refuses sends */
	CHECK_ERR(post_send(&s, ah, r.qp->qp_num, QKEY, s.buf, 64, s.mr->lkey, false, 10), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 9, "receiver in ERR: vendor_err %u", wc.vendor_err);
	ibv_dereg_mr(bigmr);
	free(big);
	ibv_destroy_ah(ah);
	ibv_destroy_ah(nowhere);
	side_close(&s);
	side_close(&r);
}

static void test_rdma_read(void)
{
	struct side s, r;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_mr *dmr;
	uint8_t *gpu;
	int fd = dmabuf_create("0000:04:00.0", NULL, 4 * MiB);

	side_open(&s, "rdmap3s0", true, 7);
	side_open(&r, "rdmap3s0", true, 7);
	ah = ah_to(&s, &r.gid);
	/* host memory to host memory */
	fill(r.buf + MSG, MSG, 3);
	CHECK_ERR(rdma_read(&s, ah, r.qp->qp_num, r.mr->rkey, (uintptr_t)r.buf + MSG, s.mr->lkey, s.buf,
			    MSG), 0);
	if (poll1(s.cq, &wc))
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 77, "read: status %d", wc.status);
	CHECK(!memcmp(s.buf, r.buf + MSG, MSG), "RDMA read: bytes differ");
	/* an rkey the target does not have, a range past its MR */
	CHECK_ERR(rdma_read(&s, ah, r.qp->qp_num, 0x4242, (uintptr_t)r.buf, s.mr->lkey, s.buf, 64), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 7, "bad rkey: vendor_err %u", wc.vendor_err);
	CHECK_ERR(rdma_read(&s, ah, r.qp->qp_num, r.mr->rkey, (uintptr_t)r.buf + 3 * MSG, s.mr->lkey,
			    s.buf, 2 * MSG), 0);
	CHECK(poll1(s.cq, &wc) && wc.vendor_err == 7, "past the MR: vendor_err %u", wc.vendor_err);
	/* into and out of the GPU's memory (a fake dma-buf of an allowed pair) */
	CHECK(fd >= 0, "dma-buf: %s", strerror(errno));
	gpu = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(gpu != MAP_FAILED, "mmap dma-buf");
	dmr = ibv_reg_dmabuf_mr(s.pd, MiB, MiB, 0x100000000ull, fd,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(dmr != NULL, "dma-buf MR: %s", strerror(errno));
	if (dmr && gpu != MAP_FAILED) {
		fill(r.buf + MSG, MSG, 5);
		CHECK_ERR(rdma_read(&s, ah, r.qp->qp_num, r.mr->rkey, (uintptr_t)r.buf + MSG, dmr->lkey,
				    (void *)(uintptr_t)(0x100000000ull + 4096), MSG), 0);
		CHECK(poll1(s.cq, &wc) && wc.status == IBV_WC_SUCCESS, "read into GPU: %d", wc.status);
		CHECK(!memcmp(gpu + MiB + 4096, r.buf + MSG, MSG), "bytes in the GPU's memory differ");
		/* and the other way: the peer reads the GPU's memory */
		fill(gpu + MiB, MSG, 6);
		{
			struct ibv_ah *back = ah_to(&r, &s.gid);

			CHECK_ERR(rdma_read(&r, back, s.qp->qp_num, dmr->rkey, 0x100000000ull, r.mr->lkey,
					    r.buf, MSG), 0);
			CHECK(poll1(r.cq, &wc) && wc.status == IBV_WC_SUCCESS, "read from GPU: %d", wc.status);
			CHECK(!memcmp(r.buf, gpu + MiB, MSG), "bytes read from the GPU differ");
			ibv_destroy_ah(back);
		}
		ibv_dereg_mr(dmr);
	}
	if (gpu != MAP_FAILED)
		munmap(gpu, 4 * MiB);
	if (fd >= 0)
		close(fd);
	ibv_destroy_ah(ah);
	side_close(&s);
	side_close(&r);
}

/* Whether libefa takes IBV_QP_EX_WITH_RDMA_WRITE on a device: errno, 0
 * when the QP was made. */
static int write_qp_refused(const char *dev)
{
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ia = { .qp_type = IBV_QPT_DRIVER, .send_cq = cq, .recv_cq = cq,
					  .cap = { 16, 16, 1, 1, 0 }, .pd = pd,
					  .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					  .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE };
	struct efadv_qp_init_attr ea = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };
	struct ibv_qp *qp;
	int err;

	errno = 0;
	qp = efadv_create_qp_ex(ctx, &ia, &ea, sizeof(ea));
	err = qp ? 0 : errno;
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return err;
}

/* RDMA write through libefa (the device's own, whatever libefa posts, is
 * test_wqe's): from rdma-core 46 (ctests/stack.py: RDMA_WRITE) libefa
 * takes the op where the device has the RDMA_WRITE cap (rdmap5s0) and the
 * bytes land in the target's MR; it refuses the op flag with EOPNOTSUPP
 * where the device has not (rdmap3s0), and before 46 on every device. */
static void test_rdma_write(void)
{
	struct side s, r;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	CHECK_ERR(write_qp_refused("rdmap3s0"), EOPNOTSUPP);
	if (!stack_has("RDMA_WRITE")) {
		CHECK_ERR(write_qp_refused("rdmap5s0"), EOPNOTSUPP);
		return;
	}
	side_open_with(&s, "rdmap5s0", true, 7, IBV_QP_EX_WITH_RDMA_WRITE, 0);
	side_open_with(&r, "rdmap5s0", true, 7, IBV_QP_EX_WITH_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE);
	ah = ah_to(&s, &r.gid);
	fill(s.buf, MSG, 9);
	ibv_wr_start(s.qpx);
	s.qpx->wr_id = 88;
	s.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(s.qpx, r.mr->rkey, (uintptr_t)r.buf + 2 * MSG);
	ibv_wr_set_sge(s.qpx, s.mr->lkey, (uintptr_t)s.buf, MSG);
	ibv_wr_set_ud_addr(s.qpx, ah, r.qp->qp_num, QKEY);
	CHECK_ERR(ibv_wr_complete(s.qpx), 0);
	if (poll1(s.cq, &wc))
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 88 && wc.opcode == IBV_WC_RDMA_WRITE,
		      "RDMA write: status %d opcode %d", wc.status, wc.opcode);
	CHECK(!memcmp(r.buf + 2 * MSG, s.buf, MSG), "RDMA write: bytes differ");
	poll_none(r.cq); /* a write without immediate data completes nothing there */
	ibv_destroy_ah(ah);
	side_close(&s);
	side_close(&r);
}

int main(void)
{
	dmabuf_create = (int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT,
									 "efasim_dmabuf_create");
	if (!dmabuf_create) {
		fprintf(stderr, "libefasim is not preloaded\n");
		return 99;
	}
	devs = ibv_get_device_list(NULL);
	CHECK(devs != NULL, "devices");
	if (!devs)
		return check_exit("test_datapath");
	test_cq();
	test_qp_control();
	test_srd_send("rdmap3s0", "rdmap3s0");
	test_srd_send("rdmap3s0", "rdmap5s0");
	test_ud();
	test_srd_errors();
	test_rdma_read();
	test_rdma_write();
	/* devs is not freed: libibverbs keeps its devices behind interior
	 * pointers only, which memcheck would call possibly lost */
	return check_exit("test_datapath");
}
