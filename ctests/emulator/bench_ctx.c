// SPDX-License-Identifier: MIT
/*
 * Benchmark (not a test): how many times per second a process can open a
 * context on an emulated EFA device, query it with efadv_query_device and
 * close it. Run inside `efap2p sim`; scripts/bench-emulator.sh does.
 *
 * Usage: bench_ctx [ITERATIONS [RUNS]]. Prints one line:
 *   bench_ctx device=NAME iterations=N runs=R median_per_s=X min_per_s=Y max_per_s=Z median_us=U
 *
 * bench_ctx --startup N PROGRAM: the start-up cost of the preloaded library
 * in a process that never uses it: N spawns of PROGRAM with this process's
 * LD_PRELOAD and N without, interleaved. Prints one line:
 *   bench_startup program=P spawns=N with_us=A without_us=B added_us=C (medians)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

extern char **environ;

static double spawn_us(const char *prog, char **env)
{
	char *argv[] = { (char *)prog, NULL };
	double t0 = now();
	int status;
	pid_t pid;

	if (posix_spawn(&pid, prog, NULL, NULL, argv, env) || waitpid(pid, &status, 0) != pid)
		return -1;
	return (now() - t0) * 1e6;
}

static int startup(int n, const char *prog)
{
	double *with = calloc((size_t)n, sizeof(double)), *without = calloc((size_t)n, sizeof(double));
	char **bare;
	int i, k = 0;

	for (i = 0; environ[i]; i++)
		;
	bare = calloc((size_t)i + 1, sizeof(char *));
	if (!with || !without || !bare)
		return 1;
	for (i = 0; environ[i]; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			bare[k++] = environ[i];
	for (i = 0; i < n; i++) {
		with[i] = spawn_us(prog, environ);
		without[i] = spawn_us(prog, bare);
		if (with[i] < 0 || without[i] < 0) {
			fprintf(stderr, "bench_ctx: cannot run %s\n", prog);
			return 1;
		}
	}
	qsort(with, (size_t)n, sizeof(double), cmp);
	qsort(without, (size_t)n, sizeof(double), cmp);
	printf("bench_startup program=%s spawns=%d with_us=%.0f without_us=%.0f added_us=%.0f\n", prog, n,
	       with[n / 2], without[n / 2], with[n / 2] - without[n / 2]);
	free(with);
	free(without);
	free(bare);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--startup"))
		return startup(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1, argv[3]);

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
