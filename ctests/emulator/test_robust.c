// SPDX-License-Identifier: MIT
/*
 * What real programs did to the emulated device that crashed it, hung it
 * or lost data silently, each case in a child process with a deadline: a
 * crash or a hang is reported as a failure, never taken for one.
 *
 *   test_robust peer-gone    SRD sends to a QP that has no receive posted
 *                            (RNR, retried), the QP destroyed, one more send
 *                            to its GID and QPN: every send completes with an
 *                            error, the process lives on
 *   test_robust qpn-reuse    a peer killed without destroying its QP, its
 *                            QPN taken by a new process: traffic with the
 *                            new QP flows both ways
 *   test_robust min-sq       sends on a one-entry send queue (perftest's
 *                            latency tests) through ibv_wr_*: each completes
 *   test_robust rkey-high    an RDMA read whose rkey has other top bits than
 *                            the MR's fails; the right rkey reads
 *   test_robust cq-overrun   more completions than the CQ holds, none polled:
 *                            IBV_EVENT_CQ_ERR on the async descriptor
 *   test_robust gid-zero     a UD address handle without a GID (ibv_ud_pingpong
 *                            without -g): the send completes, nothing arrives,
 *                            and the emulator says why on stderr
 *   test_robust read-stopped RDMA reads of a process that is stopped (SIGSTOP)
 *                            complete with its bytes, as the device serves
 *                            reads without the responder's CPU
 *
 * Runs inside `efap2p sim` on a model with two EFA NICs (p5.48xlarge).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"

#define QKEY 0x13572468u
#define BUF 65536
#define DEADLINE 60 /* seconds a case may take */

static struct ibv_device **devs;

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	uint8_t *buf;
	struct ibv_mr *mr;
	union ibv_gid gid;
};

/* What processes of a case tell each other (a shared page). */
struct board {
	atomic_int step;
	uint32_t qpn[4];
	union ibv_gid gid[4];
	uint32_t rkey;
	uint64_t addr;
};

static struct board *board;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int to_rts(struct ibv_qp *qp, bool srd)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	int rc;

	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	rc = rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.rnr_retry = 7; /* retry until the receiver posts */
	return rc ? rc : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					       (srd ? IBV_QP_RNR_RETRY : 0));
}

static struct ibv_qp *make_qp(struct node *n, bool srd, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr_ex ia = { 0 };
	struct efadv_qp_init_attr ea = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };
	struct ibv_qp *qp;

	ia.qp_type = srd ? IBV_QPT_DRIVER : IBV_QPT_UD;
	ia.send_cq = ia.recv_cq = n->cq;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.pd = n->pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | (srd ? IBV_QP_EX_WITH_RDMA_READ : 0);
	qp = srd ? efadv_create_qp_ex(n->ctx, &ia, &ea, sizeof(ea)) : ibv_create_qp_ex(n->ctx, &ia);
	if (qp && to_rts(qp, srd)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* A context on device dev with a PD, a CQ of cqe entries, a registered
 * buffer and (sq > 0) a QP. */
static int node_open(struct node *n, int dev, int cqe, bool srd, uint32_t sq, uint32_t rq)
{
	memset(n, 0, sizeof(*n));
	if (!devs)
		devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0] || !devs[dev])
		return -1;
	n->ctx = ibv_open_device(devs[dev]);
	if (!n->ctx)
		return -1;
	n->pd = ibv_alloc_pd(n->ctx);
	n->cq = ibv_create_cq(n->ctx, cqe, NULL, NULL, 0);
	n->buf = aligned_alloc(4096, BUF);
	if (!n->pd || !n->cq || !n->buf)
		return -1;
	memset(n->buf, 0, BUF);
	n->mr = ibv_reg_mr(n->pd, n->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!n->mr || ibv_query_gid(n->ctx, 1, 0, &n->gid))
		return -1;
	if (sq) {
		n->qp = make_qp(n, srd, sq, rq);
		if (!n->qp)
			return -1;
		n->qpx = ibv_qp_to_qp_ex(n->qp);
	}
	return 0;
}

static struct ibv_ah *ah_to(struct node *n, const union ibv_gid *gid)
{
	struct ibv_ah_attr a = { .port_num = 1 };

	if (gid) {
		a.is_global = 1;
		a.grh.dgid = *gid;
	}
	return ibv_create_ah(n->pd, &a);
}

static int post_recv(struct node *n, struct ibv_qp *qp, uint32_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)n->buf + off, len, n->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int send_to(struct node *n, struct ibv_ah *ah, uint32_t qpn, uint32_t off, uint32_t len,
		   uint64_t id)
{
	ibv_wr_start(n->qpx);
	n->qpx->wr_id = id;
	n->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(n->qpx);
	ibv_wr_set_sge(n->qpx, n->mr->lkey, (uintptr_t)n->buf + off, len);
	ibv_wr_set_ud_addr(n->qpx, ah, qpn, QKEY);
	return ibv_wr_complete(n->qpx);
}

/* Polls until want completions arrived or secs passed: how many did. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int want, double secs)
{
	double end = now() + secs;
	int got = 0;

	while (got < want && now() < end) {
		int c = ibv_poll_cq(cq, want - got, wc + got);

		if (c < 0)
			break;
		got += c;
	}
	return got;
}

static bool wait_step(int step, double secs)
{
	double end = now() + secs;

	while (atomic_load(&board->step) < step)
		if (now() > end)
			return false;
		else
			usleep(500);
	return true;
}

/* ------------------------------------------------------------ peer-gone */

static int peer_gone(void)
{
	struct ibv_wc wc[8];
	struct node a, b;
	int round;

	if (node_open(&a, 0, 64, true, 16, 16) || node_open(&b, 0, 64, false, 0, 0))
		return 10;
	for (round = 0; round < 20; round++) {
		struct ibv_qp *victim = make_qp(&b, true, 16, 16);
		struct ibv_ah *ah = ah_to(&a, &b.gid);
		uint32_t qpn;
		int i, got;

		CHECK(victim && ah, "QP and AH: %s", strerror(errno));
		if (!victim || !ah)
			break;
		qpn = victim->qp_num;
		for (i = 0; i < 3; i++) /* no receive posted: RNR, retried */
			CHECK_ERR(send_to(&a, ah, qpn, 0, 64, (uint64_t)i), 0);
		usleep(2000 + 500 * round);
		CHECK_ERR(ibv_destroy_qp(victim), 0);
		CHECK_ERR(send_to(&a, ah, qpn, 0, 64, 3), 0);
		got = poll_n(a.cq, wc, 4, 10);
		CHECK(got == 4, "round %d: %d of 4 sends completed", round, got);
		for (i = 0; i < got; i++)
			CHECK(wc[i].status != IBV_WC_SUCCESS,
			      "round %d: send %llu to a destroyed QP succeeded", round,
			      (unsigned long long)wc[i].wr_id);
		ibv_destroy_ah(ah);
		if (check_failures)
			break;
	}
	return check_exit("test_robust peer-gone");
}

/* ------------------------------------------------------------ qpn-reuse */

/* The first peer: receives one message, then waits to be killed. */
static int reuse_first(void)
{
	struct ibv_wc wc;
	struct node n;

	if (node_open(&n, 0, 64, true, 16, 16) || post_recv(&n, n.qp, 0, 256, 1))
		return 10;
	board->qpn[1] = n.qp->qp_num;
	atomic_store(&board->step, 1);
	if (poll_n(n.cq, &wc, 1, 20) != 1 || wc.status != IBV_WC_SUCCESS)
		return 11;
	atomic_store(&board->step, 2);
	pause(); /* killed here, its QP never destroyed */
	return 12;
}

/* The second: gets the first's QPN, sends 32 messages to the parent and
 * receives one from it. */
static int reuse_second(void)
{
	struct ibv_wc wc[64];
	struct ibv_ah *ah;
	struct node n;
	int i, got, sends = 0, recvs = 0;

	if (node_open(&n, 0, 128, true, 32, 16) || post_recv(&n, n.qp, 0, 256, 100))
		return 10;
	board->qpn[2] = n.qp->qp_num;
	atomic_store(&board->step, 4);
	if (!wait_step(5, 20) || !(ah = ah_to(&n, &board->gid[0])))
		return 11;
	for (i = 0; i < 32; i++)
		CHECK_ERR(send_to(&n, ah, board->qpn[0], 1024, 64, (uint64_t)i), 0);
	got = poll_n(n.cq, wc, 33, 10);
	for (i = 0; i < got; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS, "second: completion %llu status %d",
		      (unsigned long long)wc[i].wr_id, wc[i].status);
		if (wc[i].opcode == IBV_WC_RECV)
			recvs++;
		else
			sends++;
	}
	CHECK(sends == 32, "second: %d of 32 sends completed", sends);
	CHECK(recvs == 1, "second: %d of 1 message from the parent arrived", recvs);
	atomic_store(&board->step, 6);
	wait_step(7, 20);
	ibv_destroy_ah(ah);
	return check_exit("test_robust qpn-reuse (second)");
}

static int qpn_reuse(void)
{
	struct ibv_wc wc[64];
	struct ibv_ah *ah;
	struct node n;
	pid_t first, second;
	int i, st, got, recvs = 0;

	if (node_open(&n, 0, 128, true, 16, 64))
		return 10;
	for (i = 0; i < 64; i++)
		CHECK_ERR(post_recv(&n, n.qp, 4096 + 256 * (uint32_t)i, 256, (uint64_t)(1000 + i)), 0);
	board->qpn[0] = n.qp->qp_num;
	board->gid[0] = n.gid;
	first = fork();
	if (first == 0)
		_exit(reuse_first());
	if (!wait_step(1, 20) || !(ah = ah_to(&n, &n.gid)))
		return 11;
	CHECK_ERR(send_to(&n, ah, board->qpn[1], 0, 64, 1), 0);
	got = poll_n(n.cq, wc, 1, 10);
	CHECK(got == 1 && wc[0].status == IBV_WC_SUCCESS, "the send to the first peer");
	wait_step(2, 20);
	kill(first, SIGKILL);
	waitpid(first, &st, 0);
	atomic_store(&board->step, 3);
	second = fork();
	if (second == 0)
		_exit(reuse_second());
	if (!wait_step(4, 20))
		return 12;
	printf("qpn-reuse: the killed peer had QPN %u, the new one has %u\n", board->qpn[1],
	       board->qpn[2]);
	CHECK(board->qpn[2] == board->qpn[1], "the new QP did not take the dead one's number");
	atomic_store(&board->step, 5);
	CHECK_ERR(send_to(&n, ah, board->qpn[2], 0, 64, 2), 0);
	got = poll_n(n.cq, wc, 33, 10);
	for (i = 0; i < got; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS, "parent: completion %llu status %d",
		      (unsigned long long)wc[i].wr_id, wc[i].status);
		if (wc[i].opcode == IBV_WC_RECV)
			recvs++;
	}
	CHECK(got == 33 && recvs == 32, "parent: %d completions, %d of 32 receives", got, recvs);
	wait_step(6, 20);
	atomic_store(&board->step, 7);
	waitpid(second, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the second peer failed (%#x)", st);
	ibv_destroy_ah(ah);
	return check_exit("test_robust qpn-reuse");
}

/* ------------------------------------------------------------ min-sq */

static int min_sq(void)
{
	struct ibv_wc wc[2];
	struct node a, b;
	struct ibv_ah *ah;
	int i;

	if (node_open(&a, 0, 16, true, 1, 1) || node_open(&b, 1, 64, true, 1, 16))
		return 10;
	ah = ah_to(&a, &b.gid);
	CHECK(ah != NULL, "AH: %s", strerror(errno));
	for (i = 0; ah && i < 10; i++) {
		CHECK_ERR(post_recv(&b, b.qp, 0, 64, (uint64_t)i), 0);
		CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 0, 64, (uint64_t)i), 0);
		CHECK(poll_n(a.cq, wc, 1, 5) == 1 && wc[0].status == IBV_WC_SUCCESS,
		      "send %d on a one-entry send queue", i);
		CHECK(poll_n(b.cq, wc, 1, 5) == 1 && wc[0].status == IBV_WC_SUCCESS,
		      "receive %d", i);
	}
	return check_exit("test_robust min-sq");
}

/* ------------------------------------------------------------ rkey-high */

static int rdma_read(struct node *n, struct ibv_ah *ah, uint32_t qpn, uint32_t rkey,
		     uint64_t raddr)
{
	ibv_wr_start(n->qpx);
	n->qpx->wr_id = rkey;
	n->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(n->qpx, rkey, raddr);
	ibv_wr_set_sge(n->qpx, n->mr->lkey, (uintptr_t)n->buf, 4096);
	ibv_wr_set_ud_addr(n->qpx, ah, qpn, QKEY);
	return ibv_wr_complete(n->qpx);
}

static int rkey_high(void)
{
	struct ibv_wc wc;
	struct node a, b;
	struct ibv_ah *ah;
	uint32_t bad;
	int i;

	if (node_open(&a, 0, 16, true, 4, 4) || node_open(&b, 1, 16, true, 4, 4))
		return 10;
	for (i = 0; i < 4096; i++)
		b.buf[8192 + i] = (uint8_t)(i * 7 + 3);
	ah = ah_to(&a, &b.gid);
	if (!ah)
		return 11;
	for (i = 1; i < 256; i <<= 1) {
		bad = b.mr->rkey ^ ((uint32_t)i << 24);
		CHECK_ERR(rdma_read(&a, ah, b.qp->qp_num, bad, (uintptr_t)b.buf + 8192), 0);
		CHECK(poll_n(a.cq, &wc, 1, 5) == 1, "read with rkey %#x: no completion", bad);
		CHECK(wc.status != IBV_WC_SUCCESS, "a read with rkey %#x (the MR's is %#x) succeeded",
		      bad, b.mr->rkey);
	}
	CHECK_ERR(rdma_read(&a, ah, b.qp->qp_num, b.mr->rkey, (uintptr_t)b.buf + 8192), 0);
	CHECK(poll_n(a.cq, &wc, 1, 5) == 1 && wc.status == IBV_WC_SUCCESS, "the read with the rkey");
	CHECK(!memcmp(a.buf, b.buf + 8192, 4096), "the bytes read");
	return check_exit("test_robust rkey-high");
}

/* ------------------------------------------------------------ read-stopped */

/* The responder: its buffer filled and registered, then it stops itself
 * (its device thread too) until killed. */
static int stopped_responder(void)
{
	struct node n;
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a hung case's stopped child goes with it */
	if (node_open(&n, 1, 16, true, 4, 4))
		return 10;
	for (i = 0; i < BUF; i++)
		n.buf[i] = (uint8_t)(i * 13 + 5);
	board->qpn[1] = n.qp->qp_num;
	board->gid[1] = n.gid;
	board->rkey = n.mr->rkey;
	board->addr = (uintptr_t)n.buf;
	atomic_store(&board->step, 1);
	raise(SIGSTOP);
	pause();
	return 11;
}

static int read_stopped(void)
{
	struct ibv_wc wc;
	struct ibv_ah *ah;
	struct node a;
	pid_t peer;
	int i, st, bad = 0;

	if (node_open(&a, 0, 16, true, 4, 4))
		return 10;
	peer = fork();
	if (peer == 0)
		_exit(stopped_responder());
	CHECK(wait_step(1, 20), "the responder did not come up");
	CHECK(waitpid(peer, &st, WUNTRACED) == peer && WIFSTOPPED(st), "the responder did not stop");
	ah = ah_to(&a, &board->gid[1]);
	CHECK(ah != NULL, "AH: %s", strerror(errno));
	for (i = 0; ah && !check_failures && i < 4; i++) {
		/* up to 3 of the fabric's 16 KiB packets */
		uint32_t off = (uint32_t)i * 4096, len = (uint32_t)i * 16384 + 100, j;

		memset(a.buf, 0, BUF);
		ibv_wr_start(a.qpx);
		a.qpx->wr_id = (uint64_t)i;
		a.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(a.qpx, board->rkey, board->addr + off);
		ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, len);
		ibv_wr_set_ud_addr(a.qpx, ah, board->qpn[1], QKEY);
		CHECK_ERR(ibv_wr_complete(a.qpx), 0);
		CHECK(poll_n(a.cq, &wc, 1, 5) == 1, "read %d of a stopped process: no completion in 5 s",
		      i);
		CHECK(wc.status == IBV_WC_SUCCESS, "read %d: status %d", i, wc.status);
		for (j = 0; j < len; j++)
			bad += a.buf[j] != (uint8_t)((off + j) * 13 + 5);
		CHECK(bad == 0, "read %d: %d bytes differ from the responder's", i, bad);
		CHECK(a.buf[len] == 0, "read %d: a byte past the read was written", i);
	}
	kill(peer, SIGKILL);
	waitpid(peer, &st, 0);
	if (ah)
		ibv_destroy_ah(ah);
	return check_exit("test_robust read-stopped");
}

/* ------------------------------------------------------------ cq-overrun */

static int cq_overrun(void)
{
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct node a, b;
	struct ibv_ah *ah;
	int i, flags, rc;

	/* b's CQ holds 4 (the depth is a power of two): 8 receives complete */
	if (node_open(&a, 0, 64, false, 16, 16) || node_open(&b, 1, 4, false, 1, 16))
		return 10;
	for (i = 0; i < 8; i++)
		CHECK_ERR(post_recv(&b, b.qp, 256 * (uint32_t)i, 256, (uint64_t)i), 0);
	ah = ah_to(&a, &b.gid);
	if (!ah)
		return 11;
	for (i = 0; i < 8; i++)
		CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 0, 64, (uint64_t)i), 0);
	pfd.fd = b.ctx->async_fd;
	pfd.events = POLLIN;
	rc = poll(&pfd, 1, 5000);
	CHECK(rc == 1, "no async event within 5 s of the overrun (poll %d)", rc);
	flags = fcntl(b.ctx->async_fd, F_GETFL);
	fcntl(b.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	if (rc == 1 && ibv_get_async_event(b.ctx, &ev) == 0) {
		CHECK(ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == b.cq,
		      "event %d (%s), want IBV_EVENT_CQ_ERR on the CQ", ev.event_type,
		      ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	} else {
		CHECK(0, "ibv_get_async_event: %s", strerror(errno));
	}
	return check_exit("test_robust cq-overrun");
}

/* ------------------------------------------------------------ gid-zero */

static int gid_zero(void)
{
	char log[8192] = "";
	struct ibv_wc wc;
	struct node a, b;
	struct ibv_ah *ah;
	ssize_t n;
	int fd, saved;

	if (node_open(&a, 0, 16, false, 4, 4) || node_open(&b, 1, 16, false, 4, 4))
		return 10;
	CHECK_ERR(post_recv(&b, b.qp, 0, 256, 1), 0);
	ah = ah_to(&a, NULL); /* no GRH: the address is :: */
	CHECK(ah != NULL, "an AH without a GID: %s (the efa driver accepts it)", strerror(errno));
	if (!ah)
		return check_exit("test_robust gid-zero");
	fd = memfd_create("stderr", 0);
	saved = dup(2);
	dup2(fd, 2);
	CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 0, 64, 7), 0);
	CHECK(poll_n(a.cq, &wc, 1, 5) == 1 && wc.status == IBV_WC_SUCCESS,
	      "a UD send to :: completes as the device completes it");
	CHECK(poll_n(b.cq, &wc, 1, 0.3) == 0, "the send to :: arrived");
	dup2(saved, 2);
	n = pread(fd, log, sizeof(log) - 1, 0);
	log[n > 0 ? n : 0] = '\0';
	fputs(log, stderr);
	CHECK(strstr(log, "::") && strstr(log, "dropped"), "the emulator did not say why nothing arrived");
	return check_exit("test_robust gid-zero");
}

/* ------------------------------------------------------------ main */

static const struct {
	const char *name;
	int (*run)(void);
} cases[] = {
	{ "peer-gone", peer_gone }, { "qpn-reuse", qpn_reuse }, { "min-sq", min_sq },
	{ "rkey-high", rkey_high }, { "cq-overrun", cq_overrun }, { "gid-zero", gid_zero },
	{ "read-stopped", read_stopped },
};

int main(int argc, char **argv)
{
	unsigned int i;
	pid_t pid;
	double end;
	int st;

	board = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (board == MAP_FAILED)
		return 2;
	for (i = 0; argc == 2 && i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name))
			continue;
		pid = fork();
		if (pid == 0) {
			int rc = cases[i].run();

			fflush(NULL);
			_exit(rc);
		}
		end = now() + DEADLINE;
		while (waitpid(pid, &st, WNOHANG) == 0) {
			if (now() > end) {
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				fprintf(stderr, "FAIL %s: hung (killed after %d s)\n", argv[1], DEADLINE);
				return 1;
			}
			usleep(10000);
		}
		if (WIFSIGNALED(st)) {
			fprintf(stderr, "FAIL %s: the process died of signal %d (%s)\n", argv[1],
				WTERMSIG(st), strsignal(WTERMSIG(st)));
			return 1;
		}
		return WEXITSTATUS(st);
	}
	fprintf(stderr, "usage: test_robust peer-gone|qpn-reuse|min-sq|rkey-high|cq-overrun|gid-zero|"
			"read-stopped\n");
	return 2;
}
