// SPDX-License-Identifier: MIT
/*
 * The libc entry points libefasim interposes (LD_PRELOAD). Each one checks,
 * as cheaply as it can, whether the call concerns the emulator (an emulated
 * device node, an emulated file descriptor, the RDMA netlink socket, the
 * fdinfo of a fake dma-buf); if it does, the emulated file's operations
 * answer (struct efasim_file_ops); if not, it calls the next definition
 * (found once, at load: libc.c) with the same arguments, so the caller sees
 * libc's behaviour and errno unchanged. Emulated calls leave errno alone on
 * success. No entry point calls the dynamic loader.
 *
 * The set covers what libibverbs 44, libefa, ibv_* tools and CPython import:
 * stat/fstat/lstat (and the *64, *at and pre-2.33 __xstat forms), statx,
 * access, open/openat (and *64, fortified __open*_2), fopen, fstatfs,
 * opendir, scandir, readlink, realpath (absolute /sys paths: the emulated
 * host's tree where it answers for them, efasim_sysfs_path),
 * socket, write, read (an event file's events), ioctl, mmap (the device
 * memory of a uverbs file), close,
 * close_range, closefrom, dup, dup2, dup3 and fcntl's F_DUPFD. A new one
 * adds its line to EFASIM_LIBC_FUNCS (internal.h). Do not add
 * variadic-forwarding entry points without checking how glibc declares
 * them.
 */
#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/netlink.h>

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

#define UVERBS_PREFIX "/dev/infiniband/uverbs"

/* ------------------------------------------------------ next definitions */

/* CALL_NEXT(name, ...) returns what the next definition returns, or fails
 * the call with ENOSYS when there is none. */
#define CALL_NEXT(name, ...)                                         \
	do {                                                         \
		if (!EFASIM_REAL(name)) {                            \
			errno = ENOSYS;                              \
			return -1;                                   \
		}                                                    \
		return EFASIM_REAL(name)(__VA_ARGS__);               \
	} while (0)

/* set errno from a negative result, or restore it */
static int finish(int rc, int saved)
{
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	errno = saved;
	return rc;
}

/* An absolute path under /sys that the emulated host's tree answers for
 * becomes the tree's file (efasim_sysfs_path): real programs read their
 * sysfs by absolute path (libfabric's host id, NCCL's topology), and see
 * the emulated host's, not this one's. HOST_PATH declares the buffer and
 * rewrites path; a path too long for it fails the call with fail_value. */
#define HOST_PATH(path, fail_value)                                           \
	char host_path_[4096];                                                \
	if (!((path) = efasim_sysfs_path((path), host_path_, sizeof(host_path_)))) \
		return fail_value

/* ------------------------------------------------------ what is emulated */

/* The emulated device behind an absolute path, or NULL. */
static __attribute__((noinline)) struct efasim_dev *uverbs_dev(const char *path)
{
	const char *p;
	long n = 0;

	if (!path || strncmp(path, UVERBS_PREFIX, sizeof(UVERBS_PREFIX) - 1))
		return NULL;
	p = path + sizeof(UVERBS_PREFIX) - 1;
	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9' && n < 1000000)
		n = n * 10 + (*p++ - '0');
	if (*p)
		return NULL;
	return efasim_dev_by_index(efasim_config(), (int)n);
}

/* Parses "<digits>" to the end; -1 if not a number. */
static long parse_num(const char *s, const char **end)
{
	long v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s++ - '0');
		if (v > 0x7fffffff)
			return -1;
	}
	*end = s;
	return v;
}

/* If path is /proc/{self,thread-self,<pid>}/fdinfo/<fd> of this process,
 * returns the descriptor number, else -1. */
static int fdinfo_target(const char *path)
{
	const char *p = path, *end;
	long pid, fd;

	if (strncmp(p, "/proc/", 6))
		return -1;
	p += 6;
	if (!strncmp(p, "self/", 5)) {
		p += 5;
	} else if (!strncmp(p, "thread-self/", 12)) {
		p += 12;
	} else {
		pid = parse_num(p, &end);
		if (pid < 0 || *end != '/' || (pid != getpid() && pid != gettid()))
			return -1;
		p = end + 1;
	}
	if (strncmp(p, "fdinfo/", 7))
		return -1;
	fd = parse_num(p + 7, &end);
	return (fd < 0 || *end) ? -1 : (int)fd;
}

#define FDINFO_PASS (-100000)

/* Opens a file holding the fdinfo text of the emulated file behind fd (a
 * fake dma-buf): the new descriptor, a negative errno, or FDINFO_PASS when
 * the real /proc file is the answer. */
static int fdinfo_open(int fd, int oflags)
{
	const char *kind = NULL;
	struct efasim_file *f;
	char text[512];
	int n, mfd;

	efasim_lock();
	f = efasim_fd_get_locked(fd);
	n = (f && f->ops->fdinfo) ? f->ops->fdinfo(f, fd, text, sizeof(text)) : FDINFO_PASS;
	if (f)
		kind = f->ops->name;
	efasim_unlock();
	if (n < 0)
		return n;
	if ((oflags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	mfd = memfd_create("efasim-fdinfo", (oflags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (mfd < 0)
		return -errno;
	errno = 0;
	if (syscall(SYS_write, mfd, text, (size_t)n) != n || lseek(mfd, 0, SEEK_SET) != 0) {
		n = errno ? -errno : -EIO;
		efasim_sys_close(mfd);
		return n;
	}
	efasim_trace("open /proc/self/fdinfo/%d (%s) = fd %d", fd, kind, mfd);
	return mfd;
}

/* open(): true when handled; *ret is the fd or -1 with errno set */
static __attribute__((noinline)) bool emu_open(const char *path, int flags, int *ret)
{
	int saved = errno, dmafd, rc;
	struct efasim_dev *dev;

	if (!path)
		return false;
	dev = uverbs_dev(path);
	if (dev) {
		*ret = finish(efasim_uverbs_open(dev, flags), saved);
		return true;
	}
	if (!efasim_has_fdinfo() || (dmafd = fdinfo_target(path)) < 0)
		return false;
	rc = fdinfo_open(dmafd, flags);
	if (rc == FDINFO_PASS)
		return false;
	*ret = finish(rc, saved);
	return true;
}

static bool emu_openat(int dirfd, const char *path, int flags, int *ret)
{
	(void)dirfd; /* only absolute paths are emulated */
	return emu_open(path, flags, ret);
}

/* fstat() of an emulated descriptor */
static bool emu_fstat(int fd, struct stat *st)
{
	struct efasim_file *f;
	bool ok;

	if (!efasim_maybe_tracked(fd))
		return false;
	efasim_lock();
	/* the identity check's own fstat is the one the file's kind edits:
	 * a dma-buf's fstat is one system call, as the kernel's is */
	f = efasim_fd_stat_locked(fd, st);
	ok = f && f->ops->fstat && f->ops->fstat(f, st);
	efasim_unlock();
	return ok;
}

static __attribute__((noinline)) bool emu_stat(const char *path, struct stat *st)
{
	struct efasim_dev *dev = uverbs_dev(path);

	if (!dev)
		return false;
	efasim_uverbs_stat(dev, st);
	efasim_trace("stat %s: character device %u:%u", path, major(st->st_rdev), minor(st->st_rdev));
	return true;
}

/* *at() forms: "" with AT_EMPTY_PATH is the descriptor itself */
static __attribute__((noinline)) bool emu_statat(int dirfd, const char *path, int flags,
						 struct stat *st)
{
	if (path && !path[0] && (flags & AT_EMPTY_PATH))
		return emu_fstat(dirfd, st);
	return emu_stat(path, st);
}

static void to_statx(const struct stat *st, struct statx *sx)
{
	memset(sx, 0, sizeof(*sx));
	sx->stx_mask = STATX_BASIC_STATS;
	sx->stx_blksize = (uint32_t)st->st_blksize;
	sx->stx_nlink = (uint32_t)st->st_nlink;
	sx->stx_uid = st->st_uid;
	sx->stx_gid = st->st_gid;
	sx->stx_mode = (uint16_t)st->st_mode;
	sx->stx_ino = st->st_ino;
	sx->stx_size = (uint64_t)st->st_size;
	sx->stx_blocks = (uint64_t)st->st_blocks;
	sx->stx_atime.tv_sec = st->st_atim.tv_sec;
	sx->stx_atime.tv_nsec = (uint32_t)st->st_atim.tv_nsec;
	sx->stx_mtime.tv_sec = st->st_mtim.tv_sec;
	sx->stx_mtime.tv_nsec = (uint32_t)st->st_mtim.tv_nsec;
	sx->stx_ctime.tv_sec = st->st_ctim.tv_sec;
	sx->stx_ctime.tv_nsec = (uint32_t)st->st_ctim.tv_nsec;
	sx->stx_rdev_major = major(st->st_rdev);
	sx->stx_rdev_minor = minor(st->st_rdev);
	sx->stx_dev_major = major(st->st_dev);
	sx->stx_dev_minor = minor(st->st_dev);
}

static __attribute__((noinline)) bool emu_access(const char *path, int mode, int *ret)
{
	if (!uverbs_dev(path))
		return false;
	if (mode & X_OK) {
		errno = EACCES;
		*ret = -1;
	} else {
		*ret = 0;
	}
	return true;
}

/* ------------------------------------------------------ socket */


EFASIM_API int socket(int domain, int type, int protocol)
{
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA && efasim_config()) {
		/* libibverbs then reads the devices from $SYSFS_PATH */
		efasim_trace("socket(AF_NETLINK, NETLINK_RDMA) -> EPROTONOSUPPORT");
		errno = EPROTONOSUPPORT;
		return -1;
	}
	CALL_NEXT(socket, domain, type, protocol);
}

/* ------------------------------------------------------ open */

static bool needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define VA_MODE(flags, last)                          \
	mode_t mode = 0;                              \
	if (needs_mode(flags)) {                      \
		va_list ap;                           \
		va_start(ap, last);                   \
		mode = (mode_t)va_arg(ap, unsigned int); \
		va_end(ap);                           \
	}


EFASIM_API int open(const char *path, int flags, ...)
{
	int ret;

	VA_MODE(flags, flags);
	if (emu_open(path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(open, path, flags, mode);
}

EFASIM_API int open64(const char *path, int flags, ...)
{
	int ret;

	VA_MODE(flags, flags);
	if (emu_open(path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(open64, path, flags, mode);
}

EFASIM_API int openat(int dirfd, const char *path, int flags, ...)
{
	int ret;

	VA_MODE(flags, flags);
	if (emu_openat(dirfd, path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(openat, dirfd, path, flags, mode);
}

EFASIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
	int ret;

	VA_MODE(flags, flags);
	if (emu_openat(dirfd, path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(openat64, dirfd, path, flags, mode);
}

EFASIM_API int __open_2(const char *path, int flags);
EFASIM_API int __open_2(const char *path, int flags)
{
	int ret;

	if (emu_open(path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(__open_2, path, flags);
}

EFASIM_API int __open64_2(const char *path, int flags);
EFASIM_API int __open64_2(const char *path, int flags)
{
	int ret;

	if (emu_open(path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(__open64_2, path, flags);
}

EFASIM_API int __openat_2(int dirfd, const char *path, int flags);
EFASIM_API int __openat_2(int dirfd, const char *path, int flags)
{
	int ret;

	if (emu_openat(dirfd, path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(__openat_2, dirfd, path, flags);
}

EFASIM_API int __openat64_2(int dirfd, const char *path, int flags);
EFASIM_API int __openat64_2(int dirfd, const char *path, int flags)
{
	int ret;

	if (emu_openat(dirfd, path, flags, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(__openat64_2, dirfd, path, flags);
}

/* fopen() of a fake dma-buf's fdinfo (glibc's fopen opens internally). */
static __attribute__((noinline)) bool emu_fopen(const char *path, const char *mode, FILE **ret)
{
	int saved = errno, dmafd, fd;

	if (!path || !mode || !efasim_has_fdinfo() || (dmafd = fdinfo_target(path)) < 0)
		return false;
	fd = fdinfo_open(dmafd, (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'))
					? O_RDWR : O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC : 0));
	if (fd == FDINFO_PASS)
		return false;
	if (fd < 0) {
		errno = -fd;
		*ret = NULL;
		return true;
	}
	*ret = fdopen(fd, mode);
	if (!*ret) {
		saved = errno;
		efasim_sys_close(fd);
	}
	errno = saved;
	return true;
}


EFASIM_API FILE *fopen(const char *path, const char *mode)
{
	FILE *f;

	if (emu_fopen(path, mode, &f))
		return f;
	HOST_PATH(path, NULL);
	if (!EFASIM_REAL(fopen)) {
		errno = ENOSYS;
		return NULL;
	}
	return EFASIM_REAL(fopen)(path, mode);
}

EFASIM_API FILE *fopen64(const char *path, const char *mode)
{
	FILE *f;

	if (emu_fopen(path, mode, &f))
		return f;
	HOST_PATH(path, NULL);
	if (!EFASIM_REAL(fopen64)) {
		errno = ENOSYS;
		return NULL;
	}
	return EFASIM_REAL(fopen64)(path, mode);
}

/* ------------------------------------------------------ stat */


/* On the 64-bit targets struct stat64 is struct stat. */
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64 layout");

EFASIM_API int stat(const char *path, struct stat *st)
{
	if (emu_stat(path, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(stat, path, st);
}

EFASIM_API int stat64(const char *path, struct stat64 *st)
{
	if (emu_stat(path, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(stat64, path, st);
}

EFASIM_API int lstat(const char *path, struct stat *st)
{
	if (emu_stat(path, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(lstat, path, st);
}

EFASIM_API int lstat64(const char *path, struct stat64 *st)
{
	if (emu_stat(path, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(lstat64, path, st);
}

EFASIM_API int fstat(int fd, struct stat *st)
{
	if (emu_fstat(fd, st))
		return 0;
	CALL_NEXT(fstat, fd, st);
}

EFASIM_API int fstat64(int fd, struct stat64 *st)
{
	if (emu_fstat(fd, (struct stat *)st))
		return 0;
	CALL_NEXT(fstat64, fd, st);
}

EFASIM_API int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (emu_statat(dirfd, path, flags, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(fstatat, dirfd, path, st, flags);
}

EFASIM_API int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (emu_statat(dirfd, path, flags, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(fstatat64, dirfd, path, st, flags);
}

EFASIM_API int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *sx)
{
	struct stat st;

	if (emu_statat(dirfd, path, flags, &st)) {
		to_statx(&st, sx);
		return 0;
	}
	HOST_PATH(path, -1);
	CALL_NEXT(statx, dirfd, path, flags, mask, sx);
}

/* glibc before 2.33 compiled stat() into calls to these; old binaries
 * still import them. The version argument is ignored: on the 64-bit
 * targets every version uses struct stat. */

EFASIM_API int __xstat(int ver, const char *path, struct stat *st);
EFASIM_API int __xstat(int ver, const char *path, struct stat *st)
{
	if (emu_stat(path, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__xstat, ver, path, st);
}

EFASIM_API int __xstat64(int ver, const char *path, struct stat64 *st);
EFASIM_API int __xstat64(int ver, const char *path, struct stat64 *st)
{
	if (emu_stat(path, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__xstat64, ver, path, st);
}

EFASIM_API int __lxstat(int ver, const char *path, struct stat *st);
EFASIM_API int __lxstat(int ver, const char *path, struct stat *st)
{
	if (emu_stat(path, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__lxstat, ver, path, st);
}

EFASIM_API int __lxstat64(int ver, const char *path, struct stat64 *st);
EFASIM_API int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	if (emu_stat(path, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__lxstat64, ver, path, st);
}

EFASIM_API int __fxstat(int ver, int fd, struct stat *st);
EFASIM_API int __fxstat(int ver, int fd, struct stat *st)
{
	if (emu_fstat(fd, st))
		return 0;
	CALL_NEXT(__fxstat, ver, fd, st);
}

EFASIM_API int __fxstat64(int ver, int fd, struct stat64 *st);
EFASIM_API int __fxstat64(int ver, int fd, struct stat64 *st)
{
	if (emu_fstat(fd, (struct stat *)st))
		return 0;
	CALL_NEXT(__fxstat64, ver, fd, st);
}

EFASIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
EFASIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	if (emu_statat(dirfd, path, flags, st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__fxstatat, ver, dirfd, path, st, flags);
}

EFASIM_API int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
EFASIM_API int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (emu_statat(dirfd, path, flags, (struct stat *)st))
		return 0;
	HOST_PATH(path, -1);
	CALL_NEXT(__fxstatat64, ver, dirfd, path, st, flags);
}

/* ------------------------------------------------------ access */


EFASIM_API int access(const char *path, int mode)
{
	int ret;

	if (emu_access(path, mode, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(access, path, mode);
}

EFASIM_API int faccessat(int dirfd, const char *path, int mode, int flags)
{
	int ret;

	if (emu_access(path, mode, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(faccessat, dirfd, path, mode, flags);
}

EFASIM_API int euidaccess(const char *path, int mode)
{
	int ret;

	if (emu_access(path, mode, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(euidaccess, path, mode);
}

EFASIM_API int eaccess(const char *path, int mode)
{
	int ret;

	if (emu_access(path, mode, &ret))
		return ret;
	HOST_PATH(path, -1);
	CALL_NEXT(eaccess, path, mode);
}

/* ------------------------------------------------------ directories, links */

EFASIM_API DIR *opendir(const char *path)
{
	HOST_PATH(path, NULL);
	if (!EFASIM_REAL(opendir)) {
		errno = ENOSYS;
		return NULL;
	}
	return EFASIM_REAL(opendir)(path);
}

/* glibc's scandir opens its directory without calling opendir() */
EFASIM_API int scandir(const char *path, struct dirent ***list, int (*sel)(const struct dirent *),
		       int (*cmp)(const struct dirent **, const struct dirent **))
{
	HOST_PATH(path, -1);
	CALL_NEXT(scandir, path, list, sel, cmp);
}

EFASIM_API int scandir64(const char *path, struct dirent64 ***list, int (*sel)(const struct dirent64 *),
			 int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	HOST_PATH(path, -1);
	CALL_NEXT(scandir64, path, list, sel, cmp);
}

/* The tree's links are relative, as sysfs's are: what they say is what the
 * kernel's say. */
EFASIM_API ssize_t readlink(const char *path, char *buf, size_t len)
{
	HOST_PATH(path, -1);
	CALL_NEXT(readlink, path, buf, len);
}

EFASIM_API ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
	HOST_PATH(path, -1);
	CALL_NEXT(readlinkat, dirfd, path, buf, len);
}

/* glibc resolves inside realpath() with its own system calls: the tree's
 * file is resolved, and a result inside the tree is named as the /sys
 * path it stands for. */
EFASIM_API char *realpath(const char *path, char *resolved)
{
	const char *orig = path;
	char *r;

	HOST_PATH(path, NULL);
	if (!EFASIM_REAL(realpath)) {
		errno = ENOSYS;
		return NULL;
	}
	r = EFASIM_REAL(realpath)(path, resolved);
	if (r && path != orig)
		efasim_sysfs_unmap(r);
	return r;
}

EFASIM_API char *canonicalize_file_name(const char *path)
{
	const char *orig = path;
	char *r;

	HOST_PATH(path, NULL);
	if (!EFASIM_REAL(canonicalize_file_name)) {
		errno = ENOSYS;
		return NULL;
	}
	r = EFASIM_REAL(canonicalize_file_name)(path);
	if (r && path != orig)
		efasim_sysfs_unmap(r);
	return r;
}

/* ------------------------------------------------------ fstatfs */

static bool emu_fstatfs(int fd, struct statfs *sf)
{
	struct efasim_file *f;
	bool ok;

	if (!efasim_maybe_tracked(fd))
		return false;
	efasim_lock();
	f = efasim_fd_get_locked(fd);
	ok = f && f->ops->fstatfs && f->ops->fstatfs(f, sf);
	efasim_unlock();
	return ok;
}


_Static_assert(sizeof(struct statfs) == sizeof(struct statfs64), "statfs64 layout");

EFASIM_API int fstatfs(int fd, struct statfs *sf)
{
	if (emu_fstatfs(fd, sf))
		return 0;
	CALL_NEXT(fstatfs, fd, sf);
}

EFASIM_API int fstatfs64(int fd, struct statfs64 *sf)
{
	if (emu_fstatfs(fd, (struct statfs *)sf))
		return 0;
	CALL_NEXT(fstatfs64, fd, sf);
}

/* ------------------------------------------------------ write, ioctl */


EFASIM_API ssize_t write(int fd, const void *buf, size_t count)
{
	struct efasim_file *f;
	int saved = errno;
	ssize_t r;

	if (efasim_maybe_tracked(fd)) {
		efasim_lock();
		f = efasim_fd_get_locked(fd);
		if (f) {
			/* a file without a write method: EINVAL, as the kernel */
			r = f->ops->write ? f->ops->write(f, fd, buf, count) : -EINVAL;
			efasim_unlock();
			dp_engine_settle();
			if (r < 0) {
				errno = (int)-r;
				return -1;
			}
			errno = saved;
			return r;
		}
		efasim_unlock();
	}
	CALL_NEXT(write, fd, buf, count);
}

/* read() of an emulated file with a read method (an event file): what it
 * answers, waiting without the lock for the descriptor to become readable
 * while it has nothing, unless the descriptor is O_NONBLOCK. */
static bool emu_read(int fd, void *buf, size_t count, ssize_t *ret)
{
	struct efasim_file *f;
	int saved = errno;
	ssize_t r;

	if (!efasim_maybe_tracked(fd))
		return false;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long fl;

		efasim_lock();
		f = efasim_fd_get_locked(fd);
		if (!f || !f->ops->read) {
			efasim_unlock();
			return false;
		}
		r = f->ops->read(f, fd, buf, count);
		efasim_unlock();
		if (r != -EAGAIN)
			break;
		fl = syscall(SYS_fcntl, fd, F_GETFL);
		if (fl < 0 || (fl & O_NONBLOCK))
			break;
		/* the device must run while the program waits for it */
		dp_engine_waiting(true);
		if (syscall(SYS_ppoll, &p, 1, NULL, NULL, (size_t)8) < 0 && errno == EINTR)
			r = -EINTR;
		dp_engine_waiting(false);
		if (r == -EINTR)
			break;
	}
	if (r < 0) {
		errno = (int)-r;
		*ret = -1;
	} else {
		errno = saved;
		*ret = r;
	}
	return true;
}

EFASIM_API ssize_t read(int fd, void *buf, size_t count)
{
	ssize_t r;

	if (emu_read(fd, buf, count, &r))
		return r;
	CALL_NEXT(read, fd, buf, count);
}

EFASIM_API ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);
EFASIM_API ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	ssize_t r;

	if (count <= buflen && emu_read(fd, buf, count, &r))
		return r;
	CALL_NEXT(__read_chk, fd, buf, count, buflen);
}

EFASIM_API int ioctl(int fd, unsigned long req, ...)
{
	struct efasim_file *f;
	int saved = errno, rc;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (efasim_maybe_tracked(fd)) {
		efasim_lock();
		f = efasim_fd_get_locked(fd);
		if (f) {
			rc = f->ops->ioctl ? f->ops->ioctl(f, req, arg) : -ENOTTY;
			efasim_unlock();
			return finish(rc, saved);
		}
		efasim_unlock();
	}
	CALL_NEXT(ioctl, fd, req, arg);
}

/* ------------------------------------------------------ mmap */


/* mmap of an emulated file: its kind says whether the range may be mapped
 * (a uverbs file's device memory); the real mmap then maps the memfd. */
static int emu_mmap_check(size_t len, int flags, int fd, off_t off)
{
	struct efasim_file *f;
	int rc = 0;

	if (fd < 0 || (flags & MAP_ANONYMOUS) || !efasim_maybe_tracked(fd))
		return 0;
	efasim_lock();
	f = efasim_fd_get_locked(fd);
	if (f && f->ops->mmap)
		rc = f->ops->mmap(f, len, flags, off);
	efasim_unlock();
	return rc;
}

EFASIM_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int rc = emu_mmap_check(len, flags, fd, off);

	if (rc) {
		errno = -rc;
		return MAP_FAILED;
	}
	if (!EFASIM_REAL(mmap)) {
		errno = ENOSYS;
		return MAP_FAILED;
	}
	return EFASIM_REAL(mmap)(addr, len, prot, flags, fd, off);
}

EFASIM_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int rc = emu_mmap_check(len, flags, fd, off);

	if (rc) {
		errno = -rc;
		return MAP_FAILED;
	}
	if (!EFASIM_REAL(mmap64)) {
		errno = ENOSYS;
		return MAP_FAILED;
	}
	return EFASIM_REAL(mmap64)(addr, len, prot, flags, fd, off);
}

/* ------------------------------------------------------ descriptors */


EFASIM_API int close(int fd)
{
	int r;

	if (!efasim_maybe_tracked(fd) || !efasim_table_owner())
		CALL_NEXT(close, fd);
	if (!EFASIM_REAL(close)) {
		errno = ENOSYS;
		return -1;
	}
	efasim_lock();
	if (efasim_fd_get_locked(fd))
		efasim_trace("close fd %d", fd);
	efasim_fd_remove_locked(fd);
	r = EFASIM_REAL(close)(fd);
	efasim_unlock();
	dp_engine_settle();
	return r;
}

EFASIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	int r;

	if (!EFASIM_REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	if (!efasim_tracking() || !efasim_table_owner())
		return EFASIM_REAL(close_range)(first, last, flags);
	efasim_lock();
	r = EFASIM_REAL(close_range)(first, last, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		efasim_fd_remove_range_locked(first, last);
	efasim_unlock();
	return r;
}

EFASIM_API void closefrom(int lowfd)
{
	if (!EFASIM_REAL(closefrom))
		return;
	if (!efasim_tracking() || !efasim_table_owner() || lowfd < 0) {
		EFASIM_REAL(closefrom)(lowfd);
		return;
	}
	efasim_lock();
	EFASIM_REAL(closefrom)(lowfd);
	efasim_fd_remove_range_locked((unsigned int)lowfd, ~0u);
	efasim_unlock();
}

EFASIM_API int dup(int fd)
{
	int r;

	if (!efasim_maybe_tracked(fd) || !efasim_table_owner())
		CALL_NEXT(dup, fd);
	efasim_lock();
	r = EFASIM_REAL(dup) ? EFASIM_REAL(dup)(fd) : (errno = ENOSYS, -1);
	if (r >= 0)
		efasim_fd_dup_locked(fd, r);
	efasim_unlock();
	return r;
}

EFASIM_API int dup2(int oldfd, int newfd)
{
	int r;

	if ((!efasim_maybe_tracked(oldfd) && !efasim_maybe_tracked(newfd)) || !efasim_table_owner())
		CALL_NEXT(dup2, oldfd, newfd);
	efasim_lock();
	r = EFASIM_REAL(dup2) ? EFASIM_REAL(dup2)(oldfd, newfd) : (errno = ENOSYS, -1);
	if (r >= 0)
		efasim_fd_dup_locked(oldfd, r);
	efasim_unlock();
	return r;
}

EFASIM_API int dup3(int oldfd, int newfd, int flags)
{
	int r;

	if ((!efasim_maybe_tracked(oldfd) && !efasim_maybe_tracked(newfd)) || !efasim_table_owner())
		CALL_NEXT(dup3, oldfd, newfd, flags);
	efasim_lock();
	r = EFASIM_REAL(dup3) ? EFASIM_REAL(dup3)(oldfd, newfd, flags) : (errno = ENOSYS, -1);
	if (r >= 0)
		efasim_fd_dup_locked(oldfd, r);
	efasim_unlock();
	return r;
}

static int fcntl_dup(int (*next)(int, int, ...), int fd, int cmd, void *arg)
{
	int r;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if ((cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) || !efasim_maybe_tracked(fd) ||
	    !efasim_table_owner())
		return next(fd, cmd, arg);
	efasim_lock();
	r = next(fd, cmd, arg);
	if (r >= 0)
		efasim_fd_dup_locked(fd, r);
	efasim_unlock();
	return r;
}

EFASIM_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_dup(EFASIM_REAL(fcntl), fd, cmd, arg);
}

EFASIM_API int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_dup(EFASIM_REAL(fcntl64), fd, cmd, arg);
}
