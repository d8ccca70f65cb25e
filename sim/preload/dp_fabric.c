// SPDX-License-Identifier: MIT
/*
 * The emulated wire: files in a fabric directory that every emulated
 * device of the processes (and hosts) sharing it can map.
 *
 *   dev-<gid>         one per device (GID). A QPN is allocated by taking a
 *                     POSIX write lock on byte 4096+QPN of this file: the
 *                     kernel drops it when the owner dies, so a peer that
 *                     finds the byte unlocked knows the QP is gone.
 *   qp-<gid>-<qpn>    one per QP: a header page, a page of port headers,
 *                     then FAB_PORTS ports of FAB_SLOTS slots. A sender QP
 *                     claims one port (compare-and-swap of its nonce) and
 *                     is its only producer; the owner's engine is the only
 *                     consumer: single-producer single-consumer rings, so a
 *                     producer that dies never leaves a half-written packet
 *                     visible. Bounded: a full port makes the sender wait.
 *   eng-<nonce>       one per engine (process): the futex word a sender
 *                     bumps to wake the engine when it sleeps.
 *
 * Files are created under a temporary name and renamed into place, so a
 * sender that still maps the file of a destroyed QP never sees the next
 * QP of that number; the QP that takes the number of one whose process
 * died marks the dead one's file so, for the peers that still map it.
 * Everything is plain shared memory with C11 atomics.
 *
 * Who may write the directory is who may inject packets into our QPs and
 * plant names we open, so a directory that others than its owner can
 * write, or that is not ours (or root's), is refused, as ssh refuses such
 * a ~/.ssh; every file is created with O_EXCL and opened with O_NOFOLLOW,
 * and a file that is not a regular file of ours is not used. The directory
 * is opened once and checked through that descriptor (walking up by ".."
 * from it), and every name is then looked up relative to it: a path that
 * leads elsewhere later (a symlink on the way, replaced by another user)
 * changes nothing.
 *
 * The files are opened, locked, mapped and closed with system calls, never
 * through libc's names: those are the library's own interposers, a layer
 * above.
 */
#include "fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FAB_MAGIC_DEV 0x45464456u /* "EFDV" */
#define FAB_MAGIC_QP 0x45465150u  /* "EFQP" */
#define FAB_VERSION 3 /* 2: pulled sends; 3: their MRs checked, pid namespaces */
#define FAB_PORTS 64
#define FAB_SLOTS 16
#define FAB_SLOT_MIN 16384
#define FAB_HDR_BYTES 8192 /* header page + port header page */
#define FAB_LOCK_BASE 4096
#define FAB_MAX_DEVS 256

struct fab_qp_hdr {
	uint32_t magic, version;
	uint32_t qpn, type;
	_Atomic uint32_t live;
	_Atomic uint32_t qkey;
	_Atomic uint32_t state;
	int32_t owner_pid;
	uint64_t nonce;
	uint32_t nports, nslots, slot_size, max_payload;
	uint8_t gid[FAB_GID_LEN];
	_Atomic uint64_t pending;  /* a bit per port with packets */
	_Atomic uint32_t exhausted; /* a sender found no free port */
	uint32_t pad;
	char engine[48];
	/* what a peer needs to find this QP's memory regions in its
	 * process's MR table (the engine file): the table's context tag and
	 * the QP's PD (0: none published); reads: 1 when the device serves
	 * RDMA reads of them (the RDMA_READ cap), else a requester's reads go
	 * through packets. A receiver checks a pulled send's buffers there. */
	_Atomic uint64_t mr_ctx;
	_Atomic uint32_t mr_pd;
	_Atomic uint32_t mr_reads;
	/* the owner's pid namespace (the inode of /proc/self/ns/pid; 0 not
	 * known): owner_pid is a pid there, and a peer in another sees the
	 * owner by the pid its lock shows (F_GETLK), or not at all */
	uint64_t pidns;
};

struct fab_port {
	_Atomic uint64_t claim; /* the sender QP's nonce; 0: free */
	_Atomic uint32_t tail;  /* packets produced (sender) */
	_Atomic uint32_t head;  /* packets consumed (owner) */
	uint8_t gid[FAB_GID_LEN];
	uint32_t qpn;
	uint8_t pad[64 - 8 - 4 - 4 - FAB_GID_LEN - 4];
};
_Static_assert(sizeof(struct fab_port) == 64, "port header");
_Static_assert(FAB_PORTS * sizeof(struct fab_port) <= 4096, "port page");

struct fab_wake {
	_Atomic uint32_t seq;
	_Atomic uint32_t sleeping;
};

/*
 * The engine file's second part: the memory regions of the process that
 * peers may read directly (process_vm_readv on the owner), one record per
 * MR, written by the owner under its lock with a sequence count (odd while
 * a record changes) that readers check before and after they copy. A
 * record is found by its key within a window of slots; a full window
 * leaves the MR unpublished, and reads of it go through packets.
 */
#define FAB_MR_MAGIC 0x45464d52u /* "EFMR" */
#define FAB_MR_SLOTS 8192
#define FAB_MR_WINDOW 8
#define FAB_MR_OFF 4096

struct fab_mr_hdr {
	_Atomic uint32_t magic;
	uint32_t nslots;
	int32_t pid;
	uint32_t pad;
	/* a word of the owner's memory and its value: a reader that finds
	 * them at pid in its own view of the pids knows it has the owner */
	uint64_t token_addr, token;
};

struct fab_mr_rec {
	_Atomic uint32_t seq;
	uint32_t key, pd, access;
	uint64_t ctx; /* 0: free */
	uint64_t iova, len, addr;
};

#define FAB_ENGINE_SIZE (FAB_MR_OFF + 64 + (size_t)FAB_MR_SLOTS * sizeof(struct fab_mr_rec))

struct fab_devfile {
	uint8_t gid[FAB_GID_LEN];
	int fd;
	uint8_t *owned; /* QPNs this process holds */
	uint32_t max_qp;
};

struct fab_qpfile {
	uint8_t *base;
	size_t size;
	struct fab_qp_hdr *hdr;
	struct fab_devfile *dev;
	uint32_t qpn;
	char path[4200];
};

struct fab_peer {
	uint8_t *base;
	size_t size;
	struct fab_qp_hdr *hdr;
	struct fab_devfile *dev;
	struct fab_wake *wake;
	size_t wake_size;
	/* the owner as this process sees it: the pid that holds the QPN's
	 * lock (F_GETLK translates it into our pid namespace), 0 when that
	 * process is not visible from here */
	pid_t pid;
	int verified; /* the MR table's owner: 0 unchecked, 1 reachable, -1 not */
	uint64_t nonce;
	uint64_t claim; /* our nonce on the claimed port */
	int port;
	uint32_t qpn, tail;
	uint8_t gid[FAB_GID_LEN];
};

static struct fab_devfile devfiles[FAB_MAX_DEVS];
static unsigned int ndevfiles;
static struct fab_wake *own_wake;
static struct fab_mr_hdr *own_mrs;
static volatile uint64_t own_token;
static char own_engine[48];
static char fabric_dir[4096];
static int dir_verdict; /* 0 unchecked, 1 usable, a negative errno refused */
static int dir_fd = -1; /* the directory checked (O_PATH) */
static dev_t dir_dev;
static ino_t dir_ino;

/* ------------------------------------------------------------ names */

const char *fab_dir(void)
{
	struct efasim_config *c = efasim_config();
	char *slash;

	if (fabric_dir[0] || !c)
		return fabric_dir;
	if (c->fabric[0]) {
		snprintf(fabric_dir, sizeof(fabric_dir), "%s", c->fabric);
		return fabric_dir;
	}
	snprintf(fabric_dir, sizeof(fabric_dir), "%s", c->path);
	slash = strrchr(fabric_dir, '/');
	if (slash)
		snprintf(slash + 1, sizeof(fabric_dir) - (size_t)(slash + 1 - fabric_dir), "fabric");
	else
		snprintf(fabric_dir, sizeof(fabric_dir), "fabric");
	return fabric_dir;
}

static void gid_hex(const uint8_t gid[FAB_GID_LEN], char out[33])
{
	static const char hx[] = "0123456789abcdef";
	int i;

	for (i = 0; i < FAB_GID_LEN; i++) {
		out[2 * i] = hx[gid[i] >> 4];
		out[2 * i + 1] = hx[gid[i] & 15];
	}
	out[32] = '\0';
}

/* A file's name in the fabric directory (never a path: names are looked
 * up relative to the directory's descriptor). */
static int name_of(char *buf, size_t len, const char *kind, const uint8_t gid[FAB_GID_LEN],
		   long qpn)
{
	char hex[33];
	int n;

	gid_hex(gid, hex);
	if (qpn >= 0)
		n = snprintf(buf, len, "%s-%s-%ld", kind, hex, qpn);
	else
		n = snprintf(buf, len, "%s-%s", kind, hex);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *dir)
{
	char tmp[4096];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		tmp[i] = dir[i];
	}
	return 0;
}

static uint64_t random_u64(void)
{
	static _Atomic uint64_t counter;
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = efasim_now_ns() ^ ((uint64_t)getpid() << 32);
	v ^= atomic_fetch_add(&counter, 0x9e3779b97f4a7c15ull);
	return v ? v : 1;
}

/* This process's pid namespace: the inode of /proc/self/ns/pid, 0 when it
 * cannot be read. Worked out again in a child (a fork after
 * unshare(CLONE_NEWPID) is in another namespace than its parent). */
static uint64_t own_pidns(void)
{
	static uint64_t ns;
	static pid_t for_pid;
	struct stat st;

	if (for_pid == efasim_pid())
		return ns;
	ns = syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/pid", &st, 0) ? 0 : (uint64_t)st.st_ino;
	for_pid = efasim_pid();
	return ns;
}

static int fab_dir_ready(void);

/* Opens name in the fabric directory (never through a symlink): an fd, or
 * -1 with errno. */
static int sys_open(const char *name, int flags)
{
	int rc = fab_dir_ready();

	if (rc) {
		errno = -rc;
		return -1;
	}
	return (int)syscall(SYS_openat, dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* 0 when fd is a regular file of ours (what we created, or another
 * process of ours did), else -EPERM. */
static int own_file(int fd, struct stat *st)
{
	if (syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH))
		return -errno;
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid())
		return -EPERM;
	return 0;
}

/* Creates name (O_EXCL), or opens the file another process of ours
 * created there: an fd or a negative errno. *created tells which. */
static int open_shared(const char *path, bool create, bool *created)
{
	struct stat st;
	int fd, rc;

	*created = false;
	if (create) {
		fd = sys_open(path, O_RDWR | O_CREAT | O_EXCL);
		if (fd >= 0) {
			*created = true;
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	fd = sys_open(path, O_RDWR);
	if (fd < 0)
		return -errno;
	rc = own_file(fd, &st);
	if (rc) {
		efasim_sys_close(fd);
		return rc;
	}
	return fd;
}

/* Why the directory open at fd (dir names it) may not be used ("" when it
 * may): it and every directory above it up to / must be root's or ours;
 * none may be writable by others, except the sticky ones above it (/tmp),
 * where others cannot move ours away. Checked through fd, walking up by
 * "..": what is checked is what is used. The names come from dir's path. */
static const char *dir_unsafe(int fd, const char *dir, char *why, size_t len)
{
	char path[4096];
	uid_t me = geteuid();
	bool last = true;
	struct stat st, up;
	char *slash;
	int cur, parent;

	if (!EFASIM_REAL(realpath) || !EFASIM_REAL(realpath)(dir, path))
		snprintf(path, sizeof(path), "%s", dir);
	cur = (int)syscall(SYS_openat, fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (cur < 0) {
		snprintf(why, len, "%s: %s", path, efasim_errname(errno));
		return why;
	}
	for (;;) {
		if (syscall(SYS_newfstatat, cur, "", &st, AT_EMPTY_PATH)) {
			snprintf(why, len, "%s: %s", path, efasim_errname(errno));
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, len, "%s is not a directory", path);
			break;
		}
		if (st.st_uid != me && st.st_uid != 0) {
			snprintf(why, len, "%s belongs to uid %u", path, (unsigned)st.st_uid);
			break;
		}
		if (last && st.st_uid != me) {
			snprintf(why, len, "%s belongs to uid %u, not to us", path, (unsigned)st.st_uid);
			break;
		}
		if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX))) {
			snprintf(why, len, "%s is writable by %s (mode %04o)", path,
				 (st.st_mode & 002) ? "others" : "its group",
				 (unsigned)(st.st_mode & 07777));
			break;
		}
		parent = (int)syscall(SYS_openat, cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (parent < 0 || syscall(SYS_newfstatat, parent, "", &up, AT_EMPTY_PATH)) {
			snprintf(why, len, "%s/..: %s", path, efasim_errname(errno));
			if (parent >= 0)
				efasim_sys_close(parent);
			break;
		}
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino) { /* / */
			efasim_sys_close(parent);
			why[0] = '\0';
			break;
		}
		efasim_sys_close(cur);
		cur = parent;
		slash = strrchr(path, '/');
		if (slash == path)
			slash[1] = '\0';
		else if (slash)
			*slash = '\0';
		last = false;
	}
	efasim_sys_close(cur);
	return why;
}

/* Whether dir_fd is still the directory that was checked (a program may
 * close descriptors behind the library's back, and reuse the number). */
static bool dir_fd_same(void)
{
	struct stat st;

	return dir_fd >= 0 && !syscall(SYS_newfstatat, dir_fd, "", &st, AT_EMPTY_PATH) &&
	       S_ISDIR(st.st_mode) && st.st_dev == dir_dev && st.st_ino == dir_ino;
}

/* The fabric directory, made if missing, opened and checked: 0, or
 * -EACCES said once when another user could write it. */
static int fab_dir_ready(void)
{
	char why[4400];
	struct stat st;
	int rc, fd;

	if (dir_verdict < 0)
		return dir_verdict;
	if (dir_verdict > 0) {
		if (dir_fd_same())
			return 0;
		/* closed behind our back: the number is not ours any more */
		dir_fd = -1;
		dir_verdict = 0;
	}
	rc = mkdir_p(fab_dir());
	if (rc) {
		efasim_warn("fabric directory %s: %s", fab_dir(), efasim_errname(-rc));
		return rc;
	}
	fd = (int)syscall(SYS_openat, AT_FDCWD, fab_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0 || syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH)) {
		rc = -errno;
		if (fd >= 0)
			efasim_sys_close(fd);
		efasim_warn("fabric directory %s: %s", fab_dir(), efasim_errname(-rc));
		return rc;
	}
	if (dir_unsafe(fd, fab_dir(), why, sizeof(why))[0]) {
		efasim_warn("fabric directory %s refused: %s (another user could plant files there "
			    "and inject packets; use a directory only you can write)", fab_dir(), why);
		efasim_sys_close(fd);
		dir_verdict = -EACCES;
		return dir_verdict;
	}
	dir_fd = fd;
	dir_dev = st.st_dev;
	dir_ino = st.st_ino;
	dir_verdict = 1;
	return 0;
}

static void *sys_mmap_shared(int fd, size_t len)
{
	return (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)0);
}

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* ------------------------------------------------------------ devices */

static struct fab_devfile *devfile(const uint8_t gid[FAB_GID_LEN], uint32_t max_qp, bool create)
{
	struct fab_devfile *d;
	char path[4200];
	unsigned int i;
	uint32_t hdr[2];
	bool created;
	int fd;

	for (i = 0; i < ndevfiles; i++)
		if (!memcmp(devfiles[i].gid, gid, FAB_GID_LEN))
			goto found;
	if (ndevfiles == FAB_MAX_DEVS || fab_dir_ready() ||
	    name_of(path, sizeof(path), "dev", gid, -1))
		return NULL;
	fd = open_shared(path, create, &created);
	if (fd < 0)
		return NULL;
	if (created) {
		/* the header only tells senders the size */
		hdr[0] = FAB_MAGIC_DEV;
		hdr[1] = max_qp;
		if (pwrite(fd, hdr, sizeof(hdr), 0) != sizeof(hdr)) {
			efasim_sys_close(fd);
			return NULL;
		}
	}
	d = &devfiles[ndevfiles];
	memcpy(d->gid, gid, FAB_GID_LEN);
	d->fd = fd; /* never closed: closing any descriptor drops our locks */
	d->owned = NULL;
	d->max_qp = 0;
	ndevfiles++;
	i = ndevfiles - 1;
found:
	d = &devfiles[i];
	if (create && !d->owned && max_qp) {
		d->owned = calloc((size_t)max_qp + 1, 1);
		if (!d->owned)
			return NULL;
		d->max_qp = max_qp;
	}
	return d;
}

static int lock_at(int fd, off_t off, short type, int cmd, pid_t *holder, bool *held)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = off, .l_len = 1 };

	if (syscall(SYS_fcntl, fd, cmd, &fl) < 0)
		return -errno;
	if (holder)
		*holder = fl.l_type == F_UNLCK ? 0 : fl.l_pid;
	if (held)
		*held = fl.l_type != F_UNLCK;
	return 0;
}

static int lock_byte(int fd, uint32_t qpn, short type, int cmd)
{
	return lock_at(fd, FAB_LOCK_BASE + (off_t)qpn, type, cmd, NULL, NULL);
}

bool fab_local_gid(const uint8_t gid[FAB_GID_LEN])
{
	struct efasim_config *c = efasim_config();
	size_t i;

	for (i = 0; c && i < c->ndevs; i++)
		if (!memcmp(c->devs[i].gid, gid, FAB_GID_LEN))
			return true;
	return false;
}

/* ------------------------------------------------------------ own QPs */

static size_t qp_file_size(uint32_t slot_size)
{
	return FAB_HDR_BYTES + (size_t)FAB_PORTS * FAB_SLOTS * slot_size;
}

static struct fab_port *port_at(uint8_t *base, int i)
{
	return (struct fab_port *)(base + 4096) + i;
}

static uint8_t *slot_at(uint8_t *base, const struct fab_qp_hdr *h, int port, uint32_t n)
{
	return base + FAB_HDR_BYTES + ((size_t)port * h->nslots + (n % h->nslots)) * h->slot_size;
}

/*
 * The file of a QP whose process died without destroying it still says
 * "live" to the peers that map it; the new QP of that number (it holds the
 * number's lock, so the old owner is gone) says otherwise before taking
 * the name, so that they look the number up again.
 */
static void mark_dead(const char *path, const uint8_t gid[FAB_GID_LEN], uint32_t qpn)
{
	struct fab_qp_hdr *h;
	struct stat st;
	int fd = sys_open(path, O_RDWR);

	if (fd < 0)
		return;
	if (own_file(fd, &st) == 0 && (size_t)st.st_size >= FAB_HDR_BYTES) {
		h = sys_mmap_shared(fd, 4096);
		if (h != MAP_FAILED) {
			if (h->magic == FAB_MAGIC_QP && h->qpn == qpn && !memcmp(h->gid, gid, FAB_GID_LEN) &&
			    atomic_exchange_explicit(&h->live, 0, memory_order_acq_rel))
				efasim_trace("QP %u: the file of a departed QP of that number marked dead",
					     qpn);
			munmap(h, 4096);
		}
	}
	efasim_sys_close(fd);
}

int fab_qp_create(const uint8_t gid[FAB_GID_LEN], uint32_t max_qp, uint32_t type,
		  uint32_t max_payload, struct fab_qpfile **out, uint32_t *qpn_out)
{
	uint32_t slot = FAB_SLOT_MIN, qpn;
	struct fab_devfile *d;
	struct fab_qpfile *q;
	char tmp[4300];
	int fd = -1, rc;
	size_t size;

	if (max_payload + FAB_PKT_HDR > slot)
		slot = (max_payload + FAB_PKT_HDR + 4095) & ~4095u;
	rc = fab_dir_ready();
	if (rc)
		return rc;
	d = devfile(gid, max_qp, true);
	if (!d || !d->owned)
		return -ENOMEM;
	for (qpn = 1; qpn <= d->max_qp; qpn++) {
		if (d->owned[qpn])
			continue;
		if (lock_byte(d->fd, qpn, F_WRLCK, F_SETLK) == 0)
			break;
	}
	if (qpn > d->max_qp)
		return -ENOMEM; /* the device's QPs are all in use */
	q = calloc(1, sizeof(*q));
	if (!q)
		goto err_unlock;
	if (name_of(q->path, sizeof(q->path), "qp", gid, qpn))
		goto err_free;
	/* a name nobody can guess, made by us alone */
	snprintf(tmp, sizeof(tmp), "%s.%d.%016llx.tmp", q->path, (int)getpid(),
		 (unsigned long long)random_u64());
	fd = sys_open(tmp, O_RDWR | O_CREAT | O_EXCL);
	if (fd < 0)
		goto err_free_errno;
	size = qp_file_size(slot);
	if (ftruncate(fd, (off_t)size))
		goto err_file;
	q->base = sys_mmap_shared(fd, size);
	if (q->base == MAP_FAILED)
		goto err_file;
	efasim_sys_close(fd);
	fd = -1;
	q->size = size;
	q->hdr = (struct fab_qp_hdr *)q->base;
	q->dev = d;
	q->qpn = qpn;
	q->hdr->magic = FAB_MAGIC_QP;
	q->hdr->version = FAB_VERSION;
	q->hdr->qpn = qpn;
	q->hdr->type = type;
	q->hdr->owner_pid = (int32_t)getpid();
	q->hdr->pidns = own_pidns();
	q->hdr->nonce = random_u64();
	q->hdr->nports = FAB_PORTS;
	q->hdr->nslots = FAB_SLOTS;
	q->hdr->slot_size = slot;
	q->hdr->max_payload = slot - FAB_PKT_HDR;
	memcpy(q->hdr->gid, gid, FAB_GID_LEN);
	memcpy(q->hdr->engine, own_engine, sizeof(q->hdr->engine));
	atomic_store_explicit(&q->hdr->live, 1, memory_order_release);
	mark_dead(q->path, gid, qpn);
	if (renameat(dir_fd, tmp, dir_fd, q->path))
		goto err_map;
	d->owned[qpn] = 1;
	*out = q;
	*qpn_out = qpn;
	return 0;

err_map:
	munmap(q->base, q->size);
err_file:
	rc = errno ? -errno : -ENOMEM;
	if (fd >= 0)
		efasim_sys_close(fd);
	unlinkat(dir_fd, tmp, 0);
	free(q);
	lock_byte(d->fd, qpn, F_UNLCK, F_SETLK);
	efasim_warn("cannot create a QP file in %s: %s", fab_dir(), efasim_errname(-rc));
	return rc;
err_free_errno:
	rc = -errno;
	free(q);
	lock_byte(d->fd, qpn, F_UNLCK, F_SETLK);
	efasim_warn("cannot create a QP file in %s: %s", fab_dir(), efasim_errname(-rc));
	return rc;
err_free:
	free(q);
err_unlock:
	lock_byte(d->fd, qpn, F_UNLCK, F_SETLK);
	return -ENOMEM;
}

void fab_qp_destroy(struct fab_qpfile *q)
{
	if (!q)
		return;
	atomic_store_explicit(&q->hdr->live, 0, memory_order_release);
	/* still ours while the byte is locked: nobody renamed over it */
	if (fab_dir_ready() == 0)
		unlinkat(dir_fd, q->path, 0);
	munmap(q->base, q->size);
	if (q->dev->owned && q->qpn <= q->dev->max_qp)
		q->dev->owned[q->qpn] = 0;
	lock_byte(q->dev->fd, q->qpn, F_UNLCK, F_SETLK);
	free(q);
}

void fab_qp_forget(struct fab_qpfile *q)
{
	if (!q)
		return;
	munmap(q->base, q->size);
	free(q);
}

void fab_qp_publish(struct fab_qpfile *q, uint32_t qkey, uint32_t state)
{
	atomic_store_explicit(&q->hdr->qkey, qkey, memory_order_release);
	atomic_store_explicit(&q->hdr->state, state, memory_order_release);
}

uint64_t fab_qp_nonce(const struct fab_qpfile *q)
{
	return q->hdr->nonce;
}

int fab_qp_poll(struct fab_qpfile *q, int budget, fab_rx_fn fn, void *arg)
{
	struct fab_qp_hdr *h = q->hdr;
	uint64_t pending, again = 0;
	int done = 0, i;

	if (!atomic_load_explicit(&h->pending, memory_order_relaxed))
		return 0;
	pending = atomic_exchange_explicit(&h->pending, 0, memory_order_acq_rel);
	for (i = 0; i < FAB_PORTS && pending; i++) {
		struct fab_port *p = port_at(q->base, i);
		uint32_t head, tail;

		if (!(pending & (1ull << i)))
			continue;
		pending &= ~(1ull << i);
		head = atomic_load_explicit(&p->head, memory_order_relaxed);
		tail = atomic_load_explicit(&p->tail, memory_order_acquire);
		if (tail - head > h->nslots) { /* a corrupt producer: drop it all */
			atomic_store_explicit(&p->head, tail, memory_order_release);
			continue;
		}
		while (head != tail) {
			const struct fab_pkt *pkt;

			if (done >= budget) {
				again |= 1ull << i;
				break;
			}
			pkt = (const struct fab_pkt *)slot_at(q->base, h, i, head);
			if (pkt->len <= h->max_payload &&
			    fn(arg, pkt, (const uint8_t *)pkt + FAB_PKT_HDR)) {
				again |= 1ull << i;
				break;
			}
			head++;
			done++;
			atomic_store_explicit(&p->head, head, memory_order_release);
		}
	}
	again |= pending;
	if (again)
		atomic_fetch_or_explicit(&h->pending, again, memory_order_release);
	return done;
}

void fab_qp_reap(struct fab_qpfile *q)
{
	int i;

	if (!atomic_exchange_explicit(&q->hdr->exhausted, 0, memory_order_acq_rel))
		return;
	for (i = 0; i < FAB_PORTS; i++) {
		struct fab_port *p = port_at(q->base, i);
		uint64_t claim = atomic_load_explicit(&p->claim, memory_order_acquire);
		struct fab_peer *peer;
		bool gone = true;

		if (!claim)
			continue;
		if (fab_peer_open(p->gid, p->qpn, &peer) == 0) {
			gone = peer->nonce != claim || fab_peer_alive(peer) <= 0;
			fab_peer_close(peer);
		}
		if (gone && atomic_compare_exchange_strong(&p->claim, &claim, 0))
			efasim_trace("QP %u: port %d of a departed sender (QP %u) freed", q->qpn, i,
				     p->qpn);
	}
}

/* ------------------------------------------------------------ peers */

static void *map_file(const char *path, size_t min, size_t *size)
{
	struct stat st;
	void *m;
	int fd = sys_open(path, O_RDWR);

	if (fd < 0)
		return NULL;
	if (own_file(fd, &st) || (size_t)st.st_size < min) {
		efasim_sys_close(fd);
		errno = ENOENT;
		return NULL;
	}
	m = sys_mmap_shared(fd, (size_t)st.st_size);
	efasim_sys_close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}

int fab_peer_open(const uint8_t gid[FAB_GID_LEN], uint32_t qpn, struct fab_peer **out)
{
	struct fab_devfile *d = devfile(gid, 0, false);
	struct fab_peer *p;
	char path[4200];
	size_t wsize;
	int alive;

	if (!d)
		return -ENODEV;
	if (name_of(path, sizeof(path), "qp", gid, qpn))
		return -ENOENT;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->base = map_file(path, FAB_HDR_BYTES, &p->size);
	if (!p->base) {
		free(p);
		return -ENOENT;
	}
	p->hdr = (struct fab_qp_hdr *)p->base;
	p->dev = d;
	p->qpn = qpn;
	p->port = -1;
	memcpy(p->gid, gid, FAB_GID_LEN);
	if (p->hdr->magic != FAB_MAGIC_QP || p->hdr->version != FAB_VERSION || p->hdr->qpn != qpn ||
	    p->hdr->nports != FAB_PORTS || !p->hdr->nslots || p->hdr->nslots > 4096 ||
	    p->hdr->slot_size < FAB_PKT_HDR + 64 || p->size < qp_file_size(p->hdr->slot_size) ||
	    memcmp(p->hdr->gid, gid, FAB_GID_LEN)) {
		fab_peer_close(p);
		return -ENOENT;
	}
	p->nonce = p->hdr->nonce;
	p->pid = -1; /* the first check learns it */
	alive = fab_peer_alive(p);
	if (alive <= 0) {
		fab_peer_close(p);
		return -ENOENT;
	}
	p->hdr->engine[sizeof(p->hdr->engine) - 1] = '\0';
	if (!strncmp(p->hdr->engine, "eng-", 4) && !strchr(p->hdr->engine, '/')) {
		snprintf(path, sizeof(path), "%s", p->hdr->engine);
		p->wake = map_file(path, sizeof(struct fab_wake), &wsize);
		p->wake_size = p->wake ? wsize : 0;
	}
	*out = p;
	return 0;
}

void fab_peer_close(struct fab_peer *p)
{
	if (!p)
		return;
	if (p->port >= 0) {
		uint64_t claim = p->claim;

		atomic_compare_exchange_strong(&port_at(p->base, p->port)->claim, &claim, 0);
	}
	if (p->wake)
		munmap(p->wake, p->wake_size);
	munmap(p->base, p->size);
	free(p);
}

bool fab_peer_alive_fast(const struct fab_peer *p)
{
	return atomic_load_explicit(&p->hdr->live, memory_order_acquire) != 0;
}

uint64_t fab_peer_nonce(const struct fab_peer *p)
{
	return p->nonce;
}

void fab_peer_forget(struct fab_peer *p)
{
	p->port = -1;
	fab_peer_close(p);
}

/*
 * Whether the QP's process still holds its QPN: the POSIX lock on the QPN's
 * byte, which the kernel drops when the process dies (or execs: the device
 * file is close-on-exec). F_GETLK names the holder by its pid in our pid
 * namespace (0 when it is not visible from here). The first check learns
 * that pid; later ones want the same holder. In the owner's own namespace
 * the holder must also be the pid the file names, so that the new QP of a
 * dead one's number (which holds the lock before it marks the old file)
 * is not taken for the old.
 */
int fab_peer_alive(struct fab_peer *p)
{
	struct fab_devfile *d = p->dev;
	pid_t holder = 0;
	bool held = false;
	int rc;

	if (!atomic_load_explicit(&p->hdr->live, memory_order_acquire))
		return 0;
	if (d->owned && p->qpn <= d->max_qp && d->owned[p->qpn]) {
		/* we hold that QPN: a lock does not conflict with its owner,
		 * so F_GETLK cannot tell; the live QP of it is ours */
		if (p->hdr->owner_pid != (int32_t)efasim_pid() || p->hdr->pidns != own_pidns())
			return -1;
		p->pid = efasim_pid();
		return 1;
	}
	rc = lock_at(d->fd, FAB_LOCK_BASE + (off_t)p->qpn, F_WRLCK, F_GETLK, &holder, &held);
	if (rc)
		return 1; /* cannot tell: assume alive */
	if (!held)
		return -1;
	if (p->pid < 0) {
		if (p->hdr->pidns && p->hdr->pidns == own_pidns() && holder != p->hdr->owner_pid)
			return -1;
		p->pid = holder;
	}
	return holder == p->pid ? 1 : -1;
}

uint32_t fab_peer_type(const struct fab_peer *p)
{
	return p->hdr->type;
}

uint32_t fab_peer_max_payload(const struct fab_peer *p)
{
	return p->hdr->max_payload;
}

struct fab_pkt *fab_peer_slot(struct fab_peer *p, const struct fab_qpfile *src, void **payload)
{
	struct fab_port *port;
	uint32_t head;
	int i;

	if (p->port < 0) {
		for (i = 0; i < FAB_PORTS; i++) {
			uint64_t zero = 0;

			port = port_at(p->base, i);
			if (atomic_load_explicit(&port->claim, memory_order_relaxed))
				continue;
			if (atomic_compare_exchange_strong(&port->claim, &zero, src->hdr->nonce)) {
				memcpy(port->gid, src->hdr->gid, FAB_GID_LEN);
				port->qpn = src->qpn;
				p->port = i;
				p->claim = src->hdr->nonce;
				p->tail = atomic_load_explicit(&port->tail, memory_order_acquire);
				break;
			}
		}
		if (p->port < 0) {
			atomic_store_explicit(&p->hdr->exhausted, 1, memory_order_release);
			return NULL;
		}
	}
	port = port_at(p->base, p->port);
	head = atomic_load_explicit(&port->head, memory_order_acquire);
	if (p->tail - head >= p->hdr->nslots)
		return NULL;
	*payload = slot_at(p->base, p->hdr, p->port, p->tail) + FAB_PKT_HDR;
	return (struct fab_pkt *)slot_at(p->base, p->hdr, p->port, p->tail);
}

void fab_peer_commit(struct fab_peer *p)
{
	struct fab_port *port = port_at(p->base, p->port);

	p->tail++;
	atomic_store_explicit(&port->tail, p->tail, memory_order_release);
	atomic_fetch_or_explicit(&p->hdr->pending, 1ull << p->port, memory_order_release);
	if (p->wake && atomic_load_explicit(&p->wake->sleeping, memory_order_acquire)) {
		atomic_fetch_add_explicit(&p->wake->seq, 1, memory_order_release);
		futex(&p->wake->seq, FUTEX_WAKE, INT_MAX, NULL);
	}
}

/* ------------------------------------------------------------ memory regions */

static struct fab_mr_rec *mr_slot(struct fab_mr_hdr *t, uint32_t key, int i)
{
	return (struct fab_mr_rec *)(t + 1) + ((key + (uint32_t)i) & (t->nslots - 1));
}

bool fab_mr_table_ready(void)
{
	return own_mrs != NULL;
}

int fab_mr_publish(uint64_t ctx, uint32_t pd, uint32_t key, uint32_t access, uint64_t iova,
		   uint64_t len, uint64_t addr)
{
	int i;

	if (!own_mrs || !ctx)
		return -ENODEV;
	for (i = 0; i < FAB_MR_WINDOW; i++) {
		struct fab_mr_rec *r = mr_slot(own_mrs, key, i);
		uint32_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed);

		if (r->ctx)
			continue;
		atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		__atomic_store_n(&r->key, key, __ATOMIC_RELAXED);
		__atomic_store_n(&r->pd, pd, __ATOMIC_RELAXED);
		__atomic_store_n(&r->access, access, __ATOMIC_RELAXED);
		__atomic_store_n(&r->iova, iova, __ATOMIC_RELAXED);
		__atomic_store_n(&r->len, len, __ATOMIC_RELAXED);
		__atomic_store_n(&r->addr, addr, __ATOMIC_RELAXED);
		__atomic_store_n(&r->ctx, ctx, __ATOMIC_RELAXED);
		atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
		return 0;
	}
	return -ENOSPC; /* read through packets */
}

void fab_mr_unpublish(uint64_t ctx, uint32_t key)
{
	int i;

	if (!own_mrs || !ctx)
		return;
	for (i = 0; i < FAB_MR_WINDOW; i++) {
		struct fab_mr_rec *r = mr_slot(own_mrs, key, i);
		uint32_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed);

		if (r->ctx != ctx || r->key != key)
			continue;
		atomic_store_explicit(&r->seq, seq + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		__atomic_store_n(&r->ctx, 0, __ATOMIC_RELAXED);
		atomic_store_explicit(&r->seq, seq + 2, memory_order_release);
		return;
	}
}

void fab_qp_publish_mrs(struct fab_qpfile *q, uint64_t ctx, uint32_t pd, bool reads)
{
	atomic_store_explicit(&q->hdr->mr_pd, pd, memory_order_relaxed);
	atomic_store_explicit(&q->hdr->mr_reads, reads ? 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&q->hdr->mr_ctx, ctx, memory_order_release);
}

uint32_t fab_peer_state(const struct fab_peer *p)
{
	return atomic_load_explicit(&p->hdr->state, memory_order_acquire);
}

uint32_t fab_peer_qkey(const struct fab_peer *p)
{
	return atomic_load_explicit(&p->hdr->qkey, memory_order_acquire);
}

/* The peer's MR table, if the process behind it is the one this process
 * reaches at the pid it sees it by (pid namespaces: the pid its lock
 * shows; 0 when it is not visible from here): checked once, as a first
 * guess only. What proves the owner is its token, read in the same
 * process_vm_readv as the bytes of every copy (dp_mem.c): a pid can be
 * reused, a process can exec. */
static struct fab_mr_hdr *peer_mrs(struct fab_peer *p)
{
	struct fab_mr_hdr *t;
	uint64_t token = 0;
	struct iovec l = { &token, sizeof(token) }, r;

	if (!p->wake || p->wake_size < FAB_MR_OFF + sizeof(*t) || p->verified < 0)
		return NULL;
	t = (struct fab_mr_hdr *)((uint8_t *)p->wake + FAB_MR_OFF);
	if (atomic_load_explicit(&t->magic, memory_order_acquire) != FAB_MR_MAGIC || !t->nslots ||
	    (t->nslots & (t->nslots - 1)) ||
	    p->wake_size < FAB_MR_OFF + sizeof(*t) + (size_t)t->nslots * sizeof(struct fab_mr_rec) ||
	    t->pid != p->hdr->owner_pid || p->pid <= 0) {
		p->verified = -1;
		if (p->pid == 0)
			efasim_trace("QP %u: its process is in a pid namespace this one cannot see; "
				     "RDMA reads of it and sends from it go through packets", p->qpn);
		return NULL;
	}
	if (p->verified)
		return t;
	r.iov_base = (void *)(uintptr_t)t->token_addr;
	r.iov_len = sizeof(token);
	p->verified = syscall(SYS_process_vm_readv, p->pid, &l, 1UL, &r, 1UL, 0UL) ==
				      (long)sizeof(token) && token == t->token ? 1 : -1;
	if (p->verified < 0)
		efasim_trace("QP %u: its process is out of reach; RDMA reads of it and sends from it "
			     "go through packets",
			     p->qpn);
	return p->verified > 0 ? t : NULL;
}

void fab_peer_lost(struct fab_peer *p)
{
	if (p->verified > 0)
		efasim_trace("QP %u: another process has its process's pid, or it exec()ed: its "
			     "memory is read no more", p->qpn);
	p->verified = -1;
}

int fab_peer_mr(struct fab_peer *p, uint32_t key, uint32_t access, uint64_t iova, uint64_t len,
		struct fab_rmem *out)
{
	uint64_t ctx = atomic_load_explicit(&p->hdr->mr_ctx, memory_order_acquire);
	uint32_t pd = atomic_load_explicit(&p->hdr->mr_pd, memory_order_relaxed);
	uint32_t reads = atomic_load_explicit(&p->hdr->mr_reads, memory_order_relaxed);
	struct fab_mr_hdr *t;
	int i;

	if (!ctx || (access && !reads))
		return -ENOENT;
	if (!(t = peer_mrs(p)))
		return -ENODEV;
	for (i = 0; i < FAB_MR_WINDOW; i++) {
		struct fab_mr_rec *r = mr_slot(t, key, i), c;
		uint32_t seq = atomic_load_explicit(&r->seq, memory_order_acquire);

		if (seq & 1)
			continue;
		c.ctx = __atomic_load_n(&r->ctx, __ATOMIC_RELAXED);
		c.key = __atomic_load_n(&r->key, __ATOMIC_RELAXED);
		c.pd = __atomic_load_n(&r->pd, __ATOMIC_RELAXED);
		c.access = __atomic_load_n(&r->access, __ATOMIC_RELAXED);
		c.iova = __atomic_load_n(&r->iova, __ATOMIC_RELAXED);
		c.len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
		c.addr = __atomic_load_n(&r->addr, __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&r->seq, memory_order_relaxed) != seq)
			continue;
		if (c.ctx != ctx || c.key != key)
			continue;
		/* the checks the owner's device makes; anything else is its to say */
		if (c.pd != pd || (c.access & access) != access || iova < c.iova ||
		    iova + len < iova || iova + len > c.iova + c.len)
			return -EACCES;
		out->pid = p->pid;
		out->addr = c.addr + (iova - c.iova);
		out->token_addr = t->token_addr;
		out->token = t->token;
		out->rec = r;
		out->seq = seq;
		return 0;
	}
	return -ENOENT;
}

bool fab_peer_mr_still(const struct fab_peer *p, const struct fab_rmem *m)
{
	struct fab_mr_rec *r = m->rec;

	atomic_thread_fence(memory_order_acquire);
	return fab_peer_alive_fast(p) && atomic_load_explicit(&r->seq, memory_order_relaxed) == m->seq;
}

/* ------------------------------------------------------------ wake-ups */

int fab_engine_init(void)
{
	char path[4200];
	int fd, rc;

	if (own_wake)
		return 0;
	rc = fab_dir_ready();
	if (rc)
		return rc;
	snprintf(own_engine, sizeof(own_engine), "eng-%016llx", (unsigned long long)random_u64());
	snprintf(path, sizeof(path), "%s", own_engine);
	fd = sys_open(path, O_RDWR | O_CREAT | O_EXCL);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)FAB_ENGINE_SIZE)) {
		rc = -errno;
		efasim_sys_close(fd);
		return rc;
	}
	own_wake = sys_mmap_shared(fd, FAB_ENGINE_SIZE);
	/* held while we live (the descriptor stays open): a file nobody locks
	 * is a departed engine's, and `efap2p sim` removes it */
	lock_at(fd, 0, F_WRLCK, F_SETLK, NULL, NULL);
	if (own_wake == MAP_FAILED) {
		own_wake = NULL;
		return -ENOMEM;
	}
	own_token = random_u64();
	own_mrs = (struct fab_mr_hdr *)((uint8_t *)own_wake + FAB_MR_OFF);
	own_mrs->nslots = FAB_MR_SLOTS;
	own_mrs->pid = (int32_t)getpid();
	own_mrs->token_addr = (uint64_t)(uintptr_t)&own_token;
	own_mrs->token = own_token;
	atomic_store_explicit(&own_mrs->magic, FAB_MR_MAGIC, memory_order_release);
	return 0;
}

uint32_t fab_engine_prepare(void)
{
	uint32_t seq;

	if (!own_wake)
		return 0;
	seq = atomic_load_explicit(&own_wake->seq, memory_order_acquire);
	atomic_store_explicit(&own_wake->sleeping, 1, memory_order_seq_cst);
	return seq;
}

/* Sleeps up to usec unless a sender bumped the count since prepare. */
void fab_engine_wait(uint32_t seq, long usec)
{
	struct timespec ts = { usec / 1000000, (usec % 1000000) * 1000 };

	if (!own_wake) {
		nanosleep(&ts, NULL);
		return;
	}
	futex(&own_wake->seq, FUTEX_WAIT, seq, &ts);
	atomic_store_explicit(&own_wake->sleeping, 0, memory_order_relaxed);
}

bool fab_qp_has_pending(const struct fab_qpfile *q)
{
	return atomic_load_explicit(&q->hdr->pending, memory_order_seq_cst) != 0;
}

void fab_engine_kick(void)
{
	if (!own_wake)
		return;
	atomic_fetch_add_explicit(&own_wake->seq, 1, memory_order_release);
	futex(&own_wake->seq, FUTEX_WAKE, INT_MAX, NULL);
}

void fab_engine_awake(void)
{
	if (own_wake)
		atomic_store_explicit(&own_wake->sleeping, 0, memory_order_relaxed);
}

/* The child of fork holds none of our locks and runs no engine. */
void fab_atfork_child(void)
{
	unsigned int i;

	for (i = 0; i < ndevfiles; i++)
		if (devfiles[i].owned)
			memset(devfiles[i].owned, 0, (size_t)devfiles[i].max_qp + 1);
	own_wake = NULL;
	own_mrs = NULL; /* the parent's table: the child publishes in its own */
	own_engine[0] = '\0';
}
