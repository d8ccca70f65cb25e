/*
 * libefap2p's benchmark harness (scripts/bench-shim.sh runs it; ctest does
 * not). Each mode prints key=value pairs on one line; times are medians.
 *
 *   bench_shim query RUNS N       efadv_query_device, warm, ns a call
 *   bench_shim reg RUNS N         ibv_reg_dmabuf_mr + ibv_dereg_mr of a warm
 *                                 allowed pair (rdmap79s0 + H100 53:00.0)
 *   bench_shim refused RUNS N     ibv_reg_dmabuf_mr of a refused pair
 *                                 (refused.json: rdmap3s0 + xe 06:00.0)
 *   bench_shim cold               first P2P_DMA answer for every device,
 *                                 from the first call (core load included)
 *   bench_shim cold-split         the same, the core loaded and started first
 *   bench_shim startup N PROG...  PROG spawned N times with and without
 *                                 LD_PRELOAD=$BENCH_PRELOAD: wall time and
 *                                 peak RSS, medians
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "shimtest.h"

extern char **environ;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void query(int runs, int n)
{
	struct ibv_context *ctx = open_by_name("rdmap79s0");
	struct efadv_device_attr a;
	double t[64];
	int r, i;

	efadv_query_device(ctx, &a, sizeof(a));
	for (r = 0; r < runs && r < 64; r++) {
		double t0 = now_ns();

		for (i = 0; i < n; i++)
			efadv_query_device(ctx, &a, sizeof(a));
		t[r] = (now_ns() - t0) / n;
	}
	printf("ns=%.1f p2p=%d\n", median(t, r), !!(a.device_caps & P2P_DMA_BIT));
}

static void reg(int runs, int n, const char *dev, const char *owner, int expect_ok)
{
	struct efasim_api sim = efasim_api();
	struct ibv_context *ctx = open_by_name(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	int fd = sim.dmabuf_create(owner, NULL, 1 << 20), r, i, ok = 1;
	unsigned long calls = 0;
	double t[64];
	struct ibv_mr *mr;

	for (r = -1; r < runs && r < 64; r++) {	/* run -1 warms up */
		double t0 = now_ns();

		for (i = 0; i < n; i++) {
			mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, fd, IBV_ACCESS_LOCAL_WRITE);
			ok &= !!mr == expect_ok;
			if (mr)
				ibv_dereg_mr(mr);
		}
		if (r >= 0)
			t[r] = (now_ns() - t0) / n;
		if (r == -1)
			calls = sim.reg_calls();
	}
	printf("ns=%.1f ok=%d kernel_calls=%lu\n", median(t, r), ok, sim.reg_calls() - calls);
}

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);

static void cold(int split)
{
	struct ibv_device **list;
	struct ibv_context *ctx[64];
	struct efadv_device_attr a;
	struct efadv_p2p_attr pa;
	int i, n = 0, set = 0;
	double t0, t1, t2;

	list = ibv_get_device_list(&n);
	for (i = 0; i < n && i < 64; i++)
		ctx[i] = ibv_open_device(list[i]);
	t0 = now_ns();
	if (split) {
		/* a peer no machine has: loads and starts the core, reads little */
		query_peer_fn q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");

		if (q)
			q(ctx[0], "ffff:ff:1f.7", &pa, sizeof(pa));
	}
	t1 = now_ns();
	for (i = 0; i < n && i < 64; i++)
		if (!efadv_query_device(ctx[i], &a, sizeof(a)))
			set += !!(a.device_caps & P2P_DMA_BIT);
	t2 = now_ns();
	printf("devices=%d p2p=%d load_us=%.1f answers_us=%.1f total_us=%.1f\n", n, set,
	       (t1 - t0) / 1e3, (t2 - t1) / 1e3, (t2 - t0) / 1e3);
}

/* Spawns argv once; wall ns and peak RSS (KiB) through *rss. */
static double spawn_once(char **argv, char **envp, long *rss)
{
	struct rusage ru;
	double t0 = now_ns();
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp)) {
		perror("posix_spawnp");
		exit(1);
	}
	wait4(pid, &st, 0, &ru);
	*rss = ru.ru_maxrss;
	return now_ns() - t0;
}

/* environ without LD_PRELOAD, plus preload when given */
static char **env_with(const char *preload)
{
	static char buf[4096];
	int n = 0, i;
	char **env;

	while (environ[n])
		n++;
	env = calloc((size_t)n + 2, sizeof(*env));
	for (i = 0, n = 0; environ[i]; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[n++] = environ[i];
	if (preload) {
		snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", preload);
		env[n++] = buf;
	}
	return env;
}

static void startup(int n, char **argv)
{
	const char *lib = getenv("BENCH_PRELOAD");
	char **plain = env_with(NULL), **with = env_with(lib);
	double *tp = calloc((size_t)n, sizeof(double)), *tw = calloc((size_t)n, sizeof(double));
	double *rp = calloc((size_t)n, sizeof(double)), *rw = calloc((size_t)n, sizeof(double));
	long rss;
	int i;

	if (!lib) {
		fprintf(stderr, "BENCH_PRELOAD names the library to preload\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {	/* interleaved, so drift hits both */
		tp[i] = spawn_once(argv, plain, &rss);
		rp[i] = (double)rss;
		tw[i] = spawn_once(argv, with, &rss);
		rw[i] = (double)rss;
	}
	printf("without_us=%.1f with_us=%.1f added_us=%.1f without_kib=%.0f with_kib=%.0f added_kib=%.0f\n",
	       median(tp, n) / 1e3, median(tw, n) / 1e3, (median(tw, n) - median(tp, n)) / 1e3,
	       median(rp, n), median(rw, n), median(rw, n) - median(rp, n));
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "query"))
		query(atoi(argv[2]), atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "reg"))
		reg(atoi(argv[2]), atoi(argv[3]), "rdmap79s0", "0000:53:00.0", 1);
	else if (argc == 4 && !strcmp(argv[1], "refused"))
		reg(atoi(argv[2]), atoi(argv[3]), "rdmap3s0", "0000:06:00.0", 0);
	else if (argc == 2 && !strcmp(argv[1], "cold"))
		cold(0);
	else if (argc == 2 && !strcmp(argv[1], "cold-split"))
		cold(1);
	else if (argc >= 4 && !strcmp(argv[1], "startup"))
		startup(atoi(argv[2]), argv + 3);
	else {
		fprintf(stderr, "usage: see the comment at the top of bench_shim.c\n");
		return 2;
	}
	return 0;
}
