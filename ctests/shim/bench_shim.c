// SPDX-License-Identifier: MIT
/*
 * libefap2p's benchmark harness (scripts/bench-shim.sh runs it; ctest does
 * not). Each mode prints key=value pairs on one line; times are medians.
 *
 *   bench_shim query RUNS N [first|last]
 *                                 efadv_query_device, warm, ns a call, on
 *                                 the first or the last (default) of the
 *                                 host's devices to be answered
 *   bench_shim reg RUNS N         ibv_reg_dmabuf_mr + ibv_dereg_mr of a warm
 *                                 allowed pair (rdmap79s0 + H100 53:00.0)
 *   bench_shim refused RUNS N     ibv_reg_dmabuf_mr of a refused pair
 *                                 (refused.json: rdmap3s0 + habanalabs 06:00.0);
 *                                 fstat_ns: one fstat() of the buffer, what
 *                                 telling which buffer a descriptor holds
 *                                 costs at the least (the emulator answers
 *                                 it); sys_fstat_ns: the system call alone
 *                                 on the buffer's memfd, the kernel's part
 *   bench_shim cold               first P2P_DMA answer for every device,
 *                                 from the first call (core load included);
 *                                 cpu_us is the process's CPU time, every
 *                                 thread; it opens the paths
 *                                 /nonexistent-efap2p-marker-cold-begin and
 *                                 -end around the answers, for a trace
 *                                 (scripts/floor-ops.py), and under
 *                                 callgrind counts only them
 *   bench_shim cold-split         the same, the core loaded and started first
 *   bench_shim startup N PROG...  PROG spawned N times with and without
 *                                 LD_PRELOAD=$BENCH_PRELOAD: wall time and
 *                                 peak RSS, medians
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "benchclock.h"
#include "shimtest.h"

extern char **environ;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A path that does not exist, opened so that a trace shows where. */
static void marker(const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/nonexistent-efap2p-marker-%s", name);
	fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Batches of n calls, through whatever the program binds to and straight
 * to libefa's or libibverbs' own function, alternated so that drift hits
 * both; the medians of the batches, in ns a call.
 */
struct pairtime {
	double ours, real;
};

static struct ibv_context *bench_ctx;
static struct efadv_device_attr bench_attr;

static void query_batch(int n, query_device_fn fn)
{
	int i;

	for (i = 0; i < n; i++)
		fn(bench_ctx, &bench_attr, sizeof(bench_attr));
}

static struct ibv_pd *bench_pd;
static int bench_fd, bench_ok = 1, bench_expect;

static void reg_batch(int n, reg_dmabuf_mr_fn fn)
{
	struct ibv_mr *mr;
	int i;

	for (i = 0; i < n; i++) {
		mr = fn(bench_pd, 0, 4096, 0, bench_fd, IBV_ACCESS_LOCAL_WRITE);
		bench_ok &= !!mr == bench_expect;
		if (mr)
			ibv_dereg_mr(mr);
	}
}

static struct pairtime alternate(int runs, int n, void (*batch)(int, void *), void *ours,
				 void *real)
{
	double to[64], tr[64], t0;
	struct pairtime pt;
	int r;

	batch(n, ours);	/* warm up both */
	batch(n, real);
	for (r = 0; r < runs && r < 64; r++) {
		t0 = now_ns();
		batch(n, ours);
		to[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		batch(n, real);
		tr[r] = (now_ns() - t0) / n;
	}
	pt.ours = median(to, r);
	pt.real = median(tr, r);
	return pt;
}

/* The warm query of the device answered first or last of all the host's
 * (a cache filled in that order: the last is a full table's newest entry). */
static void query(int runs, int n, int last)
{
	struct efadv_device_attr a;
	struct ibv_device **list;
	struct ibv_context *c;
	struct pairtime pt;
	int i, ndev = 0;

	list = ibv_get_device_list(&ndev);
	for (i = 0; list && i < ndev; i++) {
		c = ibv_open_device(list[i]);
		if (c)
			efadv_query_device(c, &a, sizeof(a));
		if (c && (last || !bench_ctx))
			bench_ctx = c;
	}
	if (!bench_ctx) {
		fprintf(stderr, "bench_shim: no device\n");
		exit(2);
	}
	pt = alternate(runs, n, (void (*)(int, void *))query_batch, (void *)efadv_query_device,
		       (void *)real_query_device());
	efadv_query_device(bench_ctx, &bench_attr, sizeof(bench_attr));
	printf("ours_ns=%.1f real_ns=%.1f added_ns=%.1f p2p=%d device=%s of=%d\n", pt.ours, pt.real,
	       pt.ours - pt.real, !!(bench_attr.device_caps & P2P_DMA_BIT),
	       ibv_get_device_name(bench_ctx->device), ndev);
}

/* The median of runs batches of n fstat() of the bench's buffer, ns each:
 * through libc (and so the emulator), or the bare system call. */
static double fstat_ns(int runs, int n, int bare)
{
	double t[64], t0;
	struct stat st;
	int r, i;

	for (r = 0; r < runs && r < 64; r++) {
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			if (bare)
				syscall(SYS_newfstatat, bench_fd, "", &st, AT_EMPTY_PATH);
			else
				fstat(bench_fd, &st);
		}
		t[r] = (now_ns() - t0) / n;
	}
	return median(t, r);
}

static void reg(int runs, int n, const char *dev, const char *owner, int expect_ok)
{
	struct efasim_api sim = efasim_api();
	unsigned long before;
	struct pairtime pt;

	bench_ctx = open_by_name(dev);
	bench_pd = ibv_alloc_pd(bench_ctx);
	bench_fd = sim.dmabuf_create(owner, NULL, 1 << 20);
	bench_expect = expect_ok;
	before = sim.reg_calls();
	pt = alternate(runs, n, (void (*)(int, void *))reg_batch, (void *)ibv_reg_dmabuf_mr,
		       (void *)real_reg_dmabuf_mr());
	printf("ours_ns=%.1f real_ns=%.1f added_ns=%.1f ok=%d kernel_calls=%lu of %d fstat_ns=%.1f sys_fstat_ns=%.1f\n",
	       pt.ours, pt.real, pt.ours - pt.real, bench_ok, sim.reg_calls() - before,
	       2 * n * (runs + 1), fstat_ns(runs, n, 0), fstat_ns(runs, n, 1));
}

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);

static void cold(int split)
{
	struct ibv_device **list;
	struct ibv_context **ctx;
	struct efadv_device_attr a;
	struct efadv_p2p_attr pa;
	int i, n = 0, set = 0;
	double t0, t1, t2, tf = 0, c0, c1;
	long rss0, rss1, f0, f1, s0, s1;

	list = ibv_get_device_list(&n);
	ctx = calloc((size_t)n + 1, sizeof(*ctx));
	if (!ctx)
		exit(2);
	for (i = 0; i < n; i++)
		ctx[i] = ibv_open_device(list[i]);
	rss0 = status_field("VmRSS:");
	marker("cold-begin");
	CALLGRIND_ZERO_STATS;
	faults(&f0, &s0);
	c0 = cpu_us();
	t0 = now_ns();
	if (split) {
		/* a peer no machine has: loads and starts the core, reads little */
		query_peer_fn q = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");

		if (q)
			q(ctx[0], "ffff:ff:1f.7", &pa, sizeof(pa));
	}
	t1 = now_ns();
	for (i = 0; i < n; i++) {
		if (ctx[i] && !efadv_query_device(ctx[i], &a, sizeof(a)))
			set += !!(a.device_caps & P2P_DMA_BIT);
		if (!i)
			tf = now_ns();
	}
	t2 = now_ns();
	c1 = cpu_us();
	faults(&f1, &s1);
	CALLGRIND_DUMP_STATS_AT("cold");
	marker("cold-end");
	rss1 = status_field("VmRSS:");
	printf("devices=%d p2p=%d load_us=%.1f first_us=%.1f answers_us=%.1f total_us=%.1f cpu_us=%.0f faults=%ld csw=%ld rss_kib=%ld threads=%ld core=%d\n",
	       n, set, (t1 - t0) / 1e3, (tf - t1) / 1e3, (t2 - t1) / 1e3, (t2 - t0) / 1e3, c1 - c0,
	       f1 - f0, s1 - s0, rss1 - rss0, status_field("Threads:"), core_mapped());
}

/* Spawns argv once; wall ns, and peak RSS (KiB) and CPU ns through *rss
 * and *cpu. */
static double spawn_once(char **argv, char **envp, long *rss, double *cpu)
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
	*cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
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
	double *cp = calloc((size_t)n, sizeof(double)), *cw = calloc((size_t)n, sizeof(double));
	long rss;
	int i;

	if (!lib) {
		fprintf(stderr, "BENCH_PRELOAD names the library to preload\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {	/* interleaved, so drift hits both */
		tp[i] = spawn_once(argv, plain, &rss, &cp[i]);
		rp[i] = (double)rss;
		tw[i] = spawn_once(argv, with, &rss, &cw[i]);
		rw[i] = (double)rss;
	}
	printf("without_us=%.1f with_us=%.1f added_us=%.1f without_cpu_us=%.1f with_cpu_us=%.1f added_cpu_us=%.1f without_kib=%.0f with_kib=%.0f added_kib=%.0f\n",
	       median(tp, n) / 1e3, median(tw, n) / 1e3, (median(tw, n) - median(tp, n)) / 1e3,
	       median(cp, n) / 1e3, median(cw, n) / 1e3, (median(cw, n) - median(cp, n)) / 1e3,
	       median(rp, n), median(rw, n), median(rw, n) - median(rp, n));
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "query"))
		query(atoi(argv[2]), atoi(argv[3]), argc == 4 || strcmp(argv[4], "first"));
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
