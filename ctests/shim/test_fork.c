// SPDX-License-Identifier: MIT
/*
 * fork() without exec under libefap2p, in the emulated p5.48xlarge: a child
 * never enters Go when its parent started the Go core; it answers from
 * what the parent cached in C memory, or passes through, and never hangs
 * (a 2 s alarm in each child; SIGALRM kills it and fails the test).
 *
 *   test_fork used    the parent asks first, then forks
 *   test_fork fresh   the parent never asks: the child starts its own core,
 *                     and its own child is back to the first case
 *   test_fork during-load LIB  in 20 fresh processes that have loaded LIB
 *                     (bigdata.c), one thread makes the first call (the
 *                     core loads) while the main thread forks
 *                     child after child until it returns; each child loads
 *                     a library with dlopen() and asks, and must not hang
 *                     (fork waits for a load in flight: a child forked
 *                     inside one would inherit the loader's locks held)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "shimtest.h"

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);
typedef int (*query_dmabuf_fn)(struct ibv_context *, int, struct efadv_p2p_attr *, uint32_t);

static struct ibv_context *a, *b;	/* rdmap79s0 and rdmap80s0 */
static struct ibv_pd *pda, *pdb;
static int gpu;				/* a dma-buf of the H100 53:00.0 */
static query_peer_fn query_peer;
static query_dmabuf_fn query_dmabuf;

static int p2p_bit(struct ibv_context *ctx)
{
	struct efadv_device_attr attr;
	int rc = efadv_query_device(ctx, &attr, sizeof(attr));

	CHECK_ERR(rc, 0);
	return !rc && (attr.device_caps & P2P_DMA_BIT);
}

static void reg_ok(struct ibv_pd *pd, const char *what)
{
	struct ibv_mr *mr = ibv_reg_dmabuf_mr(pd, 0, 1 << 20, 0, gpu, IBV_ACCESS_LOCAL_WRITE);

	CHECK(mr != NULL, "%s: ibv_reg_dmabuf_mr: %s", what, strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
}

/* Runs fn in a child with a 2 s watchdog; the child's failures fail us. */
static void in_child(void (*fn)(void), const char *what)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		signal(SIGALRM, SIG_DFL);
		alarm(2);
		fn();
		_exit(check_failures > 100 ? 100 : check_failures);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return;
	CHECK(!WIFSIGNALED(st), "%s: killed by signal %d%s", what, WTERMSIG(st),
	      WTERMSIG(st) == SIGALRM ? " (hung for 2 s)" : "");
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "%s: %d check(s) failed", what,
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The child of a parent that asked about rdmap79s0 only. */
static void child_of_used(void)
{
	struct efadv_p2p_attr attr;

	CHECK(p2p_bit(a), "child: rdmap79s0 lost P2P_DMA (it was cached)");
	CHECK(!p2p_bit(b), "child: rdmap80s0 has P2P_DMA, which only Go could have said");
	reg_ok(pda, "child, cached pair");
	reg_ok(pdb, "child, pair not cached");
	CHECK_ERR(query_peer(a, "0000:53:00.0", &attr, sizeof(attr)), 0);
	CHECK(attr.outcome == EFADV_P2P_OUTCOME_P2P && attr.reason, "child: cached peer");
	CHECK_ERR(query_peer(a, "0000:64:00.0", &attr, sizeof(attr)), ECHILD);
	CHECK_ERR(query_dmabuf(a, gpu, &attr, sizeof(attr)), 0);
	CHECK_ERR(query_dmabuf(b, gpu, &attr, sizeof(attr)), ECHILD);
}

static void grandchild(void)
{
	CHECK(p2p_bit(a), "grandchild: rdmap79s0 lost P2P_DMA");
	CHECK(!p2p_bit(b), "grandchild: rdmap80s0 has P2P_DMA");
}

/* The child of a parent that never asked: no Go runtime to inherit. */
static void child_of_fresh(void)
{
	CHECK(p2p_bit(a), "fresh child: rdmap79s0 has no P2P_DMA");
	in_child(grandchild, "grandchild");
}

static atomic_int first_done;

static void *first_call(void *arg)
{
	(void)arg;
	CHECK(p2p_bit(a), "first call: rdmap79s0 has no P2P_DMA");
	atomic_store(&first_done, 1);
	return NULL;
}

/* A child of a fork made while the first call may be loading the core:
 * the loader must be usable, and the library must answer. */
static void child_of_load(void)
{
	void *h = dlopen("libanl.so.1", RTLD_NOW | RTLD_LOCAL);

	CHECK(h != NULL, "child: dlopen libanl.so.1: %s", dlerror());
	if (h)
		dlclose(h);
	p2p_bit(b);
}

/* One fresh process: forks child after child, without waiting for them,
 * while the first call runs; then reaps them all. */
static int load_round(void)
{
	enum { MAX_CHILDREN = 256 };
	static pid_t kids[MAX_CHILDREN];
	pthread_t t;
	int n = 0, i, hung = 0, tries;

	CHECK_ERR(pthread_create(&t, NULL, first_call, NULL), 0);
	while (!atomic_load(&first_done) && n < MAX_CHILDREN) {
		pid_t pid = fork();

		if (pid == 0) {
			signal(SIGALRM, SIG_DFL);
			alarm(10);	/* a loaded machine runs hundreds of them */
			child_of_load();
			_exit(check_failures > 100 ? 100 : check_failures);
		}
		CHECK(pid > 0, "fork: %s", strerror(errno));
		if (pid < 0)
			break;
		kids[n++] = pid;
	}
	pthread_join(t, NULL);
	/* 30 s for them all: a child that hangs with SIGALRM blocked (inside
	 * the library's load) is killed here */
	for (i = 0, tries = 0; i < n; ) {
		int st;
		pid_t got = waitpid(kids[i], &st, WNOHANG);

		if (got == 0 && tries++ < 30000) {
			usleep(1000);
			continue;
		}
		if (got == 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], &st, 0);
			st = SIGALRM;	/* as if its own alarm had killed it */
		}
		i++;
		if (got < 0)
			continue;
		hung += WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "child %d of %d forked during the first call: %s %d%s",
		      i - 1, n, WIFSIGNALED(st) ? "killed by signal" : "exit status",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
		      WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (hung)" : "");
	}
	printf("test_fork: %d children forked during the first call, %d hung\n", n, hung);
	return check_exit("test_fork load-round");
}

/* Runs load_round in 20 fresh processes (exec), each with a 120 s
 * watchdog. */
static void during_load(char *lib)
{
	char *args[] = { "test_fork", "load-round", lib, NULL };
	int round;

	for (round = 0; round < 20; round++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			alarm(120);
			execv("/proc/self/exe", args);
			_exit(127);
		}
		CHECK(pid > 0, "fork: %s", strerror(errno));
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			continue;
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "round %d: %s %d", round,
		      WIFSIGNALED(st) ? "killed by signal" : "exit status",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
}

static void setup(void)
{
	struct efasim_api sim = efasim_api();

	a = open_by_name("rdmap79s0");
	b = open_by_name("rdmap80s0");
	if (!a || !b)
		exit(check_exit("test_fork"));
	pda = ibv_alloc_pd(a);
	pdb = ibv_alloc_pd(b);
	gpu = sim.dmabuf_create("0000:53:00.0", NULL, 2 << 20);
	query_peer = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	query_dmabuf = (query_dmabuf_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_dmabuf");
	CHECK(pda && pdb && gpu >= 0 && query_peer && query_dmabuf, "setup");
}

int main(int argc, char **argv)
{
	struct efadv_p2p_attr attr;

	if (argc == 3 && !strcmp(argv[1], "during-load")) {
		during_load(argv[2]);
		return check_exit("test_fork during-load");
	}
	if (argc == 3 && !strcmp(argv[1], "load-round")) {
		CHECK(dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) != NULL, "dlopen %s: %s", argv[2], dlerror());
		setup();
		return load_round();
	}
	if (argc != 2 || (strcmp(argv[1], "used") && strcmp(argv[1], "fresh"))) {
		fprintf(stderr, "usage: %s used|fresh\n       %s during-load LIBRARY\n", argv[0], argv[0]);
		return 2;
	}
	setup();
	if (!strcmp(argv[1], "used")) {
		CHECK(p2p_bit(a), "rdmap79s0 has no P2P_DMA");
		reg_ok(pda, "parent");
		CHECK_ERR(query_peer(a, "0000:53:00.0", &attr, sizeof(attr)), 0);
		CHECK_ERR(query_dmabuf(a, gpu, &attr, sizeof(attr)), 0);
		in_child(child_of_used, "child");
		in_child(child_of_used, "second child");
	} else {
		in_child(child_of_fresh, "child");
		CHECK(p2p_bit(a), "rdmap79s0 has no P2P_DMA");
	}
	/* the parent's Go core is untouched by its children */
	CHECK(p2p_bit(b), "parent: rdmap80s0 has no P2P_DMA");
	CHECK_ERR(query_peer(b, "0000:64:00.0", &attr, sizeof(attr)), 0);
	return check_exit("test_fork");
}
