// SPDX-License-Identifier: MIT
/*
 * RDMA writes through rdma-core 52+'s libefa (ibv_wr_rdma_write_imm,
 * efadv_create_qp_ex's unsolicited flag), as the device completes them:
 *
 *  - to a QP made with EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV a write with
 *    immediate data completes on the target without a receive WQE: opcode
 *    RECV_RDMA_WITH_IMM, wr_id 0, efadv_wc_is_unsolicited, the whole
 *    length (its bits 31:16 in the entry's second half), the imm;
 *  - to a QP made without it the write takes a posted receive (its wr_id),
 *    and with none posted the writer gets RNR once its retries are spent;
 *  - an inline RDMA write (ibv_wr_set_inline_data after ibv_wr_rdma_write):
 *    rdma-core 56 puts the inline bytes where the 64-byte WQE holds the
 *    remote address, which the device does not support (inline writes need
 *    the 128-byte WQE of rdma-core 63 and newer firmware): an error
 *    completion, UNSUPPORTED_OP (vendor error 3, IBV_WC_LOC_QP_OP_ERR),
 *    and the QP goes on.
 *
 * Usage: test_write_imm IBDEV, inside `efap2p sim` with a model whose
 * kernel (6.10+) and device have RDMA_WRITE and UNSOLICITED_WRITE_RECV
 * (ctests/emulator/abi.json's rdmap0s6). Built against rdma-core 44, which
 * has none of these verbs, it says so and exits 77 (skipped).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"

#ifndef HAVE_EFADV_QP_FLAGS
int main(void)
{
	printf("test_write_imm: skipped: this libefa (rdma-core 44) has no RDMA write verbs\n");
	return 77;
}
#else

#define QKEY 0x11111111u
#define BIG 100000u  /* above 64 KiB: the length's high bits count */
#define MID 70000u

struct qp {
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cq;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_ah *ah;

static int make_qp(struct qp *q, bool unsolicited)
{
	struct efadv_cq_init_attr ec = { .wc_flags = EFADV_WC_EX_WITH_IS_UNSOLICITED };
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_DRIVER,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 32 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	};
	struct efadv_qp_init_attr ea = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .qkey = QKEY, .port_num = 1 };

	q->cq = efadv_create_cq(ctx, &ca, &ec, sizeof(ec));
	if (!q->cq)
		return -1;
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(q->cq);
	ia.pd = pd;
	if (unsolicited)
		ea.flags = EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV;
	q->qp = efadv_create_qp_ex(ctx, &ia, &ea, sizeof(ea));
	if (!q->qp)
		return -1;
	q->qpx = ibv_qp_to_qp_ex(q->qp);
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.rnr_retry = 3;
	return ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY);
}

struct comp {
	enum ibv_wc_status status;
	uint32_t vendor_err, byte_len, imm;
	enum ibv_wc_opcode opcode;
	uint64_t wr_id;
	bool unsolicited, has_imm;
};

/* One completion of q's CQ within two seconds. */
static bool poll_one(struct qp *q, struct comp *c)
{
	struct ibv_poll_cq_attr pa = { 0 };
	struct timespec t0, t;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((rc = ibv_start_poll(q->cq, &pa)) == ENOENT) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 2)
			return false;
	}
	if (rc)
		return false;
	c->status = q->cq->status;
	c->wr_id = q->cq->wr_id;
	c->vendor_err = ibv_wc_read_vendor_err(q->cq);
	c->opcode = ibv_wc_read_opcode(q->cq);
	c->byte_len = c->opcode == IBV_WC_RDMA_WRITE ? 0 : ibv_wc_read_byte_len(q->cq);
	c->has_imm = ibv_wc_read_wc_flags(q->cq) & IBV_WC_WITH_IMM;
	c->imm = c->has_imm ? be32toh(ibv_wc_read_imm_data(q->cq)) : 0;
	c->unsolicited = c->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			 efadv_wc_is_unsolicited(efadv_cq_from_ibv_cq_ex(q->cq));
	ibv_end_poll(q->cq);
	return true;
}

static void write_imm(struct qp *from, struct qp *to, struct ibv_mr *src, struct ibv_mr *dst,
		      uint32_t len, uint32_t imm, uint64_t wr_id)
{
	ibv_wr_start(from->qpx);
	from->qpx->wr_id = wr_id;
	from->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(from->qpx, dst->rkey, (uintptr_t)dst->addr, htobe32(imm));
	ibv_wr_set_sge(from->qpx, src->lkey, (uintptr_t)src->addr, len);
	ibv_wr_set_ud_addr(from->qpx, ah, to->qp->qp_num, QKEY);
	CHECK_ERR(ibv_wr_complete(from->qpx), 0);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct qp w = { 0 }, un = { 0 }, so = { 0 };
	struct ibv_mr *src, *dst;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct comp c;
	uint8_t *sbuf, *dbuf;
	int i, n;

	if (argc != 2)
		return 2;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	CHECK(ctx != NULL, "%s: not found (run inside efap2p sim)", argv[1]);
	if (!ctx)
		return check_exit("test_write_imm");
	pd = ibv_alloc_pd(ctx);
	sbuf = malloc(BIG);
	dbuf = calloc(1, 2 * BIG);
	for (i = 0; i < (int)BIG; i++)
		sbuf[i] = (uint8_t)(i * 13 + 5);
	src = ibv_reg_mr(pd, sbuf, BIG, IBV_ACCESS_LOCAL_WRITE);
	dst = ibv_reg_mr(pd, dbuf, 2 * BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(src && dst, "MRs: %s", strerror(errno));
	CHECK(make_qp(&w, false) == 0, "writer QP: %s", strerror(errno));
	CHECK(make_qp(&un, true) == 0, "QP with the unsolicited flag: %s", strerror(errno));
	CHECK(make_qp(&so, false) == 0, "QP without it: %s", strerror(errno));
	CHECK_ERR(ibv_query_port(ctx, 1, &port), 0);
	CHECK_ERR(ibv_query_gid(ctx, 1, 0, &gid), 0);
	{
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid } };

		ah = ibv_create_ah(pd, &aa);
	}
	CHECK(ah != NULL, "AH: %s", strerror(errno));
	if (check_failures)
		return check_exit("test_write_imm");

	/* unsolicited: no receive posted, one completion all the same */
	write_imm(&w, &un, src, dst, BIG, 0xabcd0001, 1);
	CHECK(poll_one(&w, &c) && c.status == IBV_WC_SUCCESS && c.wr_id == 1,
	      "writer: status %d wr_id %llu", c.status, (unsigned long long)c.wr_id);
	if (poll_one(&un, &c)) {
		CHECK_EQ(c.status, IBV_WC_SUCCESS);
		CHECK_EQ(c.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(c.wr_id, 0);
		CHECK(c.unsolicited, "not reported unsolicited");
		CHECK_EQ(c.byte_len, BIG);
		CHECK(c.has_imm && c.imm == 0xabcd0001, "imm %#x", c.imm);
	} else {
		CHECK(0, "no completion on the QP with the unsolicited flag");
	}
	CHECK(!memcmp(dbuf, sbuf, BIG), "unsolicited write: bytes differ");

	/* solicited: takes the posted receive */
	{
		struct ibv_sge sge = { (uintptr_t)dbuf, 8, dst->lkey };
		struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK_ERR(ibv_post_recv(so.qp, &rw, &bad), 0);
	}
	memset(dbuf, 0, 2 * BIG);
	write_imm(&w, &so, src, dst, MID, 0xabcd0002, 2);
	CHECK(poll_one(&w, &c) && c.status == IBV_WC_SUCCESS && c.wr_id == 2, "writer: status %d",
	      c.status);
	if (poll_one(&so, &c)) {
		CHECK_EQ(c.status, IBV_WC_SUCCESS);
		CHECK_EQ(c.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(c.wr_id, 77);
		CHECK(!c.unsolicited, "reported unsolicited");
		CHECK_EQ(c.byte_len, MID);
		CHECK_EQ(c.imm, 0xabcd0002);
	} else {
		CHECK(0, "no completion on the QP without the flag");
	}
	CHECK(!memcmp(dbuf, sbuf, MID), "solicited write: bytes differ");
	/* and with no receive posted: RNR, after the retries */
	write_imm(&w, &so, src, dst, 64, 3, 3);
	CHECK(poll_one(&w, &c) && c.status == IBV_WC_RNR_RETRY_EXC_ERR && c.wr_id == 3,
	      "no receive posted: status %d (want RNR %d)", c.status, IBV_WC_RNR_RETRY_EXC_ERR);

	/* inline RDMA write: refused by the device, and the QP goes on */
	ibv_wr_start(w.qpx);
	w.qpx->wr_id = 4;
	w.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(w.qpx, dst->rkey, (uintptr_t)dst->addr);
	ibv_wr_set_inline_data(w.qpx, sbuf, 2);
	ibv_wr_set_ud_addr(w.qpx, ah, un.qp->qp_num, QKEY);
	CHECK_ERR(ibv_wr_complete(w.qpx), 0);
	CHECK(poll_one(&w, &c) && c.wr_id == 4 && c.status == IBV_WC_LOC_QP_OP_ERR && c.vendor_err == 3,
	      "inline RDMA write: status %d vendor error %u (want %d, 3)", c.status, c.vendor_err,
	      IBV_WC_LOC_QP_OP_ERR);
	write_imm(&w, &un, src, dst, 64, 5, 5);
	CHECK(poll_one(&w, &c) && c.status == IBV_WC_SUCCESS && c.wr_id == 5, "after it: status %d",
	      c.status);
	CHECK(poll_one(&un, &c) && c.status == IBV_WC_SUCCESS && c.imm == 5, "after it: received");

	ibv_destroy_ah(ah);
	ibv_destroy_qp(w.qp);
	ibv_destroy_qp(un.qp);
	ibv_destroy_qp(so.qp);
	ibv_destroy_cq(ibv_cq_ex_to_cq(w.cq));
	ibv_destroy_cq(ibv_cq_ex_to_cq(un.cq));
	ibv_destroy_cq(ibv_cq_ex_to_cq(so.cq));
	ibv_dereg_mr(src);
	ibv_dereg_mr(dst);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(sbuf);
	free(dbuf);
	return check_exit("test_write_imm");
}
#endif
