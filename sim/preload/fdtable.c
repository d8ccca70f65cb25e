// SPDX-License-Identifier: MIT
/*
 * The global lock, the fork handlers, and the file descriptors the emulator
 * owns (emulated uverbs files, fake dma-bufs). Each is a real descriptor (a
 * memfd) so that the kernel keeps numbering, close-on-exec, dup and fork
 * semantics; this table maps the number to the emulated file, whose kind's
 * operations (struct efasim_file_ops) the layers above supply.
 *
 * Robustness: a descriptor may be closed behind our back (raw syscall,
 * close_range in a library that bypasses the PLT) and its number reused.
 * Every lookup therefore checks that the number still refers to the memfd
 * it was registered with (same st_dev and st_ino) and forgets it otherwise.
 * A vfork child shares our memory: it must not change the table, so
 * mutations are skipped when getpid() is not the table's owner.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAST_MAX 65536 /* descriptors below this have a lock-free hint */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct efasim_file **table;
static size_t table_cap;
static atomic_int ntracked;
static atomic_int nfdinfo; /* tracked descriptors whose file has its own fdinfo */
static atomic_uchar hint[FAST_MAX];
static atomic_int owner_pid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* what the layers above reset in a fork child (engine: its thread) */
static void (*child_hooks[4])(void);
static unsigned int nchild_hooks;

void efasim_lock(void)
{
	pthread_mutex_lock(&table_lock);
}

void efasim_unlock(void)
{
	pthread_mutex_unlock(&table_lock);
}

int efasim_cond_timedwait(pthread_cond_t *c, const struct timespec *abstime)
{
	return pthread_cond_timedwait(c, &table_lock, abstime);
}

static void atfork_prepare(void)
{
	efasim_lock();
}

static void atfork_parent(void)
{
	efasim_unlock();
}

static void atfork_child(void)
{
	unsigned int i;

	/* The child's only thread is the one that took the lock in
	 * atfork_prepare; a default mutex can be released by it. */
	atomic_store(&owner_pid, (int)getpid());
	for (i = 0; i < nchild_hooks; i++)
		child_hooks[i]();
	efasim_unlock();
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int efasim_atfork_child_locked(void (*fn)(void))
{
	unsigned int i;

	for (i = 0; i < nchild_hooks; i++)
		if (child_hooks[i] == fn)
			return 0;
	if (nchild_hooks == sizeof(child_hooks) / sizeof(child_hooks[0]))
		return -ENOSPC;
	child_hooks[nchild_hooks++] = fn;
	return 0;
}

bool efasim_tracking(void)
{
	return atomic_load_explicit(&ntracked, memory_order_acquire) > 0;
}

bool efasim_has_fdinfo(void)
{
	return atomic_load_explicit(&nfdinfo, memory_order_acquire) > 0;
}

bool efasim_maybe_tracked(int fd)
{
	if (fd < 0 || !efasim_tracking())
		return false;
	if (fd < FAST_MAX)
		return atomic_load_explicit(&hint[fd], memory_order_acquire) != 0;
	return true;
}

bool efasim_table_owner(void)
{
	int owner = atomic_load(&owner_pid);

	return owner == 0 || owner == (int)getpid();
}

int efasim_file_init(struct efasim_file *f, const struct efasim_file_ops *ops, int fd)
{
	f->ops = ops;
	f->refs = 0;
	return efasim_fd_identity(fd, &f->st_dev, &f->st_ino);
}

void efasim_file_get(struct efasim_file *f)
{
	f->refs++;
}

void efasim_file_put_locked(struct efasim_file *f)
{
	if (--f->refs > 0)
		return;
	f->ops->release(f);
}

void efasim_fd_remove_locked(int fd)
{
	struct efasim_file *f;

	if (fd < 0 || (size_t)fd >= table_cap || !(f = table[fd]))
		return;
	table[fd] = NULL;
	if (fd < FAST_MAX)
		atomic_store_explicit(&hint[fd], 0, memory_order_release);
	atomic_fetch_sub(&ntracked, 1);
	if (f->ops->fdinfo)
		atomic_fetch_sub(&nfdinfo, 1);
	efasim_file_put_locked(f);
}

struct efasim_file *efasim_fd_get_locked(int fd)
{
	struct stat st;

	return efasim_fd_stat_locked(fd, &st);
}

struct efasim_file *efasim_fd_stat_locked(int fd, struct stat *st)
{
	struct efasim_file *f;

	if (fd < 0 || (size_t)fd >= table_cap || !(f = table[fd]))
		return NULL;
	if (syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH) < 0 || st->st_dev != f->st_dev ||
	    st->st_ino != f->st_ino) {
		efasim_trace("fd %d was closed behind the emulator's back; forgotten", fd);
		if (efasim_table_owner())
			efasim_fd_remove_locked(fd);
		return NULL;
	}
	return f;
}

int efasim_fd_of_locked(const struct efasim_file *f)
{
	size_t fd;

	for (fd = 0; fd < table_cap; fd++)
		if (table[fd] == f)
			return (int)fd;
	return -1;
}

static int ensure_capacity(size_t fd)
{
	size_t cap = table_cap ? table_cap : 64;
	struct efasim_file **t;

	if (fd < table_cap)
		return 0;
	while (cap <= fd)
		cap *= 2;
	t = realloc(table, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + table_cap, 0, (cap - table_cap) * sizeof(*t));
	table = t;
	table_cap = cap;
	return 0;
}

int efasim_fd_insert_locked(int fd, struct efasim_file *f)
{
	int rc;

	if (fd < 0)
		return -EBADF;
	pthread_once(&atfork_once, register_atfork);
	if (atomic_load(&owner_pid) == 0)
		atomic_store(&owner_pid, (int)getpid());
	rc = ensure_capacity((size_t)fd);
	if (rc)
		return rc;
	efasim_fd_remove_locked(fd); /* a stale entry */
	table[fd] = f;
	f->refs++;
	atomic_fetch_add(&ntracked, 1);
	if (f->ops->fdinfo)
		atomic_fetch_add(&nfdinfo, 1);
	if (fd < FAST_MAX)
		atomic_store_explicit(&hint[fd], 1, memory_order_release);
	return 0;
}

void efasim_fd_dup_locked(int oldfd, int newfd)
{
	struct efasim_file *f;

	if (oldfd == newfd || !efasim_table_owner())
		return;
	efasim_fd_remove_locked(newfd);
	f = efasim_fd_get_locked(oldfd);
	if (f && efasim_fd_insert_locked(newfd, f) == 0)
		efasim_trace("fd %d duplicated as %d", oldfd, newfd);
}

void efasim_fd_remove_range_locked(unsigned int first, unsigned int last)
{
	size_t fd;

	if (!efasim_table_owner())
		return;
	for (fd = first; fd < table_cap && fd <= last; fd++)
		if (table[fd])
			efasim_fd_remove_locked((int)fd);
}
