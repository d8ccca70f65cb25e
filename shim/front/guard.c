// SPDX-License-Identifier: MIT
/*
 * The front's slow paths (anything beyond a lock-free read of a cached
 * answer) run inside a guard:
 * - cancellation disabled, so that a cancelled caller cannot leave one of
 *   the library's locks held;
 * - a mark in the thread, so that a signal handler that calls into the
 *   library while the thread is inside a guard is noticed at the entry
 *   (efap2p_reentered) and answered without a lock (from what is cached,
 *   or passed through) instead of waiting for a lock its own thread holds;
 * - log lines kept and written once the guard is left, so that a write to
 *   a full pipe delays the caller, never a lock holder.
 * Signals stay open (no system call in a guard of its own): only the Go
 * core's loading and calls block them (core.c). Everything a guard covers
 * is bounded. The real rdma-core functions are always called outside one.
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

void efap2p_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void efap2p_guard_enter(struct efap2p_guard *g)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &g->cancel);
	g->npending = 0;
	g->outer = active;
	active = g;
}

int efap2p_reentered(void)
{
	return active != NULL;
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
	pthread_setcancelstate(g->cancel, NULL);
	if (g->npending && active)
		efap2p_guard_defer(g->pending, g->npending);
	else if (g->npending && write(STDERR_FILENO, g->pending, g->npending) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}
