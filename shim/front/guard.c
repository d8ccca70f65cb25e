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
 * core's loading and calls (core.c) and the loader sections below block
 * them. Everything a guard covers is bounded. The real rdma-core functions are always called outside one.
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
 *
 * A guard abandoned by a siglongjmp out of a signal handler (a timer that
 * gives up on a slow call) stays marked in its thread; the next call of
 * that thread tells it from a handler's call by where its frame lies: a
 * handler runs below the frame it interrupted, or on the alternate signal
 * stack, and a call made after the jump starts above the abandoned guard.
 * The abandoned mark is then dropped and the thread's cancellation state
 * restored. A lock a jump can leave held (the caches' insert lock, the
 * environment's and the topology file's: the others are held with the
 * asynchronous signals blocked) names its holder: that thread takes it
 * over when it next comes to take it, and redoes what was left half done
 * (each publishes its work last); other threads wait for it a bounded
 * time (efap2p_lock_take_within), then go on without what it guards, and
 * wait for that holder no more.
 *
 * The library's own locks that fork() takes (the loader sections', the
 * caches' insert lock) are words that name the thread holding them
 * (efap2p_lock): taking one and saying who holds it are one atomic step,
 * so a fork from a signal handler can tell that its own thread holds a
 * lock (inside a section, an insert, or an outer fork of the same thread
 * between its prepare and parent handlers) and does not wait for it. Each
 * fork handler is told its fork's nesting level in the thread, and a lock
 * a fork took is released by that fork's handlers only: a fork nested in
 * another (a handler of a signal that arrived during the program's fork())
 * neither takes nor releases what the outer one holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "front.h"


/* ---- locks that name their holder ---- */

/* Set in a lock's word while a waiter sleeps on it. */
#define LOCK_SLEEPERS 0x80000000u

static _Atomic uint32_t next_mark = 1;
static __thread uint32_t thread_mark;

uint32_t efap2p_thread_mark(void)
{
	uint32_t m = thread_mark;

	while (!m)	/* 2^31 threads later the marks wrap; 0 is no one's */
		m = atomic_fetch_add_explicit(&next_mark, 1, memory_order_relaxed) & ~LOCK_SLEEPERS;
	thread_mark = m;
	return m;
}

/* Sleeps while l's word is seen, until the CLOCK_MONOTONIC time until
 * (NULL: no limit); ETIMEDOUT once past it. errno is left as it was. */
static int lock_sleep(struct efap2p_lock *l, uint32_t seen, const struct timespec *until)
{
	int saved = errno, rc = 0;

	if (syscall(SYS_futex, &l->word, until ? FUTEX_WAIT_BITSET_PRIVATE : FUTEX_WAIT_PRIVATE, seen,
		    until, NULL, FUTEX_BITSET_MATCH_ANY) && errno == ETIMEDOUT)
		rc = ETIMEDOUT;
	errno = saved;
	return rc;
}

int efap2p_lock_take_until(struct efap2p_lock *l, const struct timespec *until)
{
	uint32_t me = efap2p_thread_mark(), want = me, cur = 0;

	while (!atomic_compare_exchange_weak_explicit(&l->word, &cur, want, memory_order_acquire,
						      memory_order_relaxed)) {
		if (!cur)
			continue;
		if (!(cur & LOCK_SLEEPERS) &&
		    !atomic_compare_exchange_weak_explicit(&l->word, &cur, cur | LOCK_SLEEPERS,
							   memory_order_relaxed, memory_order_relaxed)) {
			cur = 0;
			continue;
		}
		if (lock_sleep(l, cur | LOCK_SLEEPERS, until))
			return ETIMEDOUT;
		/* others may sleep too: the one who takes it now wakes the next */
		want = me | LOCK_SLEEPERS;
		cur = 0;
	}
	return 0;
}

int efap2p_lock_try(struct efap2p_lock *l)
{
	uint32_t cur = 0;

	return atomic_compare_exchange_strong_explicit(&l->word, &cur, efap2p_thread_mark(),
						       memory_order_acquire, memory_order_relaxed)
		       ? 0
		       : EBUSY;
}

uint32_t efap2p_lock_holder(struct efap2p_lock *l)
{
	return atomic_load_explicit(&l->word, memory_order_relaxed) & ~LOCK_SLEEPERS;
}

int efap2p_lock_take_within(struct efap2p_lock *l, int wait_s)
{
	struct timespec until;
	uint32_t holder;

	if (efap2p_lock_mine(l) || !efap2p_lock_try(l))
		return 0;
	holder = efap2p_lock_holder(l);
	if (holder && holder == atomic_load_explicit(&l->stuck, memory_order_relaxed))
		return ETIMEDOUT;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += wait_s;
	if (!efap2p_lock_take_until(l, &until))
		return 0;
	atomic_store_explicit(&l->stuck, efap2p_lock_holder(l), memory_order_relaxed);
	return ETIMEDOUT;
}

void efap2p_lock_take(struct efap2p_lock *l)
{
	efap2p_lock_take_until(l, NULL);
}

void efap2p_lock_drop(struct efap2p_lock *l)
{
	int saved = errno;

	/* a holder waited for in vain is back */
	if (atomic_load_explicit(&l->stuck, memory_order_relaxed) == thread_mark)
		atomic_store_explicit(&l->stuck, 0, memory_order_relaxed);

	if (atomic_exchange_explicit(&l->word, 0, memory_order_release) & LOCK_SLEEPERS)
		syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

int efap2p_lock_mine(struct efap2p_lock *l)
{
	return thread_mark &&
	       (atomic_load_explicit(&l->word, memory_order_relaxed) & ~LOCK_SLEEPERS) == thread_mark;
}

void efap2p_lock_atfork_child(struct efap2p_lock *l, int keep)
{
	/* the child's only thread: no one sleeps on it there */
	atomic_store_explicit(&l->word, keep ? thread_mark : 0, memory_order_relaxed);
	if (!keep)
		atomic_store_explicit(&l->stuck, 0, memory_order_relaxed);
}

/* ---- guards ---- */

static __thread struct efap2p_guard *active;
/* the cancellation state the outermost guard of this thread found; while
 * cancel_pending is set, that guard is between marking itself and saving
 * the state (outer_cancel is the one found before) */
static __thread int outer_cancel = PTHREAD_CANCEL_ENABLE;
static __thread int cancel_pending;

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

/*
 * The mark comes first, then the cancellation state is changed, and on
 * leaving it is restored first, then the mark dropped: a siglongjmp at
 * any point leaves either no change or a marked guard, whose drop
 * restores the state (efap2p_reentered_at). A handler's call from inside
 * is a nested one and leaves outer_cancel alone.
 */
void efap2p_guard_enter(struct efap2p_guard *g)
{
	int outermost = !active;

	g->npending = 0;
	g->outer = active;
	g->cancel = PTHREAD_CANCEL_ENABLE;
	if (outermost)
		cancel_pending = 1;
	active = g;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &g->cancel);
	if (outermost) {
		outer_cancel = g->cancel;
		cancel_pending = 0;
	}
}

int efap2p_in_guard(void)
{
	return active != NULL;
}

/*
 * frame is the frame address of a function whose callees are the only
 * ones that enter guards on the call's behalf. A guard marked in the
 * thread lies below frame when the call is a nested one: a handler runs on
 * the stack below the frame it interrupted, or on the alternate signal
 * stack. Above it, the guard belongs to a call that was abandoned (a
 * siglongjmp out of a handler that interrupted it) and this one started
 * after: the mark is dropped, the cancellation state the abandoned call
 * found restored.
 */
int efap2p_reentered_at(const void *frame)
{
	struct efap2p_guard *g = active;
	int saved, nested;
	stack_t ss;

	if (!g)
		return 0;
	if ((uintptr_t)frame < (uintptr_t)g)
		return 1;
	saved = errno;
	nested = sigaltstack(NULL, &ss) || (ss.ss_flags & SS_ONSTACK);
	errno = saved;
	if (nested)
		return 1;
	active = NULL;
	if (cancel_pending) {
		/* abandoned around the change: if it had not happened the
		 * state is the program's, else what it found last time */
		int now;

		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &now);
		pthread_setcancelstate(now == PTHREAD_CANCEL_ENABLE ? now : outer_cancel, NULL);
		cancel_pending = 0;
	} else {
		pthread_setcancelstate(outer_cancel, NULL);
	}
	return 0;
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

	pthread_setcancelstate(g->cancel, NULL);
	active = g->outer;
	if (g->npending && active)
		efap2p_guard_defer(g->pending, g->npending);
	else if (g->npending && write(STDERR_FILENO, g->pending, g->npending) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

/* ---- loader sections ---- */

static struct efap2p_lock loader_lock;
static __thread int loader_depth;	/* sections of this thread entered */
static __thread unsigned loader_fork;	/* the level of this thread's fork that took it */

void efap2p_loader_enter(sigset_t *old)
{
	efap2p_signals_block(old);
	if (!loader_depth++)
		efap2p_lock_take(&loader_lock);
}

void efap2p_loader_leave(const sigset_t *old)
{
	if (!--loader_depth)
		efap2p_lock_drop(&loader_lock);
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

void efap2p_loader_atfork_prepare(unsigned level)
{
	struct timespec until;

	/* a section of this thread (a fork from inside it), or an outer
	 * fork of this thread that took the lock: not waited for */
	if (loader_depth || efap2p_lock_mine(&loader_lock))
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += FORK_WAIT_S;
	if (!efap2p_lock_take_until(&loader_lock, &until))
		loader_fork = level;
}

void efap2p_loader_atfork_parent(unsigned level)
{
	if (loader_fork == level) {
		loader_fork = 0;
		efap2p_lock_drop(&loader_lock);
	}
}

/* In the child: a section this thread was inside, or an outer fork of it,
 * goes on holding the lock; else the lock is free (held by this fork, or
 * by a thread that is not in the child). */
void efap2p_loader_atfork_child(unsigned level)
{
	int keep = loader_fork != level && efap2p_lock_mine(&loader_lock);

	if (loader_fork == level)
		loader_fork = 0;
	efap2p_lock_atfork_child(&loader_lock, keep);
}
