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
 */
#define _GNU_SOURCE
#include <signal.h>
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

	if (argc != 2 || (strcmp(argv[1], "used") && strcmp(argv[1], "fresh"))) {
		fprintf(stderr, "usage: %s used|fresh\n", argv[0]);
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
