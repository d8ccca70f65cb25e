// SPDX-License-Identifier: MIT
/*
 * The real libc entry points: the next definition after this library of
 * every function it interposes, looked up once, by the library's
 * constructor, and never again.
 *
 * Why at load: dlsym takes the loader's lock. An interposer that looked its
 * next function up on first use waited for that lock wherever the caller's
 * process held it: inside a library constructor run by dlopen (a Go c-shared
 * library whose runtime threads call mmap while dlopen waits for them, a
 * Python extension's init, libefap2p loading its Go core) it waited for
 * ever, and a signal handler's first call on a thread while another one was
 * loading did too. The constructor runs while the library is loaded, when
 * no call of the program can hold the lock against it.
 *
 * Before the constructor: the libraries a program links (DT_NEEDED) are
 * initialised before a preloaded one, and so are the preloaded libraries
 * listed after this one, so their constructors may call an interposed
 * function first. Such a call resolves the table itself, before it takes
 * any lock of ours; it runs during the program's start-up or inside the
 * dlopen that is loading us, where the loader's lock is free or held by
 * the caller itself (it is recursive). Concurrent early calls each store
 * the same pointers, atomically.
 */
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>

struct efasim_libc efasim_libc_table;
atomic_bool efasim_libc_resolved;

static void *next_of(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

#if defined(__x86_64__)
	if (!p) /* compat-only symbols (__xstat ...) have no default version */
		p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
#elif defined(__aarch64__)
	if (!p)
		p = dlvsym(RTLD_NEXT, name, "GLIBC_2.17");
#endif
	return p;
}

static void resolve(void)
{
	int saved = errno;

#define EFASIM_LIBC_RESOLVE(name, ret, params) \
	__atomic_store_n(&efasim_libc_table.name, (ret(*) params)next_of(#name), __ATOMIC_RELAXED);
	EFASIM_LIBC_FUNCS(EFASIM_LIBC_RESOLVE)
#undef EFASIM_LIBC_RESOLVE
	atomic_store_explicit(&efasim_libc_resolved, true, memory_order_release);
	errno = saved;
}

const struct efasim_libc *efasim_libc_early(void)
{
	resolve();
	efasim_trace("libc entry points resolved by a call before the library's constructor");
	return &efasim_libc_table;
}

__attribute__((constructor)) static void libc_init(void)
{
	if (!atomic_load_explicit(&efasim_libc_resolved, memory_order_acquire))
		resolve();
}
