// SPDX-License-Identifier: MIT
/*
 * The front's slow paths (anything beyond a lock-free read of a cached
 * answer) run inside a guard: the asynchronous signals blocked, so that a
 * host signal handler calling into the library cannot re-enter a path that
 * holds one of its locks, and cancellation disabled, so that a cancelled
 * caller cannot leave a lock held. Everything a guard covers is bounded (no
 * blocking read, no wait on anything but another thread's bounded work), so
 * a signal is only delayed, never lost. The real rdma-core functions are
 * always called outside a guard.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

static __thread struct efap2p_guard *active;

void efap2p_signals_block(sigset_t *old)
{
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t set;
	size_t i;

	/* the synchronous ones stay open, so that a fault is still a fault */
	sigfillset(&set);
	for (i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++)
		sigdelset(&set, sync_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void efap2p_guard_enter(struct efap2p_guard *g)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &g->cancel);
	efap2p_signals_block(&g->mask);
	g->npending = 0;
	g->outer = active;
	active = g;
}

int efap2p_guard_defer(const char *line, size_t len)
{
	struct efap2p_guard *g = active;

	if (!g)
		return 0;
	if (len <= sizeof(g->pending) - g->npending) {
		memcpy(g->pending + g->npending, line, len);
		g->npending += len;
	}
	return 1;
}

void efap2p_guard_leave(struct efap2p_guard *g)
{
	int saved = errno;

	active = g->outer;
	pthread_sigmask(SIG_SETMASK, &g->mask, NULL);
	pthread_setcancelstate(g->cancel, NULL);
	if (g->npending && active)
		efap2p_guard_defer(g->pending, g->npending);
	else if (g->npending && write(STDERR_FILENO, g->pending, g->npending) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}
