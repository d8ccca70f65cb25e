// SPDX-License-Identifier: MIT
/*
 * One UD endpoint on the first emulated EFA device, for the fabric
 * security test (test_fabric_security.py), which runs it as root and as
 * another user:
 *
 *   fabric_peer victim       prints "pid N", waits for a line on stdin,
 *                            creates a QP ("qpn N" or "qp-error ERRNO"),
 *                            posts a receive and prints "ready", then
 *                            "received N" or "nothing" after 3 s
 *   fabric_peer send GID QPN creates a QP and sends 64 bytes to QPN at GID
 *                            (32 hex digits): "sent" or "qp-error ERRNO"
 *   fabric_peer twice        creates a QP ("qpn N" or "qp-error ERRNO"),
 *                            waits for a line on stdin, creates another
 *                            ("qpn N" or "qp-error ERRNO"), prints "done"
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define QKEY 0x600dcafeu

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_qp *make_qp(void)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_device **devs = ibv_get_device_list(NULL);
	struct ibv_qp *qp;

	if (!devs || !devs[0] || !(ctx = ibv_open_device(devs[0])))
		return NULL;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!pd || !cq || !mr)
		return NULL;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return NULL;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ? NULL : qp;
}

static int victim(void)
{
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), 0 };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	char line[64];
	struct ibv_qp *qp;
	struct ibv_wc wc;
	double end;

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	qp = make_qp();
	if (!qp) {
		printf("qp-error %d\n", errno);
		return 0;
	}
	{
		union ibv_gid gid;
		int i;

		if (ibv_query_gid(ctx, 1, 0, &gid))
			return 3;
		printf("gid ");
		for (i = 0; i < 16; i++)
			printf("%02x", gid.raw[i]);
		printf("\nqpn %u\n", qp->qp_num);
	}
	sge.lkey = mr->lkey;
	if (ibv_post_recv(qp, &wr, &bad))
		return 3;
	printf("ready\n");
	fflush(stdout);
	for (end = now() + 3; now() < end;) {
		if (ibv_poll_cq(cq, 1, &wc) == 1) {
			printf("received %u\n", wc.byte_len);
			return 0;
		}
		usleep(1000);
	}
	printf("nothing\n");
	return 0;
}

static int sender(const char *gidhex, uint32_t qpn)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_sge sge = { (uintptr_t)buf, 64, 0 };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	double end;
	int i;

	if (strlen(gidhex) != 32)
		return 2;
	for (i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(gidhex + 2 * i, "%2x", &b) != 1)
			return 2;
		aa.grh.dgid.raw[i] = (uint8_t)b;
	}
	qp = make_qp();
	if (!qp) {
		printf("qp-error %d\n", errno);
		return 0;
	}
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		return 3;
	sge.lkey = mr->lkey;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(qp, &wr, &bad))
		return 4;
	for (end = now() + 3; now() < end;)
		if (ibv_poll_cq(cq, 1, &wc) == 1)
			break;
	printf("sent\n");
	return 0;
}

static int twice(void)
{
	char line[64];
	struct ibv_qp *qp;
	int i;

	for (i = 0; i < 2; i++) {
		if (i && !fgets(line, sizeof(line), stdin))
			return 2;
		qp = make_qp();
		if (qp)
			printf("qpn %u\n", qp->qp_num);
		else
			printf("qp-error %d\n", errno);
	}
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "victim"))
		return victim();
	if (argc == 2 && !strcmp(argv[1], "twice"))
		return twice();
	if (argc == 4 && !strcmp(argv[1], "send"))
		return sender(argv[2], (uint32_t)strtoul(argv[3], NULL, 10));
	fprintf(stderr, "usage: fabric_peer victim | send GID QPN | twice\n");
	return 2;
}
