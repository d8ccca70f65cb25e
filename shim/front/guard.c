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
 * core's loading and calls (core.c), the loader sections below and the
 * short holds of the cache's insert lock (cache.c) block them. Everything
 * a guard covers is bounded. The real rdma-core functions are always called outside one.
 *
 * Calls into the dynamic loader made after the constructors (the core's
 * dlopen and dlsym, the scan of loaded objects, a late dlvsym of a real
 * function) run inside a loader section: one at a time, with the
 * asynchronous signals blocked, so that no handler runs inside the loader
 * on the library's behalf; and fork() waits for a section in flight in
 * another thread, since a child forked then would inherit the loader's
 * locks (glibc resets two of them in the child, not the one dlopen and
 * dl_iterate_phdr write under) held by a thread it does not have, and
 * hang in its first dlopen. A fork from inside a section of its own
 * thread (a host's handler of a synchronous signal, an audit module) does
 * not wait for itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
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

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int loader_depth;	/* sections of this thread entered */
static __thread int fork_holds_loader;	/* this thread's fork took the lock */

void efap2p_loader_enter(sigset_t *old)
{
	efap2p_signals_block(old);
	if (!loader_depth++)
		pthread_mutex_lock(&loader_lock);
}

void efap2p_loader_leave(const sigset_t *old)
{
	if (!--loader_depth)
		pthread_mutex_unlock(&loader_lock);
	efap2p_signals_restore(old);
}

/*
 * The wait is bounded: a section is one dlopen, a few dlsym or a walk of
 * the loaded objects, over in milliseconds; one that waits on something
 * this forking thread holds (a lock another library's prepare handler
 * took before this one ran, an allocator that locks itself for fork
 * first) would otherwise never end. Past the bound the fork goes on, as
 * it would without this library.
 */
#define FORK_WAIT_S 2

void efap2p_loader_atfork_prepare(void)
{
	struct timespec until;

	fork_holds_loader = 0;
	if (loader_depth)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += FORK_WAIT_S;
	fork_holds_loader = !pthread_mutex_clocklock(&loader_lock, CLOCK_MONOTONIC, &until);
}

void efap2p_loader_atfork_parent(void)
{
	if (fork_holds_loader)
		pthread_mutex_unlock(&loader_lock);
}

/* In the child: a section this thread was inside goes on (its lock is the
 * thread's); else the lock is free, or was held by a thread that is not
 * in the child. */
void efap2p_loader_atfork_child(void)
{
	if (!loader_depth)
		pthread_mutex_init(&loader_lock, NULL);
}
