// SPDX-License-Identifier: MIT
/*
 * A plain C library that test_dlmopen loads into a link-map namespace of
 * its own (dlmopen LM_ID_NEWLM): it makes the calls the emulator
 * interposes (stat, open, opendir, readlink, ioctl) on paths the emulator
 * answers for in the program's namespace (/sys, /dev/infiniband), through
 * its namespace's libc, and compares each answer with the system call's.
 * The emulator is preloaded into the program's namespace only, so here
 * every answer is this host's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/rdma_user_ioctl_cmds.h>

/* the paths, as libc and as the system call see them */
static const char *const paths[] = {
	"/sys/class/infiniband",
	"/sys/class/infiniband_verbs",
	"/sys/bus/pci/devices",
	"/sys/devices/system/cpu/online",
	"/sys/class/net/lo",
	"/dev/infiniband/uverbs0",
};

static int mismatches;

static void differ(char *why, size_t len, const char *what, const char *path)
{
	if (!mismatches++)
		snprintf(why, len, "%s %s: libc's answer in the library's namespace is not the system call's",
			 what, path);
}

/* Entries of a directory by getdents64, or -errno. */
static int raw_entries(const char *path)
{
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	long got;

	if (fd < 0)
		return -errno;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < got) {
			unsigned short reclen;

			memcpy(&reclen, buf + off + 16, sizeof(reclen)); /* d_reclen */
			n++;
			off += reclen;
		}
	}
	syscall(SYS_close, fd);
	return n;
}

/* The calls on one path; counts what differs. */
static void probe(const char *path, char *why, size_t len)
{
	struct ib_uverbs_ioctl_hdr hdr = { .length = sizeof(hdr) };
	struct stat a, b;
	char la[256], lb[256];
	int ra, ea, rb, eb, fd, raw;
	ssize_t na, nb;
	DIR *d;

	errno = 0;
	ra = stat(path, &a);
	ea = errno;
	rb = (int)syscall(SYS_newfstatat, AT_FDCWD, path, &b, 0);
	eb = errno;
	if (ra != rb || (ra && ea != eb) || (!ra && (a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
						     a.st_mode != b.st_mode || a.st_rdev != b.st_rdev)))
		differ(why, len, "stat", path);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if ((fd >= 0) != (rb == 0))
		differ(why, len, "open", path);
	if (fd >= 0) {
		/* the file opened is the one the system call names */
		if (fstat(fd, &a) || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
			differ(why, len, "open (its fstat)", path);
		/* no uverbs file: the host's kernel answers for its file */
		errno = 0;
		ra = ioctl(fd, RDMA_VERBS_IOCTL, &hdr);
		ea = errno;
		rb = (int)syscall(SYS_ioctl, fd, RDMA_VERBS_IOCTL, &hdr);
		eb = errno;
		if (ra != rb || ea != eb)
			differ(why, len, "ioctl", path);
		close(fd);
	}

	errno = 0;
	d = opendir(path);
	ea = errno;
	raw = raw_entries(path);
	if (d) {
		int n = 0;

		while (readdir(d))
			n++;
		closedir(d);
		if (n != raw)
			differ(why, len, "opendir", path);
	} else if (raw >= 0 || -raw != ea) {
		differ(why, len, "opendir", path);
	}

	errno = 0;
	na = readlink(path, la, sizeof(la));
	ea = errno;
	nb = syscall(SYS_readlinkat, AT_FDCWD, path, lb, sizeof(lb));
	eb = errno;
	if (na != nb || (na < 0 && ea != eb) || (na > 0 && memcmp(la, lb, (size_t)na)))
		differ(why, len, "readlink", path);
}

/* 0 when every answer was the host's, else the number that were not, the
 * first in why. */
int nslib_probe(char *why, size_t len)
{
	size_t i;

	mismatches = 0;
	why[0] = 0;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		probe(paths[i], why, len);
	return mismatches;
}
