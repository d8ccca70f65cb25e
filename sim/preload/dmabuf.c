// SPDX-License-Identifier: MIT
/*
 * Fake dma-buf exporters. A test makes a dma-buf "exported" by a PCI
 * function of the model; what libc shows of it mirrors a real one:
 *   - fstatfs: f_type DMA_BUF_MAGIC;
 *   - fstat: an anonymous inode (mode 0600, no file type) of the buffer size;
 *   - /proc/self/fdinfo/<fd>: pos, flags, mnt_id, ino, then the dma-buf
 *     lines size, count, exp_name, and name once DMA_BUF_SET_NAME set it;
 *   - ioctl: DMA_BUF_SET_NAME, DMA_BUF_IOCTL_SYNC; others ENOTTY;
 *   - write: EINVAL (a dma-buf has no write method).
 * The owning PCI function is not visible through libc, as on a real host:
 * only the emulated kernel (REG_DMABUF_MR) knows it.
 */
#include "objects.h"

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

static const struct efasim_file_ops dmabuf_ops;

static int dmabuf_create(const char *owner_pci, const char *exp_name, size_t size)
{
	struct efasim_dmabuf *db = malloc(sizeof(*db));
	int fd, rc;

	if (!db)
		return -ENOMEM;
	rc = dmabuf_fill(db, owner_pci, exp_name, size);
	if (rc)
		goto err_free;
	fd = memfd_create("efasim-dmabuf", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto err_free;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		rc = -errno;
		goto err_close;
	}
	rc = -ENOMEM;
	if (efasim_file_init(&db->file, &dmabuf_ops, fd))
		goto err_close;
	efasim_lock();
	rc = efasim_fd_insert_locked(fd, &db->file);
	efasim_unlock();
	if (rc)
		goto err_close;
	return fd;

err_close:
	efasim_sys_close(fd);
err_free:
	free(db);
	return rc;
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

struct efasim_dmabuf *efasim_dmabuf_of(struct efasim_file *f)
{
	return f->ops == &dmabuf_ops ? (struct efasim_dmabuf *)f : NULL;
}

static bool dmabuf_fstat(struct efasim_file *f, struct stat *st)
{
	/* alloc_anon_inode: mode 0600 without a file type, size of the buffer */
	st->st_mode = S_IRUSR | S_IWUSR;
	st->st_size = (off_t)efasim_dmabuf_of(f)->size;
	st->st_blocks = 0;
	st->st_blksize = 4096;
	st->st_nlink = 1;
	st->st_uid = 0;
	st->st_gid = 0;
	return true;
}

static bool dmabuf_statfs(struct efasim_file *f, struct statfs *sf)
{
	(void)f;
	memset(sf, 0, sizeof(*sf));
	sf->f_type = DMA_BUF_MAGIC;
	sf->f_bsize = 4096;
	sf->f_frsize = 4096;
	sf->f_namelen = 255;
	return true;
}

/* strndup_user(name, DMA_BUF_NAME_LEN): EFAULT, or EINVAL when too long */
static int set_name(struct efasim_dmabuf *db, uint64_t uname)
{
	char name[DMA_BUF_NAME_LEN];
	size_t i;

	for (i = 0; i < sizeof(name); i++) {
		if (efasim_copy_in(&name[i], uname + i, 1))
			return -EFAULT;
		if (!name[i]) {
			memcpy(db->name, name, i + 1);
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

static int dmabuf_ioctl(struct efasim_file *f, unsigned long req, void *arg)
{
	int rc;

	switch (req) {
	case DMA_BUF_SET_NAME_A:
	case DMA_BUF_SET_NAME_B:
		rc = set_name(efasim_dmabuf_of(f), (uintptr_t)arg);
		efasim_trace("dma-buf ioctl SET_NAME -> %s", rc ? efasim_errname(-rc) : "ok");
		return rc;
	case DMA_BUF_IOCTL_SYNC:
		return sync_buf((uintptr_t)arg);
	}
	return -ENOTTY;
}

static int dmabuf_fdinfo(struct efasim_file *f, int fd, char *buf, size_t len)
{
	const struct efasim_dmabuf *db = efasim_dmabuf_of(f);
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
		     (unsigned long long)db->size, f->refs, db->exp_name);
	if (db->name[0])
		n += snprintf(buf + n, len - (size_t)n, "name:\t%s\n", db->name);
	return n;
}

static void dmabuf_release(struct efasim_file *f)
{
	free(efasim_dmabuf_of(f));
}

static const struct efasim_file_ops dmabuf_ops = {
	.kind = EFASIM_DMABUF,
	.name = "dma-buf",
	.ioctl = dmabuf_ioctl,
	.fstat = dmabuf_fstat,
	.fstatfs = dmabuf_statfs,
	.fdinfo = dmabuf_fdinfo,
	.release = dmabuf_release,
};
