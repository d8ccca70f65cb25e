// SPDX-License-Identifier: MIT
/*
 * Helpers: tracing, the clock, and copies between the emulated kernel and
 * user memory that fail with EFAULT instead of crashing, as copy_from_user
 * does.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static bool trace_enabled;
static int trace_lvl;

static void trace_init(void)
{
	const char *v = getenv("EFASIM_TRACE");

	trace_enabled = v && *v && strcmp(v, "0") != 0;
	trace_lvl = trace_enabled ? (v[0] >= '2' && v[0] <= '9' && !v[1] ? v[0] - '0' : 1) : 0;
}

bool efasim_trace_on(void)
{
	pthread_once(&trace_once, trace_init);
	return trace_enabled;
}

int efasim_trace_level(void)
{
	pthread_once(&trace_once, trace_init);
	return trace_lvl;
}

static void vsay(const char *fmt, va_list ap)
{
	char line[512];
	int n, m;

	if (trace_lvl >= 2) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		n = snprintf(line, sizeof(line), "efasim[%d] %ld.%06ld: ", (int)getpid(),
			     (long)ts.tv_sec, ts.tv_nsec / 1000);
	} else {
		n = snprintf(line, sizeof(line), "efasim[%d]: ", (int)getpid());
	}
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (syscall(SYS_write, 2, line, (size_t)n) < 0)
		return;
}

void efasim_trace(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!efasim_trace_on())
		return;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	errno = saved;
}

void efasim_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	errno = saved;
}

const char *efasim_errname(int err)
{
	static __thread char buf[16];
	const char *n = strerrorname_np(err);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

uint64_t efasim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* process_vm_readv/writev on ourselves checks user addresses like the
 * kernel does; where a seccomp policy forbids them, fall back to mincore. */
enum { VM_UNKNOWN, VM_USABLE, VM_UNUSABLE };
static atomic_int vm_mode = VM_UNKNOWN;

static int vm_copy(bool out, void *local, uint64_t remote, size_t len)
{
	struct iovec l = { local, len }, r = { (void *)(uintptr_t)remote, len };
	ssize_t n;

	if (atomic_load_explicit(&vm_mode, memory_order_relaxed) == VM_UNUSABLE)
		return 1;
	n = out ? process_vm_writev(getpid(), &l, 1, &r, 1, 0)
		: process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	if (n == (ssize_t)len) {
		atomic_store_explicit(&vm_mode, VM_USABLE, memory_order_relaxed);
		return 0;
	}
	if (n >= 0 || errno == EFAULT)
		return -EFAULT;
	if (errno == ENOSYS || errno == EPERM || errno == EACCES) {
		atomic_store_explicit(&vm_mode, VM_UNUSABLE, memory_order_relaxed);
		return 1;
	}
	return -EFAULT;
}

int efasim_copy_in(void *dst, uint64_t src, size_t len)
{
	int rc;

	if (!len)
		return 0;
	if (src < 4096 || src + len < src)
		return -EFAULT;
	rc = vm_copy(false, dst, src, len);
	if (rc <= 0)
		return rc;
	if (efasim_user_mapped(src, len))
		return -EFAULT;
	memcpy(dst, (const void *)(uintptr_t)src, len);
	return 0;
}

int efasim_copy_out(uint64_t dst, const void *src, size_t len)
{
	int rc;

	if (!len)
		return 0;
	if (dst < 4096 || dst + len < dst)
		return -EFAULT;
	rc = vm_copy(true, (void *)src, dst, len);
	if (rc < 0)
		return rc;
	if (rc > 0 && efasim_user_mapped(dst, len))
		return -EFAULT;
	/* Once more from this process, so that memory checkers (valgrind)
	 * see the bytes written, as the kernel's copy_to_user is seen. */
	memcpy((void *)(uintptr_t)dst, src, len);
	return 0;
}

int efasim_clear_out(uint64_t dst, size_t len)
{
	static const char zeros[256];
	size_t n;
	int rc;

	while (len) {
		n = len < sizeof(zeros) ? len : sizeof(zeros);
		rc = efasim_copy_out(dst, zeros, n);
		if (rc)
			return rc;
		dst += n;
		len -= n;
	}
	return 0;
}

int efasim_user_is_zero(uint64_t src, size_t len)
{
	unsigned char buf[256];
	size_t n, i;
	int rc;

	while (len) {
		n = len < sizeof(buf) ? len : sizeof(buf);
		rc = efasim_copy_in(buf, src, n);
		if (rc)
			return rc;
		for (i = 0; i < n; i++)
			if (buf[i])
				return 0;
		src += n;
		len -= n;
	}
	return 1;
}

int efasim_user_mapped(uint64_t addr, uint64_t len)
{
	unsigned char vec[1024];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start, end, chunk;

	if (!len)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	start = addr & ~(page - 1);
	end = (addr + len + page - 1) & ~(page - 1);
	while (start < end) {
		chunk = end - start;
		if (chunk > sizeof(vec) * page)
			chunk = sizeof(vec) * page;
		if (mincore((void *)(uintptr_t)start, chunk, vec))
			return -EFAULT;
		start += chunk;
	}
	return 0;
}

int efasim_fd_identity(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

int efasim_sys_close(int fd)
{
	return syscall(SYS_close, fd) < 0 ? -errno : 0;
}
