// SPDX-License-Identifier: MIT
/*
 * Completion channels through the unmodified libibverbs and libefa, as
 * qperf and rdma-core's CQ-event tests use them: ibv_create_comp_channel,
 * a CQ on it, ibv_req_notify_cq, ibv_get_cq_event (blocking, and with
 * poll() and O_NONBLOCK), ibv_ack_cq_events, the destroys.
 *
 * Runs inside `efap2p sim` on a model with two EFA NICs whose devices have
 * event queues (CQ_NOTIFICATIONS: p5.48xlarge). Every wait is bounded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"

#define QKEY 0x5eed1e55u

struct node {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	char buf[8192];
};

static struct ibv_device **devs;
static int marker;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int node_open(struct node *n, int dev, bool channel)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (!devs && !(devs = ibv_get_device_list(NULL)))
		return -1;
	n->ctx = ibv_open_device(devs[dev]);
	if (!n->ctx)
		return -1;
	n->ch = channel ? ibv_create_comp_channel(n->ctx) : NULL;
	n->pd = ibv_alloc_pd(n->ctx);
	n->cq = ibv_create_cq(n->ctx, 64, &marker, n->ch, 0);
	n->mr = n->pd ? ibv_reg_mr(n->pd, n->buf, sizeof(n->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if ((channel && !n->ch) || !n->cq || !n->mr)
		return -1;
	ia.send_cq = ia.recv_cq = n->cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	n->qp = ibv_create_qp(n->pd, &ia);
	if (!n->qp || ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(n->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -1;
	return ibv_query_gid(n->ctx, 1, 0, &n->gid);
}

static void node_close(struct node *n)
{
	CHECK_ERR(ibv_destroy_qp(n->qp), 0);
	CHECK_ERR(ibv_destroy_cq(n->cq), 0);
	CHECK_ERR(ibv_dereg_mr(n->mr), 0);
	CHECK_ERR(ibv_dealloc_pd(n->pd), 0);
	if (n->ch)
		CHECK_ERR(ibv_destroy_comp_channel(n->ch), 0);
	CHECK_ERR(ibv_close_device(n->ctx), 0);
}

static int post_recv(struct node *n, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)n->buf + 256 * (id % 16), 256, n->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(n->qp, &wr, &bad);
}

static int send_to(struct node *n, struct ibv_ah *ah, uint32_t qpn, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)n->buf + 4096, 64, n->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(n->qp, &wr, &bad);
}

static struct ibv_ah *ah_to(struct node *n, const union ibv_gid *gid)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	a.grh.dgid = *gid;
	return ibv_create_ah(n->pd, &a);
}

/* Waits up to ms for the channel to be readable: poll()'s answer. */
static int readable(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static int drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
		got += n;
	return got;
}

int main(void)
{
	struct ibv_cq *ev_cq;
	struct node a, b;
	struct ibv_ah *ah;
	void *ev_ctx;
	char small[4];
	double t;
	pid_t pid;
	int i, st, flags;

	alarm(120);
	if (node_open(&a, 0, false) || node_open(&b, 1, true)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 10;
	}
	ah = ah_to(&a, &b.gid);
	if (!ah)
		return 11;

	/* nothing yet: not readable, a non-blocking read is EAGAIN, a short
	 * one EINVAL once an event is there */
	CHECK(readable(b.ch, 0) == 0, "an idle channel is readable");
	flags = fcntl(b.ch->fd, F_GETFL);
	CHECK_ERR(fcntl(b.ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	errno = 0;
	CHECK(ibv_get_cq_event(b.ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
	      "a non-blocking read of an empty channel: errno %d", errno);
	CHECK_ERR(fcntl(b.ch->fd, F_SETFL, flags), 0);

	/* armed, then a completion: one event, for that CQ */
	CHECK_ERR(ibv_req_notify_cq(b.cq, 0), 0);
	CHECK_ERR(post_recv(&b, 1), 0);
	CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 1), 0);
	CHECK(readable(b.ch, 5000) == 1, "no event within 5 s of an armed CQ's completion");
	errno = 0;
	CHECK(read(b.ch->fd, small, sizeof(small)) == -1 && errno == EINVAL,
	      "a 4-byte read of an 8-byte event: errno %d", errno);
	CHECK(ibv_get_cq_event(b.ch, &ev_cq, &ev_ctx) == 0 && ev_cq == b.cq && ev_ctx == &marker,
	      "the event names the CQ and its context");
	ibv_ack_cq_events(b.cq, 1);
	CHECK(readable(b.ch, 0) == 0, "one arm gave two events");
	CHECK(drain(b.cq) == 1, "the completion");
	drain(a.cq);

	/* not armed: a completion makes no event */
	CHECK_ERR(post_recv(&b, 2), 0);
	CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 2), 0);
	for (t = now() + 5; !drain(b.cq) && now() < t;)
		;
	CHECK(readable(b.ch, 200) == 0, "an event without an arm");
	drain(a.cq);

	/* armed while a completion is already there unpolled: the event comes
	 * at once */
	CHECK_ERR(post_recv(&b, 3), 0);
	CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 3), 0);
	usleep(100000);
	CHECK_ERR(ibv_req_notify_cq(b.cq, 0), 0);
	CHECK(readable(b.ch, 5000) == 1, "no event for a completion there when armed");
	if (ibv_get_cq_event(b.ch, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
	drain(b.cq);
	drain(a.cq);

	/* the program blocks in ibv_get_cq_event (nobody polls): the device
	 * serves the queue and the event wakes it */
	CHECK_ERR(ibv_req_notify_cq(b.cq, 0), 0);
	CHECK_ERR(post_recv(&b, 4), 0);
	pid = fork();
	if (pid == 0) {
		struct node s;
		struct ibv_ah *sah;

		usleep(300000);
		if (node_open(&s, 0, false) || !(sah = ah_to(&s, &b.gid)) || send_to(&s, sah, b.qp->qp_num, 9))
			_exit(3);
		for (t = now() + 5; !drain(s.cq) && now() < t;)
			;
		_exit(0);
	}
	t = now();
	CHECK(ibv_get_cq_event(b.ch, &ev_cq, &ev_ctx) == 0 && ev_cq == b.cq, "a blocking wait: %s",
	      strerror(errno));
	printf("the blocked reader woke %.0f ms after it started waiting\n", (now() - t) * 1000);
	ibv_ack_cq_events(b.cq, 1);
	CHECK(drain(b.cq) == 1, "the completion behind the event");
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sender (%#x)", st);

	/* an event not read when the CQ goes: dropped with it, so that
	 * ibv_destroy_cq (which waits for the events it was told of to be
	 * acknowledged) returns */
	CHECK_ERR(ibv_req_notify_cq(b.cq, 0), 0);
	CHECK_ERR(post_recv(&b, 5), 0);
	CHECK_ERR(send_to(&a, ah, b.qp->qp_num, 5), 0);
	CHECK(readable(b.ch, 5000) == 1, "no event for the last completion");
	drain(a.cq);
	for (i = 0; i < 16; i++)
		post_recv(&a, (uint64_t)(100 + i)); /* a's CQ stays busy meanwhile */
	CHECK_ERR(ibv_destroy_ah(ah), 0);
	node_close(&a);
	CHECK_ERR(ibv_destroy_qp(b.qp), 0);
	CHECK_ERR(ibv_destroy_comp_channel(b.ch), EBUSY); /* a CQ still uses it */
	CHECK_ERR(ibv_destroy_cq(b.cq), 0);
	CHECK(readable(b.ch, 0) == 0, "the destroyed CQ's event is still there");
	CHECK_ERR(ibv_destroy_comp_channel(b.ch), 0);
	CHECK_ERR(ibv_dereg_mr(b.mr), 0);
	CHECK_ERR(ibv_dealloc_pd(b.pd), 0);
	CHECK_ERR(ibv_close_device(b.ctx), 0);
	ibv_free_device_list(devs);
	return check_exit("test_events");
}
