/*
 * Benchmark (not a test): how many times per second a process can open a
 * context on an emulated EFA device, query it with efadv_query_device and
 * close it. Run inside `efap2p sim`; scripts/bench-emulator.sh does.
 *
 * Usage: bench_ctx [ITERATIONS [RUNS]]. Prints one line:
 *   bench_ctx device=NAME iterations=N runs=R median_per_s=X min_per_s=Y max_per_s=Z median_us=U
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cycle(struct ibv_device *dev)
{
	struct efadv_device_attr attr;
	struct ibv_context *ctx = ibv_open_device(dev);
	int rc;

	if (!ctx)
		return errno ? errno : -1;
	rc = efadv_query_device(ctx, &attr, sizeof(attr));
	if (ibv_close_device(ctx) && !rc)
		rc = -1;
	return rc;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000, runs = argc > 2 ? atoi(argv[2]) : 7, n = 0, i, r;
	struct ibv_device **list = ibv_get_device_list(&n);
	double rate[64], t0;

	if (!list || n == 0 || iters <= 0 || runs <= 0 || runs > 64) {
		fprintf(stderr, "bench_ctx: no EFA device (run it inside 'efap2p sim') or bad arguments\n");
		return 1;
	}
	for (i = 0; i < iters / 10 + 1; i++) /* warm up */
		if (cycle(list[0])) {
			fprintf(stderr, "bench_ctx: %s\n", strerror(errno));
			return 1;
		}
	for (r = 0; r < runs; r++) {
		t0 = now();
		for (i = 0; i < iters; i++)
			if (cycle(list[0]))
				return 1;
		rate[r] = iters / (now() - t0);
	}
	qsort(rate, (size_t)runs, sizeof(rate[0]), cmp);
	printf("bench_ctx device=%s iterations=%d runs=%d median_per_s=%.0f min_per_s=%.0f max_per_s=%.0f median_us=%.2f\n",
	       ibv_get_device_name(list[0]), iters, runs, rate[runs / 2], rate[0], rate[runs - 1],
	       1e6 / rate[runs / 2]);
	ibv_free_device_list(list);
	return 0;
}
