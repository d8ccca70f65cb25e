// SPDX-License-Identifier: MIT
/*
 * The Go core (libefap2p-core.so), loaded the first time a call needs the
 * oracle, so that a process that never asks starts no Go runtime.
 *
 * Where: $EFAP2P_CORE (read with secure_getenv), else next to this library
 * (the build tree), else in efap2p/ next to it (the installed layout,
 * $libdir/efap2p/), else EFAP2P_CORE_DIR, the directory it was configured
 * to be installed in.
 *
 * Fork: the Go runtime does not survive fork() (its threads are gone in the
 * child, so anything that needs the scheduler or the collector hangs).
 * A child forked after the core was loaded, or while it was loading, never
 * enters Go again: the calls answer ECHILD and the callers fall back on
 * what is cached in C memory, or pass through. A child forked before the
 * core was ever needed has no Go runtime and may load its own. The load's
 * calls into the dynamic loader (dlopen, dlsym, and host.c's list of loaded
 * objects) run in loader sections (guard.c), which fork() waits for: no
 * child inherits the loader's locks held by a thread it does not have.
 *
 * Signals: the core is loaded, and every Go call made, inside the caller's
 * guard (guard.c): the asynchronous signals blocked in the calling thread.
 * Threads the runtime starts inherit that mask, and no host handler ever
 * runs on a Go stack; a signal that arrives meanwhile is delivered when the
 * call returns.
 *
 * Before the core is first loaded, host.c asks whether a Go runtime may
 * start in this process at all (another Go runtime, signals the host keeps
 * blocked for a signalfd, resource limits); when not, the core is never
 * loaded and the front answers from the topology file's index, or passes
 * through, having said why once. A core already loaded in this process (by
 * an earlier instance of this library, dlclose()d and dlopen()ed again) is
 * found and used again: Go runtimes are never unloaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#ifndef EFAP2P_CORE_DIR
#define EFAP2P_CORE_DIR "/usr/local/lib/efap2p"
#endif
#define CORE_NAME "libefap2p-core.so"

enum { CORE_NONE, CORE_LOADING, CORE_READY, CORE_FAILED };

static struct {
	efap2p_core_init_fn init;
	efap2p_core_nic_fn nic;
	efap2p_core_dmabuf_fn dmabuf;
	efap2p_core_peer_fn peer;
	efap2p_core_refusable_fn refusable;
} api;

static _Atomic int core_state = CORE_NONE;
/* set in a child forked while core_state was not CORE_NONE */
static _Atomic int core_inherited;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
/* this thread holds load_lock */
static __thread int loading;

/* The directory this library was loaded from ("" if unknown). */
static char self_dir[PATH_MAX];

/* dlopen()s path (only if already loaded, with RTLD_NOLOAD in flags);
 * when it is there but does not load, why says why: that it cannot be
 * read (a file this user may not read, or in a folder it cannot enter),
 * or dlopen's reason. */
static void *try_core(const char *path, int flags, char *why, size_t len)
{
	const char *err = NULL;
	sigset_t old;
	void *h;
	int fd;

	efap2p_loader_enter(&old);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | flags);
	if (!h)
		err = dlerror();
	efap2p_loader_leave(&old);
	if (h || (flags & RTLD_NOLOAD))
		return h;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0) {
		close(fd);
		snprintf(why, len, "%s", err ? err : "dlopen failed");
	} else if (errno != ENOENT && errno != ENOTDIR) {
		snprintf(why, len, "%s cannot be read (%s)", path, strerror(errno));
	}
	return NULL;
}

/* dlopen()s the first core found (with RTLD_NOLOAD: the first one already
 * loaded); why says what went wrong otherwise. */
static void *find_core(int flags, char *why, size_t len)
{
	const char *env = efap2p_config()->core;
	char path[PATH_MAX + 32];
	void *h;

	snprintf(why, len, "%s is not next to the library, nor in %s", CORE_NAME, EFAP2P_CORE_DIR);
	if (env) {
		snprintf(why, len, "EFAP2P_CORE=%s does not exist", env);
		return try_core(env, flags, why, len);
	}
	if (self_dir[0]) {
		snprintf(path, sizeof(path), "%s/%s", self_dir, CORE_NAME);
		if ((h = try_core(path, flags, why, len)))
			return h;
		snprintf(path, sizeof(path), "%s/efap2p/%s", self_dir, CORE_NAME);
		if ((h = try_core(path, flags, why, len)))
			return h;
	}
	return try_core(EFAP2P_CORE_DIR "/" CORE_NAME, flags, why, len);
}

static int bind_core(void *h, char *why, size_t len)
{
	efap2p_core_abi_fn abi;
	sigset_t old;

	efap2p_loader_enter(&old);
	abi = (efap2p_core_abi_fn)dlsym(h, "efap2p_core_abi");
	api.init = (efap2p_core_init_fn)dlsym(h, "efap2p_core_init");
	api.nic = (efap2p_core_nic_fn)dlsym(h, "efap2p_core_nic");
	api.dmabuf = (efap2p_core_dmabuf_fn)dlsym(h, "efap2p_core_dmabuf");
	api.peer = (efap2p_core_peer_fn)dlsym(h, "efap2p_core_peer");
	api.refusable = (efap2p_core_refusable_fn)dlsym(h, "efap2p_core_refusable");
	efap2p_loader_leave(&old);
	if (!abi || !api.init || !api.nic || !api.dmabuf || !api.peer || !api.refusable) {
		snprintf(why, len, "not an efap2p core (a function is missing)");
		return -1;
	}
	if (abi() != EFAP2P_CORE_ABI) {
		snprintf(why, len, "core ABI %d, this library needs %d", abi(), EFAP2P_CORE_ABI);
		return -1;
	}
	return 0;
}

/* Loads and starts the core; called once, under load_lock, inside a
 * guard, with the asynchronous signals blocked (caller: the mask the
 * program had). */
static int load_core(const sigset_t *caller)
{
	const struct efap2p_config *cfg = efap2p_config();
	struct efap2p_core_config cc = {
		.topology_files = efap2p_precomp_core_files(),
		.log_level = cfg->log_level,
		.kernel = cfg->kernel,
		.kernel_config = cfg->kernel_config,
		.sysfs = cfg->sysfs,
		.secure = cfg->secure,
	};
	char why[PATH_MAX + 256];
	void *h = find_core(RTLD_NOLOAD, why, sizeof(why));

	if (!h) {
		if (efap2p_host_refuses_go(caller, why, sizeof(why))) {
			efap2p_log(EFAP2P_LOG_ERROR, "the oracle's Go core is not loaded: %s; %s", why,
				   efap2p_precomp() ? "answers come from the topology file's index only"
						    : "no P2P answers here (efap2p export writes a topology file that needs no Go)");
			return CORE_FAILED;
		}
		h = find_core(0, why, sizeof(why));
	}
	if (!h || bind_core(h, why, sizeof(why))) {
		efap2p_log(EFAP2P_LOG_ERROR, "cannot load the oracle: %s; set EFAP2P_CORE", why);
		return CORE_FAILED;
	}
	/* a child forked from inside the load (a handler of a fault the
	 * loader took, an audit module) has a Go runtime that never started */
	if (atomic_load_explicit(&core_inherited, memory_order_relaxed))
		return CORE_FAILED;
	/* a tree that cannot be read is the core's to report; its calls
	 * then answer EIO */
	api.init(&cc);
	efap2p_log(EFAP2P_LOG_DEBUG, "oracle loaded");
	return CORE_READY;
}

/* 0 when the core can be called, else ECHILD or ELIBACC. Called inside a
 * guard, with the asynchronous signals blocked (caller: the mask the
 * program had). */
static int core_ready(const sigset_t *caller)
{
	int st;

	if (atomic_load_explicit(&core_inherited, memory_order_relaxed))
		return ECHILD;
	st = atomic_load_explicit(&core_state, memory_order_acquire);
	if (st == CORE_NONE || st == CORE_LOADING) {
		/* the topology files, read before load_lock is held (the load
		 * takes no other lock of the library) */
		efap2p_precomp_core_files();
		pthread_mutex_lock(&load_lock);
		st = atomic_load_explicit(&core_state, memory_order_acquire);
		if (st == CORE_NONE) {
			atomic_store_explicit(&core_state, CORE_LOADING, memory_order_relaxed);
			loading = 1;
			st = load_core(caller);
			loading = 0;
			atomic_store_explicit(&core_state, st, memory_order_release);
		}
		pthread_mutex_unlock(&load_lock);
	}
	return st == CORE_READY ? 0 : ELIBACC;
}

/* Runs call with the asynchronous signals blocked once the core is
 * ready: the threads the runtime starts inherit that mask, and no host
 * handler runs on a Go stack. */
#define CORE_CALL(call)                                                         \
	do {                                                                    \
		sigset_t old;                                                   \
		int rc_;                                                        \
                                                                                \
		efap2p_signals_block(&old);                                     \
		rc_ = core_ready(&old);                                         \
		if (!rc_)                                                       \
			rc_ = (call);                                           \
		efap2p_signals_restore(&old);                                   \
		return rc_;                                                     \
	} while (0)

int efap2p_core_nic(const struct efap2p_guard *g, const char *ibdev, struct efap2p_core_nic *out)
{
	(void)g;
	CORE_CALL(api.nic(ibdev, out));
}

int efap2p_core_dmabuf(const struct efap2p_guard *g, const char *ibdev, const char *exp_name,
		       struct efap2p_core_dmabuf *out)
{
	(void)g;
	CORE_CALL(api.dmabuf(ibdev, exp_name, out));
}

int efap2p_core_peer(const struct efap2p_guard *g, const char *ibdev, uint32_t domain,
		     uint32_t bus, uint32_t devfn, struct efadv_p2p_attr *out)
{
	(void)g;
	CORE_CALL(api.peer(ibdev, domain, bus, devfn, out));
}

int efap2p_core_refusable(const struct efap2p_guard *g, const char *ibdev, int *out)
{
	(void)g;
	CORE_CALL(api.refusable(ibdev, out));
}

/* In the child of fork(): a load in flight is over (this thread's goes on
 * without entering Go). */
void efap2p_core_atfork_child(void)
{
	if (atomic_load_explicit(&core_state, memory_order_relaxed) != CORE_NONE)
		atomic_store_explicit(&core_inherited, 1, memory_order_relaxed);
	if (!loading)
		pthread_mutex_init(&load_lock, NULL);
}

/*
 * A fork waits for a load in flight first, then for a cache insert. Forks
 * nest in a thread: a signal handler may fork while the thread's own
 * fork() runs its handlers or its system call (the kernel restarts a
 * fork a signal interrupted, after the handler). Each handler is told the
 * level of its fork, so that a lock is released by the fork that took it.
 */
static __thread unsigned fork_level;

static void atfork_prepare(void)
{
	unsigned level = ++fork_level;

	efap2p_loader_atfork_prepare(level);
	efap2p_cache_atfork_prepare(level);
}

static void atfork_parent(void)
{
	unsigned level = fork_level;

	efap2p_cache_atfork_parent(level);
	efap2p_loader_atfork_parent(level);
	fork_level = level - 1;
}

static void atfork_child(void)
{
	unsigned level = fork_level;

	efap2p_core_atfork_child();
	efap2p_config_atfork_child();
	efap2p_precomp_atfork_child();
	efap2p_cache_atfork_child(level);
	efap2p_loader_atfork_child(level);
	fork_level = level - 1;
}

/*
 * The constructor starts nothing: it registers the fork handlers and notes
 * where this library lives (an absolute path costs nothing; a relative one
 * is resolved now, before the program can change directory).
 */
__attribute__((constructor)) static void efap2p_front_init(void)
{
	Dl_info info;
	char *slash;

	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (!dladdr((void *)efap2p_front_init, &info) || !info.dli_fname)
		return;
	if (info.dli_fname[0] == '/') {
		if (strlen(info.dli_fname) >= sizeof(self_dir))
			return;
		strcpy(self_dir, info.dli_fname);
	} else if (!realpath(info.dli_fname, self_dir)) {
		self_dir[0] = 0;
		return;
	}
	slash = strrchr(self_dir, '/');
	if (slash)
		*slash = 0;
}
