// SPDX-License-Identifier: MIT
/*
 * What test_loader and its library (loader_ctor.c) share: the calls made
 * while the dynamic loader's lock is held, and the program's hook that
 * has its other thread make them in a signal handler.
 */
#ifndef LOADER_TEST_H
#define LOADER_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/rdma_user_ioctl_cmds.h>

/* test_loader.c (exported): signals the program's other thread, whose
 * handler runs loader_test_calls, and waits for it; 0 or an errno, what
 * failed in why. */
int loader_test_signal(char *why, size_t len);

/* The calls, each on its first use in the process. Async-signal-safe as
 * far as the emulator lets them be: the caller holds none of its locks. */
static inline int loader_test_calls(char *why, size_t len)
{
	struct ib_uverbs_ioctl_hdr hdr = { .length = 1 };
	const char *dev = "/dev/infiniband/uverbs0";
	int fd, fd2, fd3, rc = 0;
	struct stat st;
	void *p;

#define BAD(msg)                                                            \
	do {                                                                \
		if (!rc)                                                    \
			snprintf(why, len, "%s (errno %d, %s)", msg, errno, \
				 strerror(errno));                          \
		rc = -1;                                                    \
	} while (0)

	if (stat(dev, &st) || !S_ISCHR(st.st_mode))
		BAD("stat of the uverbs device");
	if (access(dev, R_OK | W_OK))
		BAD("access of the uverbs device");
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		BAD("open of the uverbs device");
		return rc;
	}
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode))
		BAD("fstat of the uverbs descriptor");
	errno = 0;
	if (ioctl(fd, RDMA_VERBS_IOCTL, &hdr) != -1 || errno != EINVAL)
		BAD("ioctl with a bad header: want EINVAL");
	errno = 0;
	if (write(fd, "x", 1) != -1 || errno != EINVAL)
		BAD("write of one byte: want EINVAL");
	errno = 0;
	if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED || errno != EINVAL)
		BAD("mmap of device memory that was never made: want EINVAL");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		BAD("mmap of anonymous memory");
	else
		munmap(p, 4096);
	fd2 = dup(fd);
	fd3 = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd2 < 0 || fd3 < 0)
		BAD("dup of the uverbs descriptor");
	if (fd3 >= 0 && (fstat(fd3, &st) || !S_ISCHR(st.st_mode)))
		BAD("fstat of a duplicate");
	if (fd3 >= 0 && close(fd3))
		BAD("close of a duplicate");
	if (fd2 >= 0 && close(fd2))
		BAD("close of a duplicate");
	if (close(fd))
		BAD("close of the uverbs descriptor");
	if (stat("/", &st) || !S_ISDIR(st.st_mode))
		BAD("stat of /");
	return rc;
#undef BAD
}

#endif /* LOADER_TEST_H */
