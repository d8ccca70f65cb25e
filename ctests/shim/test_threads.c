// SPDX-License-Identifier: MIT
/*
 * Threads and libefap2p, in the emulated p5.48xlarge.
 *
 *   test_threads idle     a process that loads the library and uses RDMA,
 *                         but never calls an efap2p function, has one
 *                         thread and no Go core mapped
 *   test_threads stress   32 threads x 10,000 mixed calls (P2P_DMA
 *                         queries, dma-buf registrations, pairwise queries)
 *                         give the model's answers and keep errno; meant to
 *                         run under AddressSanitizer too
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "shimtest.h"

#define THREADS 32
#define CALLS 10000
#define NICS 32
#define GPUS 8

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);
typedef int (*query_dmabuf_fn)(struct ibv_context *, int, struct efadv_p2p_attr *, uint32_t);

/* The H100s of p5.48xlarge, one a PCIe switch. */
static const char *const gpus[GPUS] = {
	"0000:53:00.0", "0000:64:00.0", "0000:75:00.0", "0000:86:00.0",
	"0000:97:00.0", "0000:a8:00.0", "0000:b9:00.0", "0000:ca:00.0",
};

static struct ibv_context *ctx[NICS];
static struct ibv_pd *pd[NICS];
static int buf[GPUS];
static query_peer_fn query_peer;
static query_dmabuf_fn query_dmabuf;
static atomic_int failures;

static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int idle(void)
{
	struct ibv_device_attr attr;
	struct ibv_context *c = open_by_name("rdmap79s0");

	CHECK(c && !ibv_query_device(c, &attr), "ibv_query_device");
	CHECK_EQ(threads_now(), 1);
	CHECK(!core_mapped(), "the Go core is mapped");
	if (c)
		ibv_close_device(c);
	return check_exit("test_threads idle");
}

static void fail(const char *what, int t, int i, int v)
{
	if (atomic_fetch_add(&failures, 1) < 10)
		fprintf(stderr, "FAIL thread %d call %d: %s (%d)\n", t, i, what, v);
}

static void one_call(int t, int i)
{
	struct efadv_device_attr da;
	struct efadv_p2p_attr pa;
	int nic = (t * 7 + i) % NICS, g = nic / 4, rc;
	struct ibv_mr *mr;

	errno = 1000 + t;
	switch (i % 4) {
	case 0:
		rc = efadv_query_device(ctx[nic], &da, sizeof(da));
		if (rc || !(da.device_caps & P2P_DMA_BIT))
			fail("efadv_query_device", t, i, rc);
		break;
	case 1:
		mr = ibv_reg_dmabuf_mr(pd[nic], 0, 4096, 0, buf[(g + i) % GPUS], IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			fail("ibv_reg_dmabuf_mr", t, i, errno);
		else if (ibv_dereg_mr(mr))
			fail("ibv_dereg_mr", t, i, errno);
		errno = 1000 + t;
		break;
	case 2:
		rc = query_peer(ctx[nic], gpus[(g + i) % GPUS], &pa, sizeof(pa));
		if (rc || pa.outcome != EFADV_P2P_OUTCOME_P2P || !pa.reason)
			fail("efadv_p2p_query_peer", t, i, rc);
		break;
	case 3:
		rc = query_dmabuf(ctx[nic], buf[g], &pa, sizeof(pa));
		if (rc || pa.peer_bus != (uint8_t)strtoul(gpus[g] + 5, NULL, 16))
			fail("efadv_p2p_query_dmabuf", t, i, rc);
		break;
	}
	if (errno != 1000 + t)
		fail("errno changed", t, i, errno);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg, i;

	for (i = 0; i < CALLS; i++)
		one_call(t, i);
	return NULL;
}

static int stress(void)
{
	struct efasim_api sim = efasim_api();
	pthread_t th[THREADS];
	char name[32];
	int i;

	query_peer = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	query_dmabuf = (query_dmabuf_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_dmabuf");
	CHECK(query_peer && query_dmabuf, "libefap2p is not loaded");
	if (!query_peer)
		return check_exit("test_threads stress");
	/* NIC i is the (i % 4)th EFA of GPU i / 4's switch: buses 4f-52,
	 * 60-63, ... c6-c9, named rdmap<bus in decimal>s0 */
	for (i = 0; i < NICS; i++) {
		snprintf(name, sizeof(name), "rdmap%ds0", 0x4f + 0x11 * (i / 4) + i % 4);
		ctx[i] = open_by_name(name);
		pd[i] = ctx[i] ? ibv_alloc_pd(ctx[i]) : NULL;
		if (!pd[i])
			return check_exit("test_threads stress");
	}
	for (i = 0; i < GPUS; i++)
		buf[i] = sim.dmabuf_create(gpus[i], NULL, 1 << 20);
	for (i = 0; i < THREADS; i++)
		CHECK_ERR(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(!failures, "%d call(s) failed", failures);
	for (i = 0; i < NICS; i++) {
		ibv_dealloc_pd(pd[i]);
		ibv_close_device(ctx[i]);
	}
	return check_exit("test_threads stress");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "idle"))
		return idle();
	if (argc == 2 && !strcmp(argv[1], "stress"))
		return stress();
	fprintf(stderr, "usage: %s idle|stress\n", argv[0]);
	return 2;
}
