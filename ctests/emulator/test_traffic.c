// SPDX-License-Identifier: MIT
/*
 * Traffic between processes of one emulated host, through the unmodified
 * libibverbs and libefa (inside `efap2p sim`, any model with two EFAs).
 *
 *   test_traffic ring N M     N processes in a ring over SRD, on two devices
 *                             alternately: each sends M messages to the next
 *                             and receives M from the previous, checking
 *                             every byte and that each message arrives once
 *   test_traffic ring N M mixed  the same, the odd processes with
 *                             EFASIM_DIRECT_READ=0: they neither copy a send
 *                             from its sender's memory nor let theirs be, so
 *                             every send to them is first refused and then
 *                             carries its bytes (the way where ptrace rules
 *                             forbid one process to read another)
 *   test_traffic kill send    a sender streams sends to a receiver that is
 *   test_traffic kill read    killed (SIGKILL) mid-transfer, or streams RDMA
 *                             reads from it: the survivor must get an error
 *                             completion within 5 s, never hang
 *
 * Processes fork before any verbs call and meet through a shared page.
 * Every wait is bounded (alarm): a hang fails the test.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "check.h"

#define QKEY 0x2468ace0u
#define MSG 64
#define WINDOW 64
#define RECVS 256
#define MAXP 64
#define READ_LEN (1u << 20)

struct peer {
	atomic_int ready, done, killme;
	union ibv_gid gid;
	uint32_t qpn, rkey;
	uint64_t addr;
};

static struct peer *table;
/* kept to the end: libibverbs' devices stay reachable for memcheck */
static struct ibv_device **devs;

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int node_open(struct node *n, int dev, size_t len)
{
	struct ibv_qp_init_attr_ex ia = { 0 };
	struct efadv_qp_init_attr ea = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (!devs)
		devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0] || !devs[1])
		return -1;
	n->ctx = ibv_open_device(devs[dev]);
	if (!n->ctx)
		return -1;
	n->pd = ibv_alloc_pd(n->ctx);
	n->cq = ibv_create_cq(n->ctx, 2 * (WINDOW + RECVS), NULL, NULL, 0);
	if (!n->pd || !n->cq)
		return -1;
	ia.qp_type = IBV_QPT_DRIVER;
	ia.send_cq = ia.recv_cq = n->cq;
	ia.cap.max_send_wr = WINDOW;
	ia.cap.max_recv_wr = RECVS;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.pd = n->pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	n->qp = efadv_create_qp_ex(n->ctx, &ia, &ea, sizeof(ea));
	if (!n->qp)
		return -1;
	n->qpx = ibv_qp_to_qp_ex(n->qp);
	if (ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(n->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.rnr_retry = 7; /* the device retries until the receiver posts */
	if (ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY))
		return -1;
	n->len = len;
	n->buf = aligned_alloc(4096, len);
	if (!n->buf)
		return -1;
	memset(n->buf, 0, len);
	n->mr = ibv_reg_mr(n->pd, n->buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	return n->mr ? 0 : -1;
}

static void node_close(struct node *n)
{
	ibv_destroy_qp(n->qp);
	ibv_dereg_mr(n->mr);
	ibv_destroy_cq(n->cq);
	ibv_dealloc_pd(n->pd);
	ibv_close_device(n->ctx);
	free(n->buf);
}

static void publish(struct node *n, int me)
{
	ibv_query_gid(n->ctx, 1, 0, &table[me].gid);
	table[me].qpn = n->qp->qp_num;
	table[me].rkey = n->mr->rkey;
	table[me].addr = (uintptr_t)n->buf;
	atomic_store(&table[me].ready, 1);
}

static bool wait_flag(atomic_int *f, double secs)
{
	double end = now() + secs;

	while (!atomic_load(f))
		if (now() > end)
			return false;
		else
			usleep(1000);
	return true;
}

static struct ibv_ah *ah_for(struct node *n, int peer)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	a.grh.dgid = table[peer].gid;
	return ibv_create_ah(n->pd, &a);
}

static int post_recv(struct node *n, unsigned int slot)
{
	struct ibv_sge sge = { (uintptr_t)n->buf + (WINDOW + slot) * MSG, MSG, n->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(n->qp, &wr, &bad);
}

static void pattern(uint8_t *p, uint32_t from, uint32_t seq)
{
	unsigned int i;

	memcpy(p, &from, 4);
	memcpy(p + 4, &seq, 4);
	for (i = 8; i < MSG; i++)
		p[i] = (uint8_t)(from * 7 + seq * 13 + i);
}

static int send_msg(struct node *n, struct ibv_ah *ah, int to, unsigned int slot, uint32_t from,
		    uint32_t seq)
{
	uint8_t *p = n->buf + slot * MSG;

	pattern(p, from, seq);
	ibv_wr_start(n->qpx);
	n->qpx->wr_id = slot;
	n->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(n->qpx);
	ibv_wr_set_sge(n->qpx, n->mr->lkey, (uintptr_t)p, MSG);
	ibv_wr_set_ud_addr(n->qpx, ah, table[to].qpn, QKEY);
	return ibv_wr_complete(n->qpx);
}

/* ------------------------------------------------------------ ring */

static int ring_worker(int me, int np, uint32_t m)
{
	int next = (me + 1) % np, prev = (me + np - 1) % np;
	uint8_t *seen = calloc(m, 1), want[MSG];
	uint32_t sent = 0, acked = 0, got = 0, free_slots[WINDOW], nfree = WINDOW, i;
	struct ibv_wc wc[32];
	struct ibv_ah *ah;
	struct node n;

	alarm(120);
	if (!seen || node_open(&n, me % 2, (WINDOW + RECVS) * MSG)) {
		fprintf(stderr, "worker %d: setup: %s\n", me, strerror(errno));
		return 10;
	}
	publish(&n, me);
	if (!wait_flag(&table[next].ready, 30) || !(ah = ah_for(&n, next)))
		return 11;
	for (i = 0; i < RECVS; i++)
		CHECK_ERR(post_recv(&n, i), 0);
	for (i = 0; i < WINDOW; i++)
		free_slots[i] = i;
	while (acked < m || got < m) {
		int k, c;

		while (sent < m && nfree) {
			CHECK_ERR(send_msg(&n, ah, next, free_slots[--nfree], (uint32_t)me, sent), 0);
			sent++;
		}
		c = ibv_poll_cq(n.cq, 32, wc);
		if (!c)
			sched_yield(); /* leave the CPU to the device threads */
		for (k = 0; k < c; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				CHECK(0, "worker %d: %s completion %d (vendor %u)", me,
				      wc[k].opcode == IBV_WC_RECV ? "receive" : "send", wc[k].status,
				      wc[k].vendor_err);
				return check_exit("test_traffic ring");
			}
			if (wc[k].opcode == IBV_WC_SEND) {
				free_slots[nfree++] = (uint32_t)wc[k].wr_id;
				acked++;
				continue;
			}
			{
				uint8_t *p = n.buf + (WINDOW + wc[k].wr_id) * MSG;
				uint32_t from, seq;

				memcpy(&from, p, 4);
				memcpy(&seq, p + 4, 4);
				pattern(want, (uint32_t)prev, seq);
				CHECK(wc[k].byte_len == MSG && from == (uint32_t)prev && seq < m &&
				      !memcmp(p, want, MSG), "worker %d: message %u from %u, %u bytes", me, seq,
				      from, wc[k].byte_len);
				if (seq < m) {
					CHECK(!seen[seq], "worker %d: message %u twice", me, seq);
					seen[seq] = 1;
				}
				got++;
				CHECK_ERR(post_recv(&n, (uint32_t)wc[k].wr_id), 0);
			}
		}
		if (check_failures)
			return check_exit("test_traffic ring");
	}
	atomic_store(&table[me].done, 1);
	/* stay until every process is done: nobody sends to a closed QP */
	for (i = 0; i < (uint32_t)np; i++)
		if (!wait_flag(&table[i].done, 60))
			return 12;
	ibv_destroy_ah(ah);
	node_close(&n);
	free(seen);
	return check_exit("test_traffic ring");
}

/* ------------------------------------------------------------ kill */

static int kill_receiver(void)
{
	struct ibv_wc wc[32];
	struct node n;
	uint32_t got = 0, i;

	alarm(60);
	if (node_open(&n, 1, (WINDOW + RECVS) * MSG + READ_LEN))
		return 10;
	publish(&n, 1);
	for (i = 0; i < RECVS; i++)
		post_recv(&n, i);
	for (;;) { /* until killed */
		int k, c = ibv_poll_cq(n.cq, 32, wc);

		for (k = 0; k < c; k++) {
			post_recv(&n, (uint32_t)wc[k].wr_id);
			if (++got == 1000)
				atomic_store(&table[1].killme, 1);
		}
		if (!c && atomic_load(&table[0].killme))
			atomic_store(&table[1].killme, 1); /* the reader has started */
	}
}

static int kill_sender(bool reads)
{
	struct ibv_wc wc[32];
	double killed = 0, end;
	uint32_t outstanding = 0, seq = 0;
	struct ibv_ah *ah;
	struct node n;
	int rc = 1;

	alarm(60);
	if (node_open(&n, 0, WINDOW * MSG + READ_LEN))
		return 10;
	publish(&n, 0);
	if (!wait_flag(&table[1].ready, 30) || !(ah = ah_for(&n, 1)))
		return 11;
	end = now() + 50;
	while (now() < end) {
		int k, c;

		while (outstanding < (reads ? 4u : WINDOW)) {
			if (reads) {
				ibv_wr_start(n.qpx);
				n.qpx->wr_id = seq++;
				n.qpx->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_rdma_read(n.qpx, table[1].rkey, table[1].addr);
				ibv_wr_set_sge(n.qpx, n.mr->lkey, (uintptr_t)n.buf + WINDOW * MSG, READ_LEN);
				ibv_wr_set_ud_addr(n.qpx, ah, table[1].qpn, QKEY);
				if (ibv_wr_complete(n.qpx))
					break;
				atomic_store(&table[0].killme, 1);
			} else if (send_msg(&n, ah, 1, outstanding, 0, seq++)) {
				break;
			}
			outstanding++;
		}
		if (!killed && table[0].done)
			killed = now(); /* the parent killed the receiver */
		c = ibv_poll_cq(n.cq, 32, wc);
		for (k = 0; k < c; k++) {
			outstanding--;
			if (wc[k].status == IBV_WC_SUCCESS)
				continue;
			if (!killed) {
				CHECK(0, "an error (%d, vendor %u) before the peer was killed", wc[k].status,
				      wc[k].vendor_err);
			} else {
				double dt = now() - killed;

				printf("kill %s: error completion %d (vendor_err %u) %.0f ms after the kill\n",
				       reads ? "read" : "send", wc[k].status, wc[k].vendor_err, dt * 1000);
				CHECK(dt < 5, "the error came after %.1f s", dt);
				CHECK(wc[k].vendor_err == 13 || wc[k].vendor_err == 9 || wc[k].vendor_err == 8,
				      "vendor_err %u: want UNRESP_REMOTE, BAD_DEST_QPN or ABORT", wc[k].vendor_err);
				rc = 0;
			}
			outstanding -= (uint32_t)(c - k - 1); /* the rest of this batch */
			goto out;
		}
	}
	CHECK(0, "no error completion within 50 s of the kill");
out:
	/* the rest of what is outstanding completes too (flushed or failed) */
	end = now() + 10;
	while (outstanding && now() < end)
		outstanding -= (uint32_t)ibv_poll_cq(n.cq, 32, wc);
	CHECK(outstanding == 0, "%u operations never completed", outstanding);
	ibv_destroy_ah(ah);
	node_close(&n);
	return rc ? rc : check_exit("test_traffic kill");
}

static int run_kill(bool reads)
{
	pid_t recv, send;
	int st, rc = 0;

	recv = fork();
	if (recv == 0)
		exit(kill_receiver());
	send = fork();
	if (send == 0)
		{
		rc = kill_sender(reads);
		fflush(NULL);
		exit(rc);
	}
	if (!wait_flag(&table[1].killme, 30)) {
		fprintf(stderr, "the transfer never started\n");
		kill(send, SIGKILL);
		kill(recv, SIGKILL);
		rc = 1;
	} else {
		usleep(20000);
		kill(recv, SIGKILL);
		atomic_store(&table[0].done, 1);
	}
	waitpid(recv, &st, 0);
	waitpid(send, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the survivor: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		rc = 1;
	}
	if (!rc)
		printf("test_traffic kill %s: all checks passed\n", reads ? "read" : "send");
	return rc;
}

static int run_ring(int np, uint32_t m, bool mixed)
{
	pid_t pids[MAXP];
	int i, st, failed = 0;
	double t0 = now();

	for (i = 0; i < np; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			if (mixed && i % 2)
				setenv("EFASIM_DIRECT_READ", "0", 1);
			exit(ring_worker(i, np, m)); /* exit: libnl's destructors run */
		}
	}
	for (i = 0; i < np; i++) {
		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "worker %d: %s %d\n", i, WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			failed++;
		}
	}
	printf("test_traffic ring: %d processes x %u messages in %.2f s, %d failed\n", np, m,
	       now() - t0, failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	table = mmap(NULL, sizeof(*table) * MAXP, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (table == MAP_FAILED)
		return 2;
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "mixed"))) && !strcmp(argv[1], "ring") &&
	    atoi(argv[2]) > 1 && atoi(argv[2]) <= MAXP && atoi(argv[3]) > 0)
		return run_ring(atoi(argv[2]), (uint32_t)atoi(argv[3]), argc == 5);
	if (argc == 3 && !strcmp(argv[1], "kill") && (!strcmp(argv[2], "send") || !strcmp(argv[2], "read")))
		return run_kill(!strcmp(argv[2], "read"));
	fprintf(stderr, "usage: test_traffic ring N M [mixed] | kill send|read\n");
	return 2;
}
