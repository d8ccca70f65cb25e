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
 *   test_robust read-exec    an RDMA read of a responder that exec()ed (its
 *                            QP never destroyed; the new program has other
 *                            bytes at the MR's address) completes with an
 *                            error, and those bytes are not in the buffer
 *   test_robust read-reuse   the same for a responder killed, its pid taken
 *                            by another user's process (as root; skipped
 *                            otherwise)
 *   test_robust send-dereg   an SRD send whose MR is deregistered (and its
 *                            buffer rewritten) before the receiver's device
 *                            took the bytes completes with LOC_PROT_ERR, as
 *                            the device reports an lkey gone; nothing arrives
 *   test_robust pidns        a peer in another pid namespace (unshare, as a
 *                            container runtime makes one; as root, skipped
 *                            otherwise): 200 SRD sends each way and an RDMA
 *                            read each way
 *
 * Runs inside `efap2p sim` on a model with two EFA NICs (p5.48xlarge).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/syscall.h>
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

/* What processes of a case tell each other (a shared page, of a memfd
 * whose descriptor an exec()ed child is told). */
struct board {
	atomic_int step;
	uint32_t qpn[4];
	union ibv_gid gid[4];
	uint32_t rkey;
	uint64_t addr;
	uint32_t rkeys[4];
	uint64_t addrs[4];
	int got, status, bad, sent, recvd, reads;
};

static struct board *board;
static int board_fd;

/* Where the responders of read-exec and read-reuse keep their MR, and the
 * process that replaces them maps other bytes (SECRET) at the same place. */
#define FIXED_ADDR 0x2a0000000000ull
#define SECRET 0xa5

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

/* ------------------------------------------------------------ read-exec, read-reuse */

/* Maps BUF bytes of SECRET at FIXED_ADDR: 0, or -1. */
static int map_secret(void)
{
	void *m = mmap((void *)(uintptr_t)FIXED_ADDR, BUF, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (m != (void *)(uintptr_t)FIXED_ADDR)
		return -1;
	memset(m, SECRET, BUF);
	return 0;
}

/* After exec (test_robust exec-secret FD): the board again, the secret at
 * the old MR's address, then waits to be killed. */
static int exec_secret(int fd)
{
	board = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (board == MAP_FAILED || map_secret())
		return 20;
	atomic_store(&board->step, 3);
	for (;;)
		pause();
}

/* The responder: its MR at FIXED_ADDR, registered for remote reads; then
 * (step 2) it execs (how "exec") or waits to be killed. */
static int fixed_responder(const char *how)
{
	struct ibv_mr *mr;
	struct node n;
	uint8_t *buf;
	char fd[16];
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (node_open(&n, 1, 16, true, 4, 4))
		return 10;
	buf = mmap((void *)(uintptr_t)FIXED_ADDR, BUF, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (buf != (void *)(uintptr_t)FIXED_ADDR)
		return 11;
	for (i = 0; i < BUF; i++)
		buf[i] = (uint8_t)(i * 13 + 5);
	mr = ibv_reg_mr(n.pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return 12;
	board->qpn[1] = n.qp->qp_num;
	board->gid[1] = n.gid;
	board->rkey = mr->rkey;
	board->addr = (uintptr_t)buf;
	atomic_store(&board->step, 1);
	if (!wait_step(2, 30))
		return 13;
	if (!strcmp(how, "exec")) {
		/* the QP is never destroyed; the new program is another */
		snprintf(fd, sizeof(fd), "%d", board_fd);
		execl("/proc/self/exe", "test_robust", "exec-secret", fd, (char *)NULL);
		return 14;
	}
	for (;;)
		pause();
}

/* The process that takes the killed responder's pid (clone3 with set_tid),
 * as uid 65534, the secret at the MR's address. Raw system calls only: it
 * is a copy of a threaded process that glibc was not told of. */
static pid_t secret_at_pid(pid_t pid)
{
	struct clone_args ca = { .exit_signal = SIGCHLD };
	long r;

	ca.set_tid = (uintptr_t)&pid;
	ca.set_tid_size = 1;
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r != 0)
		return (pid_t)r;
	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (syscall(SYS_setresgid, 65534, 65534, 65534) || syscall(SYS_setresuid, 65534, 65534, 65534) ||
	    map_secret())
		syscall(SYS_exit_group, 20);
	atomic_store(&board->step, 3);
	for (;;)
		syscall(SYS_pause);
}

/* An RDMA read of len bytes at the responder's MR into a.buf: the
 * completion's status, or -1 when none came in 5 s. */
static int read_responder(struct node *a, struct ibv_ah *ah, uint32_t len)
{
	struct ibv_wc wc;

	memset(a->buf, 0, BUF);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 1;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(a->qpx, board->rkey, board->addr);
	ibv_wr_set_sge(a->qpx, a->mr->lkey, (uintptr_t)a->buf, len);
	ibv_wr_set_ud_addr(a->qpx, ah, board->qpn[1], QKEY);
	if (ibv_wr_complete(a->qpx))
		return -2;
	return poll_n(a->cq, &wc, 1, 5) == 1 ? (int)wc.status : -1;
}

static int read_replaced(const char *how)
{
	struct ibv_ah *ah;
	struct node a;
	pid_t peer, other = -1;
	uint32_t j, len = 4096;
	int st, secret = 0, bad = 0;
	double t0;

	if (strcmp(how, "exec") && geteuid() != 0) {
		printf("skipped: the pid of a killed responder is given to another user's process "
		       "with clone3(set_tid), which needs root\n");
		return 77;
	}
	if (node_open(&a, 0, 16, true, 4, 4))
		return 10;
	peer = fork();
	if (peer == 0)
		_exit(fixed_responder(how));
	CHECK(wait_step(1, 20), "the responder did not come up");
	ah = ah_to(&a, &board->gid[1]);
	CHECK(ah != NULL, "AH: %s", strerror(errno));
	if (check_failures)
		goto out;
	/* a first read: the requester now knows the responder's process */
	st = read_responder(&a, ah, len);
	CHECK(st == IBV_WC_SUCCESS, "the first read: status %d", st);
	for (j = 0; j < len; j++)
		bad += a.buf[j] != (uint8_t)(j * 13 + 5);
	CHECK(bad == 0, "the first read: %d bytes differ from the responder's", bad);
	if (!strcmp(how, "exec")) {
		atomic_store(&board->step, 2);
	} else {
		kill(peer, SIGKILL);
		waitpid(peer, &st, 0);
		other = secret_at_pid(peer);
		CHECK(other == peer, "clone3 with the killed responder's pid %d: %ld (%s)", (int)peer,
		      (long)other, strerror(errno));
		if (other != peer)
			goto out;
	}
	CHECK(wait_step(3, 20), "the process with the responder's pid did not map its bytes");
	t0 = now();
	st = read_responder(&a, ah, len);
	for (j = 0; j < len; j++)
		secret += a.buf[j] == SECRET;
	printf("%s: the read of the replaced responder completed with status %d (%s) after "
	       "%.0f ms; %d of %u bytes are the new process's\n",
	       strcmp(how, "exec") ? "read-reuse" : "read-exec", st,
	       st >= 0 ? ibv_wc_status_str((enum ibv_wc_status)st) : "none", (now() - t0) * 1e3,
	       secret, len);
	CHECK(st == IBV_WC_RESP_TIMEOUT_ERR,
	      "the read of a responder that %s completed with status %d, want %d (RESP_TIMEOUT: "
	      "the responder is gone)", strcmp(how, "exec") ? "was killed" : "exec()ed", st,
	      IBV_WC_RESP_TIMEOUT_ERR);
	CHECK(secret == 0, "%d bytes of the process now at the responder's pid reached the buffer",
	      secret);
out:
	if (!strcmp(how, "exec") || other != peer) {
		kill(peer, SIGKILL);
		waitpid(peer, &st, 0);
	}
	if (other > 0 && other == peer) {
		kill(other, SIGKILL);
		waitpid(other, &st, 0);
	}
	return check_exit(strcmp(how, "exec") ? "test_robust read-reuse" : "test_robust read-exec");
}

static int read_exec(void)
{
	return read_replaced("exec");
}

static int read_reuse(void)
{
	return read_replaced("kill");
}

/* ------------------------------------------------------------ send-dereg */

/* The receiver: one receive posted, then stopped until the sender
 * deregistered its MR; then what arrived. */
static int dereg_receiver(void)
{
	struct ibv_wc wc;
	struct node n;
	int i, got;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (node_open(&n, 1, 16, true, 4, 4) || post_recv(&n, n.qp, 0, 4096, 9))
		return 10;
	board->qpn[1] = n.qp->qp_num;
	board->gid[1] = n.gid;
	atomic_store(&board->step, 1);
	raise(SIGSTOP);
	got = poll_n(n.cq, &wc, 1, 2);
	board->got = got;
	board->status = got ? (int)wc.status : -1;
	for (i = 0; i < 4096; i++)
		board->bad += n.buf[i] == SECRET;
	atomic_store(&board->step, 5);
	wait_step(6, 20);
	return 0;
}

static int send_dereg(void)
{
	struct ibv_wc wc;
	struct ibv_ah *ah;
	struct ibv_mr *smr;
	struct node a;
	uint8_t *sbuf;
	pid_t peer;
	int st, got;

	if (node_open(&a, 0, 16, true, 4, 4))
		return 10;
	sbuf = aligned_alloc(4096, 4096);
	if (!sbuf)
		return 11;
	memset(sbuf, 0x3c, 4096);
	smr = ibv_reg_mr(a.pd, sbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!smr)
		return 12;
	peer = fork();
	if (peer == 0)
		_exit(dereg_receiver());
	CHECK(wait_step(1, 20), "the receiver did not come up");
	CHECK(waitpid(peer, &st, WUNTRACED) == peer && WIFSTOPPED(st), "the receiver did not stop");
	ah = ah_to(&a, &board->gid[1]);
	CHECK(ah != NULL, "AH: %s", strerror(errno));
	if (check_failures)
		goto out;
	/* posted while the receiver's device cannot take the bytes */
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 1;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, smr->lkey, (uintptr_t)sbuf, 4096);
	ibv_wr_set_ud_addr(a.qpx, ah, board->qpn[1], QKEY);
	CHECK_ERR(ibv_wr_complete(a.qpx), 0);
	CHECK(poll_n(a.cq, &wc, 1, 0.1) == 0, "the send completed before the receiver ran");
	/* the MR goes; the buffer is the program's again */
	CHECK_ERR(ibv_dereg_mr(smr), 0);
	memset(sbuf, SECRET, 4096);
	kill(peer, SIGCONT);
	got = poll_n(a.cq, &wc, 1, 10);
	CHECK(got == 1, "the send did not complete");
	CHECK(wc.status == IBV_WC_LOC_PROT_ERR,
	      "a send whose MR was deregistered before its bytes were taken: status %d (%s), want "
	      "LOC_PROT_ERR (the device's LOCAL_ERROR_INVALID_LKEY)", wc.status,
	      ibv_wc_status_str(wc.status));
	CHECK(wait_step(5, 20), "the receiver did not report");
	printf("send-dereg: sender status %d (%s); the receiver got %d completion(s), %d bytes written "
	       "after the deregistration\n", wc.status, ibv_wc_status_str(wc.status), board->got,
	       board->bad);
	CHECK(board->got == 0, "the receiver got a completion (status %d) for a send whose MR was "
	      "deregistered", board->status);
	CHECK(board->bad == 0, "%d bytes written after ibv_dereg_mr() reached the receiver",
	      board->bad);
out:
	atomic_store(&board->step, 6);
	kill(peer, SIGCONT);
	waitpid(peer, &st, 0);
	return check_exit("test_robust send-dereg");
}

/* ------------------------------------------------------------ pidns */

#define NS_MSGS 200

/* Sends NS_MSGS to (gid, qpn) and takes NS_MSGS receives, then reads 4096
 * bytes of the peer's MR (rkey, addr): each counted in *sent, *recvd,
 * *reads (1 when the bytes are the pattern the peer wrote). */
static void ns_traffic(struct node *n, const union ibv_gid *gid, uint32_t qpn, uint32_t rkey,
		       uint64_t addr, int *sent, int *recvd, int *reads)
{
	struct ibv_wc wc[64];
	struct ibv_ah *ah = ah_to(n, gid);
	double end = now() + 30;
	int i, c, posted = 0, done = 0, bad = 0, said = 0, scomp = 0;

	if (!ah)
		return;
	while ((done < 2 * NS_MSGS) && now() < end) {
		while (posted < NS_MSGS && posted - scomp < 16) {
			if (send_to(n, ah, qpn, 0, 64, (uint64_t)posted))
				break;
			posted++;
		}
		c = ibv_poll_cq(n->cq, 64, wc);
		for (i = 0; i < c; i++, done++) {
			bool recv = wc[i].wr_id >= 5000; /* an error's opcode is undefined */

			if (wc[i].status != IBV_WC_SUCCESS && said++ < 5)
				fprintf(stderr, "pid %d: %s %llu: status %d (%s)\n", (int)getpid(),
					recv ? "receive" : "send", (unsigned long long)wc[i].wr_id,
					wc[i].status, ibv_wc_status_str(wc[i].status));
			scomp += !recv;
			if (wc[i].status == IBV_WC_SUCCESS)
				(*(recv ? recvd : sent))++;
		}
	}
	ibv_wr_start(n->qpx);
	n->qpx->wr_id = 1000;
	n->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(n->qpx, rkey, addr);
	ibv_wr_set_sge(n->qpx, n->mr->lkey, (uintptr_t)n->buf + 56000, 4096);
	ibv_wr_set_ud_addr(n->qpx, ah, qpn, QKEY);
	if (ibv_wr_complete(n->qpx) || poll_n(n->cq, wc, 1, 5) != 1) {
		fprintf(stderr, "pid %d: the RDMA read did not complete\n", (int)getpid());
	} else if (wc[0].status != IBV_WC_SUCCESS) {
		fprintf(stderr, "pid %d: the RDMA read: status %d (%s)\n", (int)getpid(), wc[0].status,
			ibv_wc_status_str(wc[0].status));
	} else {
		for (i = 0; i < 4096; i++)
			bad += n->buf[56000 + i] != (uint8_t)(i * 7 + 1);
		*reads = bad == 0;
	}
}

/* n's MR: NS_MSGS receives at 256 bytes each, the pattern a peer reads at
 * 51200. */
static int ns_node(struct node *n, int dev)
{
	int i;

	if (node_open(n, dev, 512, true, 64, NS_MSGS))
		return -1;
	for (i = 0; i < 4096; i++)
		n->buf[51200 + i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < NS_MSGS; i++)
		if (post_recv(n, n->qp, 256 * (uint32_t)i, 256, (uint64_t)(5000 + i)))
			return -1;
	return 0;
}

/* In the new pid namespace (pid 1 there). */
static int ns_child(void)
{
	int sent = 0, recvd = 0, reads = 0;
	struct node n;

	if (getpid() != 1 || ns_node(&n, 1))
		return 10;
	board->qpn[1] = n.qp->qp_num;
	board->gid[1] = n.gid;
	board->rkeys[1] = n.mr->rkey;
	board->addrs[1] = (uintptr_t)n.buf + 51200;
	atomic_store(&board->step, 1);
	if (!wait_step(2, 20))
		return 11;
	ns_traffic(&n, &board->gid[0], board->qpn[0], board->rkeys[0], board->addrs[0], &sent, &recvd,
		   &reads);
	board->sent = sent;
	board->recvd = recvd;
	board->reads = reads;
	atomic_store(&board->step, 3);
	wait_step(4, 60);
	return 0;
}

static int pidns(void)
{
	int sent = 0, recvd = 0, reads = 0, st;
	struct node n;
	pid_t outer;

	if (geteuid() != 0) {
		printf("skipped: a pid namespace of its own (unshare CLONE_NEWPID) needs root\n");
		return 77;
	}
	if (ns_node(&n, 0))
		return 10;
	board->qpn[0] = n.qp->qp_num;
	board->gid[0] = n.gid;
	board->rkeys[0] = n.mr->rkey;
	board->addrs[0] = (uintptr_t)n.buf + 51200;
	outer = fork();
	if (outer == 0) {
		pid_t inner;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID))
			_exit(30);
		inner = fork();
		if (inner == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(ns_child());
		}
		if (inner < 0 || waitpid(inner, &st, 0) != inner)
			_exit(31);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 32);
	}
	CHECK(wait_step(1, 20), "the peer in its own pid namespace did not come up");
	if (!check_failures) {
		atomic_store(&board->step, 2);
		ns_traffic(&n, &board->gid[1], board->qpn[1], board->rkeys[1], board->addrs[1], &sent,
			   &recvd, &reads);
		CHECK(wait_step(3, 60), "the peer in its own pid namespace did not finish");
	}
	printf("pidns: here %d sent, %d received, %d read; in the namespace %d sent, %d received, %d "
	       "read (of %d, %d, 1)\n", sent, recvd, reads, board->sent, board->recvd, board->reads,
	       NS_MSGS, NS_MSGS);
	CHECK(sent == NS_MSGS && recvd == NS_MSGS && reads == 1,
	      "to the peer in another pid namespace: %d of %d sent, %d of %d received, read %d", sent,
	      NS_MSGS, recvd, NS_MSGS, reads);
	CHECK(board->sent == NS_MSGS && board->recvd == NS_MSGS && board->reads == 1,
	      "from another pid namespace: %d of %d sent, %d of %d received, read %d", board->sent,
	      NS_MSGS, board->recvd, NS_MSGS, board->reads);
	atomic_store(&board->step, 4);
	waitpid(outer, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the peer in its own pid namespace: status %#x",
	      st);
	return check_exit("test_robust pidns");
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
	{ "read-stopped", read_stopped }, { "read-exec", read_exec }, { "read-reuse", read_reuse },
	{ "send-dereg", send_dereg }, { "pidns", pidns },
};

int main(int argc, char **argv)
{
	unsigned int i;
	pid_t pid;
	double end;
	int st;

	if (argc == 3 && !strcmp(argv[1], "exec-secret"))
		return exec_secret(atoi(argv[2]));
	board_fd = memfd_create("board", 0);
	if (board_fd < 0 || ftruncate(board_fd, 4096))
		return 2;
	board = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, board_fd, 0);
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
			"read-stopped|read-exec|read-reuse|send-dereg|pidns\n");
	return 2;
}
