// SPDX-License-Identifier: MIT
/*
 * libefasim internals, and the base layer every other file may use.
 *
 * The library is layered one way. A file calls functions of the layers
 * below its own, and of its own layer without a cycle between files; what
 * has to run upward (a file's release reaching the uverbs objects, an
 * object's release, the fork handlers) goes through function pointers set
 * where the thing is made or registered at init, never by name.
 * scripts/check-layers.py reads the table below and checks it against the
 * symbols of the compiled objects (make test); every source file is in it.
 *
 * LAYERS (top to bottom)
 *   interpose  interpose.c
 *   commands   uverbs.c uverbs_ioctl.c cmd_device.c cmd_verbs.c doorbell.c wcall.c
 *   objects    objects.c obj_verbs.c dmabuf.c events.c
 *   engine     dp_engine.c dp_mem.c
 *   fabric     dp_fabric.c
 *   base       fdtable.c config.c util.c libc.c
 * END
 *
 * interpose  the libc entry points (open, stat, write, ioctl, mmap, close,
 *            dup, fcntl ...): decide whether a call is the emulator's and
 *            hand it to the file's operations, else to the real function.
 * commands   the emulated ib_uverbs and efa driver (commands.h): the uverbs
 *            file kind, the write() protocol and its commands, the ioctl
 *            protocol and REG_DMABUF_MR, errno for errno.
 * objects    what the commands make (objects.h): the handles of a uverbs
 *            file with a table of operations per type (PD, MR, CQ, QP, AH),
 *            the device memory libefa maps, fake dma-bufs.
 * engine     the device (engine.h): its tables (MR keys, address handles),
 *            the thread that executes WQEs and writes completions.
 * fabric     the wire between processes and hosts (fabric.h).
 * base       this header: the real libc entry points (resolved once, at
 *            load), the global lock and fork handlers, the table of the
 *            emulator's file descriptors with an operations table per kind,
 *            the emulated machine (configuration), logging, the clock, user
 *            copies.
 *
 * Conventions: internal functions return 0 or a negative errno; only the
 * libc entry points set errno. Functions named *_locked expect the global
 * lock (efasim_lock) to be held.
 */
#ifndef EFASIM_INTERNAL_H
#define EFASIM_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>

#define EFASIM_API __attribute__((visibility("default")))

/* ---- the real libc entry points (libc.c) ---- */

/*
 * Every function the library interposes, and that it calls itself, as the
 * next definition after the library (dlsym(RTLD_NEXT)): X(name, return
 * type, parameters). A new interposer adds its line here.
 */
#define EFASIM_LIBC_FUNCS(X)                                                        \
	X(socket, int, (int, int, int))                                             \
	X(open, int, (const char *, int, ...))                                      \
	X(open64, int, (const char *, int, ...))                                    \
	X(openat, int, (int, const char *, int, ...))                               \
	X(openat64, int, (int, const char *, int, ...))                             \
	X(__open_2, int, (const char *, int))                                       \
	X(__open64_2, int, (const char *, int))                                     \
	X(__openat_2, int, (int, const char *, int))                                \
	X(__openat64_2, int, (int, const char *, int))                              \
	X(fopen, FILE *, (const char *, const char *))                              \
	X(fopen64, FILE *, (const char *, const char *))                            \
	X(stat, int, (const char *, struct stat *))                                 \
	X(stat64, int, (const char *, struct stat64 *))                             \
	X(lstat, int, (const char *, struct stat *))                                \
	X(lstat64, int, (const char *, struct stat64 *))                            \
	X(fstat, int, (int, struct stat *))                                         \
	X(fstat64, int, (int, struct stat64 *))                                     \
	X(fstatat, int, (int, const char *, struct stat *, int))                    \
	X(fstatat64, int, (int, const char *, struct stat64 *, int))                \
	X(statx, int, (int, const char *, int, unsigned int, struct statx *))       \
	X(__xstat, int, (int, const char *, struct stat *))                         \
	X(__xstat64, int, (int, const char *, struct stat64 *))                     \
	X(__lxstat, int, (int, const char *, struct stat *))                        \
	X(__lxstat64, int, (int, const char *, struct stat64 *))                    \
	X(__fxstat, int, (int, int, struct stat *))                                 \
	X(__fxstat64, int, (int, int, struct stat64 *))                             \
	X(__fxstatat, int, (int, int, const char *, struct stat *, int))            \
	X(__fxstatat64, int, (int, int, const char *, struct stat64 *, int))        \
	X(access, int, (const char *, int))                                         \
	X(faccessat, int, (int, const char *, int, int))                            \
	X(euidaccess, int, (const char *, int))                                     \
	X(eaccess, int, (const char *, int))                                        \
	X(opendir, DIR *, (const char *))                                           \
	X(scandir, int, (const char *, struct dirent ***,                           \
			 int (*)(const struct dirent *),                            \
			 int (*)(const struct dirent **, const struct dirent **)))  \
	X(scandir64, int, (const char *, struct dirent64 ***,                       \
			   int (*)(const struct dirent64 *),                        \
			   int (*)(const struct dirent64 **, const struct dirent64 **))) \
	X(readlink, ssize_t, (const char *, char *, size_t))                        \
	X(readlinkat, ssize_t, (int, const char *, char *, size_t))                 \
	X(realpath, char *, (const char *, char *))                                 \
	X(canonicalize_file_name, char *, (const char *))                           \
	X(fstatfs, int, (int, struct statfs *))                                     \
	X(fstatfs64, int, (int, struct statfs64 *))                                 \
	X(write, ssize_t, (int, const void *, size_t))                              \
	X(read, ssize_t, (int, void *, size_t))                                     \
	X(__read_chk, ssize_t, (int, void *, size_t, size_t))                       \
	X(ioctl, int, (int, unsigned long, ...))                                    \
	X(mmap, void *, (void *, size_t, int, int, int, off_t))                     \
	X(mmap64, void *, (void *, size_t, int, int, int, off_t))                   \
	X(close, int, (int))                                                        \
	X(close_range, int, (unsigned int, unsigned int, int))                      \
	X(closefrom, void, (int))                                                   \
	X(dup, int, (int))                                                          \
	X(dup2, int, (int, int))                                                    \
	X(dup3, int, (int, int, int))                                               \
	X(fcntl, int, (int, int, ...))                                              \
	X(fcntl64, int, (int, int, ...))

struct efasim_libc {
#define EFASIM_LIBC_MEMBER(name, ret, params) ret(*name) params;
	EFASIM_LIBC_FUNCS(EFASIM_LIBC_MEMBER)
#undef EFASIM_LIBC_MEMBER
};

extern struct efasim_libc efasim_libc_table;
extern atomic_bool efasim_libc_resolved;
/* Resolves the table now: only for a call that comes before the library's
 * constructor ran (libc.c says when that happens). */
const struct efasim_libc *efasim_libc_early(void);

static inline const struct efasim_libc *efasim_libc(void)
{
	if (__builtin_expect(atomic_load_explicit(&efasim_libc_resolved, memory_order_acquire), 1))
		return &efasim_libc_table;
	return efasim_libc_early();
}

/* EFASIM_REAL(open): the next open(), or NULL where there is none. */
#define EFASIM_REAL(name) __atomic_load_n(&efasim_libc()->name, __ATOMIC_RELAXED)

/* ---- the emulated machine (config.c) ---- */

#define EFASIM_PCI_LEN 20 /* "dddddddd:bb:dd.f" (a domain of up to 8 digits) + NUL */
#define EFASIM_NAME_LEN 64
#define EFASIM_SYSFS_LEN 128 /* a subtree of /sys, relative ("class/infiniband") */

enum efasim_outcome { EFASIM_P2P, EFASIM_BOUNCED, EFASIM_REFUSED };

/* A PCI function of the model and the driver bound to it ("" if none). */
struct efasim_fn {
	char pci[EFASIM_PCI_LEN];
	char driver[EFASIM_NAME_LEN];
};

/* What the emulated kernel does when NIC attaches to memory owned by owner. */
struct efasim_verdict {
	char nic[EFASIM_PCI_LEN];
	char owner[EFASIM_PCI_LEN];
	enum efasim_outcome outcome;
};

/* One EFA device: its uverbs index, names and the attributes it reports. */
struct efasim_dev {
	int index; /* N of uverbsN */
	char ibdev[EFASIM_NAME_LEN];
	char pci[EFASIM_PCI_LEN];
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint64_t fw_ver;    /* bytes major, minor, sub, build from the LSB */
	uint64_t node_guid; /* host order */
	uint64_t max_mr_size, page_size_cap;
	uint32_t max_qp, max_cq, max_cqe, max_mr, max_pd, max_ah;
	uint32_t max_sq_wr, max_rq_wr, max_rdma_size, max_llq_size;
	uint32_t device_caps; /* the efa driver's EFA_QUERY_DEVICE_CAPS_* bits */
	uint32_t port_mtu, max_msg_sz, num_comp_vectors;
	uint32_t max_sq_sge, max_rq_sge, max_wr_rdma_sge, inline_buf_size;
	uint32_t sub_cqs_per_cq, max_tx_batch, min_sq_wr;
	int peer_blocked, numa_node;
	uint8_t gid[16]; /* GID 0 of port 1, network order */
	/* mutable, under the global lock */
	uint32_t next_key, next_pdn;
};

struct efasim_config {
	char path[4096];
	struct efasim_dev *devs;
	size_t ndevs;
	struct efasim_fn *fns;
	size_t nfns;
	struct efasim_verdict *verdicts;
	size_t nverdicts;
	char fabric[4096]; /* the fabric directory ("" = next to the file) */
	/* the model's kernel release: what its efa driver and ib_uverbs
	 * understand (abi.h, KREL); the newest the emulator knows when the
	 * file names none or names no numbers (latest, p2p-hmat) */
	uint32_t kernel;
	char kernel_name[EFASIM_NAME_LEN];
	/* the upstream release whose efa driver answers as the model's (an
	 * out-of-tree driver's by its version); the kernel's without the line */
	uint32_t efa_driver;
	char efa_driver_name[EFASIM_NAME_LEN];
	struct timespec loaded; /* time stamps of the emulated device nodes */
	/* the tree that stands for /sys (SYSFS_PATH, else the file's folder),
	 * and the subtrees of /sys it answers for ("sysfs" lines) */
	char sysfs_root[4096];
	char (*sysfs)[EFASIM_SYSFS_LEN];
	size_t nsysfs;
};

/* The configuration, loaded once on first use; NULL when there is none. */
struct efasim_config *efasim_config(void);
struct efasim_dev *efasim_dev_by_index(struct efasim_config *c, int index);
const struct efasim_fn *efasim_fn_by_pci(const struct efasim_config *c, const char *pci);
const struct efasim_verdict *efasim_verdict_for(const struct efasim_config *c,
						const char *nic, const char *owner);
/* Whether the emulated kernel is release major.minor or newer. */
bool efasim_kernel_at_least(const struct efasim_config *c, unsigned int major, unsigned int minor);
/* Whether the emulated efa driver has the ABI of upstream release
 * major.minor or newer. */
bool efasim_efa_at_least(const struct efasim_config *c, unsigned int major, unsigned int minor);
/* Parses "dddd:bb:dd.f" or "bb:dd.f" (any case) into the canonical form. */
int efasim_pci_normalize(const char *in, char out[EFASIM_PCI_LEN]);
/*
 * The file of the emulated host's tree that stands for an absolute path
 * under /sys, when the path is in a subtree the tree answers for: the path
 * in the tree, written to buf; path itself for every other path (and when
 * there is no emulated host); NULL with errno ENAMETOOLONG when the tree's
 * path does not fit.
 */
const char *efasim_sysfs_path(const char *path, char *buf, size_t len);
/* The reverse, in place: a path inside the tree, under a subtree it
 * answers for, is rewritten as the /sys path it stands for. */
void efasim_sysfs_unmap(char *path);
/* Parses one configuration text; exposed for the loader and for tests. */
int efasim_config_parse(struct efasim_config *c, char *text, char *err, size_t errlen);

/* ---- the global lock, fork (fdtable.c) ---- */

void efasim_lock(void);
void efasim_unlock(void);
/* waits on c with the global lock held (CLOCK_REALTIME deadline) */
int efasim_cond_timedwait(pthread_cond_t *c, const struct timespec *abstime);
/* Registers fn to run in the child of fork, lock held, before the lock is
 * released (a layer above resets its state there). Lock held. */
int efasim_atfork_child_locked(void (*fn)(void));

/* ---- the emulator's files (fdtable.c) ---- */

enum efasim_kind { EFASIM_UVERBS = 1, EFASIM_DMABUF, EFASIM_CHANNEL, EFASIM_ASYNC };

struct efasim_file;

/*
 * What a kind of emulated file does: the file's maker (a layer above)
 * points the file at its kind's table, and the interposers call through
 * it. A NULL entry is the kernel's answer for a file without that method
 * (write EINVAL, ioctl ENOTTY) or, where the file is a plain memfd to
 * libc, the real function (mmap, fstat, fstatfs, fdinfo). All run with the
 * global lock held.
 */
struct efasim_file_ops {
	enum efasim_kind kind;
	const char *name;
	/* count, or a negative errno */
	ssize_t (*write)(struct efasim_file *f, int fd, const void *buf, size_t count);
	/* count, -EAGAIN when nothing is there yet (the interposer then waits
	 * for the descriptor to be readable, without the lock, unless it is
	 * O_NONBLOCK), or another negative errno; NULL: the real read */
	ssize_t (*read)(struct efasim_file *f, int fd, void *buf, size_t count);
	int (*ioctl)(struct efasim_file *f, unsigned long req, void *arg);
	/* 0 (the real mmap follows) or a negative errno */
	int (*mmap)(struct efasim_file *f, size_t len, int flags, off_t off);
	/* true when st was filled; it holds the backing memfd's on entry */
	bool (*fstat)(struct efasim_file *f, struct stat *st);
	bool (*fstatfs)(struct efasim_file *f, struct statfs *sf);
	/* the text of /proc/self/fdinfo/<fd>: its length or a negative errno */
	int (*fdinfo)(struct efasim_file *f, int fd, char *buf, size_t len);
	/* the last reference went: frees the file */
	void (*release)(struct efasim_file *f);
};

/*
 * An emulated open file, the first member of its kind's structure. Every
 * descriptor that refers to it (dup, fork) holds a reference; the backing
 * memfd's (st_dev, st_ino) tells whether a descriptor number still refers
 * to it or was closed behind our back.
 */
struct efasim_file {
	const struct efasim_file_ops *ops;
	int refs;
	dev_t st_dev;
	ino_t st_ino;
};

/* True when fd may be tracked; false is certain (no lock needed). */
bool efasim_maybe_tracked(int fd);
/* True when any file is tracked (fast path for close/dup). */
bool efasim_tracking(void);
/* True when a tracked file has its own fdinfo (fast path for /proc opens). */
bool efasim_has_fdinfo(void);
/* True when called from the process that owns the table (not a vfork child). */
bool efasim_table_owner(void);
/* Sets up f (zeroed by its maker) for the memfd fd: 0 or a negative errno. */
int efasim_file_init(struct efasim_file *f, const struct efasim_file_ops *ops, int fd);
struct efasim_file *efasim_fd_get_locked(int fd);
/* The same, leaving the descriptor's own fstat in st (one system call). */
struct efasim_file *efasim_fd_stat_locked(int fd, struct stat *st);
/* A descriptor that refers to f, or -1. */
int efasim_fd_of_locked(const struct efasim_file *f);
int efasim_fd_insert_locked(int fd, struct efasim_file *f);
void efasim_fd_remove_locked(int fd);
void efasim_fd_dup_locked(int oldfd, int newfd);
void efasim_fd_remove_range_locked(unsigned int first, unsigned int last);
void efasim_file_get(struct efasim_file *f);
void efasim_file_put_locked(struct efasim_file *f);

/* ---- helpers (util.c) ---- */

bool efasim_trace_on(void);
/* EFASIM_TRACE=2: the data path too, a line per packet */
int efasim_trace_level(void);
void efasim_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void efasim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *efasim_errname(int err); /* err > 0 */
/* CLOCK_MONOTONIC in nanoseconds */
uint64_t efasim_now_ns(void);
/* getpid() without the system call (glibc no longer caches it), kept
 * right across fork; a vfork child sees its parent's. */
pid_t efasim_pid(void);
/* Copies between the emulated kernel and user memory, as copy_{from,to}_user:
 * 0 or -EFAULT, never a crash on a bad address. */
int efasim_copy_in(void *dst, uint64_t src, size_t len);
int efasim_copy_out(uint64_t dst, const void *src, size_t len);
int efasim_clear_out(uint64_t dst, size_t len);
/* 1 when the user bytes are all zero, 0 when not, -EFAULT. */
int efasim_user_is_zero(uint64_t src, size_t len);
/* 0 when every page of [addr, addr+len) is mapped, else -EFAULT. */
int efasim_user_mapped(uint64_t addr, uint64_t len);
/* (st_dev, st_ino) of fd without going through libc wrappers. */
int efasim_fd_identity(int fd, dev_t *dev, ino_t *ino);
int efasim_sys_close(int fd);

#endif /* EFASIM_INTERNAL_H */
