// SPDX-License-Identifier: MIT
/*
 * Fake dma-buf exporters. A test makes a dma-buf "exported" by a PCI
 * function of the model; what libc shows of it mirrors a real one:
 *   - fstatfs: f_type DMA_BUF_MAGIC;
 *   - fstat: an anonymous inode (mode 0600, no file type) of the buffer size;
 *   - /proc/self/fdinfo/<fd>: pos, flags, mnt_id, ino, then the dma-buf
 *     lines size, count, exp_name, and name once DMA_BUF_SET_NAME set it;
 *   - ioctl: DMA_BUF_SET_NAME, DMA_BUF_IOCTL_SYNC; others ENOTTY.
 * The owning PCI function is not visible through libc, as on a real host:
 * only the emulated kernel (REG_DMABUF_MR) knows it.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142
#endif

#define DMABUF_MNT_ID 16 /* the dmabuf pseudo filesystem's mount */

/* F_GETFL shows the kernel's O_LARGEFILE (0 in 64-bit user headers) on a
 * memfd; a dma-buf's file never has it. */
#if defined(__x86_64__)
#define KERNEL_O_LARGEFILE 0100000u
#elif defined(__aarch64__)
#define KERNEL_O_LARGEFILE 0400000u
#else
#define KERNEL_O_LARGEFILE 0u
#endif

static int dmabuf_fill(struct efasim_dmabuf *db, const char *owner_pci, const char *exp_name,
		       size_t size)
{
	struct efasim_config *c = efasim_config();
	const struct efasim_fn *fn = NULL;

	if (!c)
		return -ENODEV;
	if (!size)
		return -EINVAL;
	memset(db, 0, sizeof(*db));
	db->size = size;
	if (owner_pci && *owner_pci) {
		if (efasim_pci_normalize(owner_pci, db->owner))
			return -EINVAL;
		fn = efasim_fn_by_pci(c, db->owner);
		if (!fn)
			return -ENODEV;
	}
	if (exp_name && *exp_name)
		snprintf(db->exp_name, sizeof(db->exp_name), "%s", exp_name);
	else if (fn && fn->driver[0])
		snprintf(db->exp_name, sizeof(db->exp_name), "%s", fn->driver);
	else
		return -EINVAL;
	return 0;
}

static int dmabuf_create(const char *owner_pci, const char *exp_name, size_t size)
{
	struct efasim_dmabuf db;
	struct efasim_file *f;
	int fd, rc;

	rc = dmabuf_fill(&db, owner_pci, exp_name, size);
	if (rc)
		return rc;
	fd = memfd_create("efasim-dmabuf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		rc = -errno;
		efasim_sys_close(fd);
		return rc;
	}
	f = efasim_file_new(EFASIM_DMABUF, fd);
	if (!f) {
		efasim_sys_close(fd);
		return -ENOMEM;
	}
	f->db = db;
	efasim_lock();
	rc = efasim_fd_insert_locked(fd, f);
	efasim_unlock();
	if (rc) {
		free(f);
		efasim_sys_close(fd);
		return rc;
	}
	return fd;
}

EFASIM_API int efasim_dmabuf_create(const char *owner_pci, const char *exp_name, size_t size)
{
	int saved = errno, fd = dmabuf_create(owner_pci, exp_name, size);

	char res[32];

	if (fd < 0)
		snprintf(res, sizeof(res), "%s", efasim_errname(-fd));
	else
		snprintf(res, sizeof(res), "fd %d", fd);
	efasim_trace("dma-buf create owner %s exporter %s size %zu -> %s",
		     owner_pci && *owner_pci ? owner_pci : "(system memory)",
		     exp_name && *exp_name ? exp_name : "(owner's driver)", size, res);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	errno = saved;
	return fd;
}

void efasim_dmabuf_fstat(const struct efasim_file *f, struct stat *st)
{
	/* alloc_anon_inode: mode 0600 without a file type, size of the buffer */
	st->st_mode = S_IRUSR | S_IWUSR;
	st->st_size = (off_t)f->db.size;
	st->st_blocks = 0;
	st->st_blksize = 4096;
	st->st_nlink = 1;
	st->st_uid = 0;
	st->st_gid = 0;
}

void efasim_dmabuf_statfs(struct statfs *sf)
{
	memset(sf, 0, sizeof(*sf));
	sf->f_type = DMA_BUF_MAGIC;
	sf->f_bsize = 4096;
	sf->f_frsize = 4096;
	sf->f_namelen = 255;
}

/* strndup_user(name, DMA_BUF_NAME_LEN): EFAULT, or EINVAL when too long */
static int set_name(struct efasim_file *f, uint64_t uname)
{
	char name[DMA_BUF_NAME_LEN];
	size_t i;

	for (i = 0; i < sizeof(name); i++) {
		if (efasim_copy_in(&name[i], uname + i, 1))
			return -EFAULT;
		if (!name[i]) {
			memcpy(f->db.name, name, i + 1);
			return 0;
		}
	}
	return -EINVAL;
}

static int sync_buf(uint64_t uarg)
{
	struct dma_buf_sync s;

	if (efasim_copy_in(&s, uarg, sizeof(s)))
		return -EFAULT;
	if (s.flags & ~DMA_BUF_SYNC_VALID_FLAGS_MASK || !(s.flags & DMA_BUF_SYNC_RW))
		return -EINVAL;
	return 0;
}

int efasim_dmabuf_ioctl_locked(struct efasim_file *f, unsigned long req, void *arg)
{
	int rc;

	switch (req) {
	case DMA_BUF_SET_NAME_A:
	case DMA_BUF_SET_NAME_B:
		rc = set_name(f, (uintptr_t)arg);
		efasim_trace("dma-buf ioctl SET_NAME -> %s", rc ? efasim_errname(-rc) : "ok");
		return rc;
	case DMA_BUF_IOCTL_SYNC:
		return sync_buf((uintptr_t)arg);
	}
	return -ENOTTY;
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

int efasim_fdinfo_target(const char *path)
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

static int fdinfo_text(int fd, const struct efasim_file *f, char *buf, size_t len)
{
	long fl = syscall(SYS_fcntl, fd, F_GETFL), fdfl = syscall(SYS_fcntl, fd, F_GETFD);
	unsigned int flags;
	int n;

	if (fl < 0 || fdfl < 0)
		return -EBADF;
	flags = ((unsigned int)fl & ~KERNEL_O_LARGEFILE) | ((fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	n = snprintf(buf, len,
		     "pos:\t0\nflags:\t0%o\nmnt_id:\t%d\nino:\t%lu\n"
		     "size:\t%llu\ncount:\t%d\nexp_name:\t%s\n",
		     flags, DMABUF_MNT_ID, (unsigned long)f->st_ino,
		     (unsigned long long)f->db.size, f->refs, f->db.exp_name);
	if (f->db.name[0])
		n += snprintf(buf + n, len - (size_t)n, "name:\t%s\n", f->db.name);
	return n;
}

int efasim_fdinfo_open(int dmafd, int oflags)
{
	struct efasim_file *f;
	char text[512];
	int n, fd;

	efasim_lock();
	f = efasim_fd_get_locked(dmafd);
	n = (f && f->kind == EFASIM_DMABUF) ? fdinfo_text(dmafd, f, text, sizeof(text)) : EFASIM_PASS;
	efasim_unlock();
	if (n < 0)
		return n;
	if ((oflags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	fd = memfd_create("efasim-fdinfo", (oflags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (syscall(SYS_write, fd, text, (size_t)n) != n || lseek(fd, 0, SEEK_SET) != 0) {
		n = errno ? -errno : -EIO;
		efasim_sys_close(fd);
		return n;
	}
	efasim_trace("open /proc/self/fdinfo/%d (dma-buf) = fd %d", dmafd, fd);
	return fd;
}
