// SPDX-License-Identifier: MIT
/*
 * The precomputed answers: the machine's topology file and its index,
 * found, checked and read once, so that the front answers the P2P_DMA bit,
 * the dma-buf refusal and the pairwise query without loading the Go core.
 *
 * Which file: $EFAP2P_TOPOLOGY, else the boot-time /run/efap2p/topology.json,
 * else the operator's /etc/efap2p/topology.json (both below
 * $EFAP2P_TOPOLOGY_ROOT when set; secure_getenv ignores both variables in a
 * secure-execution process). A file is used when it is a regular file owned
 * by root or this user and writable by no one else, and its index
 * (FILE.idx, the same rules) is well-formed, bound to the file as it is
 * now (its inode, size, modification and status-change times), and
 * describes this machine: the kernel release it was decided for,
 * the boot it was written in (a boot-time file), or else each PCI function
 * it covers, present with the same IDs -- unless export checked them in
 * this boot, on this sysfs tree (an operator's file's index records both:
 * answer/index.go), which then answers as fast as a boot-time file. A file that fails is said once and
 * the next is tried; a file whose index is missing or stale goes to the Go
 * core, which reads the JSON (p2p/machine.go applies the same rules, with
 * the same words).
 *
 * Every read is of a regular file, opened without blocking, bounded (an
 * index past 16 MiB by what one for this machine's PCI functions can
 * hold). The head of the index (its records) is read at once; its strings (reasons,
 * log lines: most of the file) only when one is first needed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "front.h"

#define BOOT_FILE "/run/efap2p/topology.json"
#define OPERATOR_FILE "/etc/efap2p/topology.json"
#define INDEX_SUFFIX ".idx"
#define CANDIDATES 2

static struct {
	struct efap2p_index ix;
	uint8_t *head;
	char path[PATH_MAX];		/* the JSON file answered from */
	struct stat idx_st;		/* the index as first read */
	const char *core_files[CANDIDATES + 1];
	char names[CANDIDATES][PATH_MAX];
	/* the index was written in this boot (a boot-time one) or checked
	 * in it on this tree: its NICs' names are this boot's */
	int this_boot;
} pc;

enum { PC_NONE, PC_READY };
static _Atomic int pc_state;
static _Atomic int strs_state;	/* 0 not read, 1 attached, -1 cannot be */
/* names its holder (guard.c): a thread whose call was abandoned by a
 * siglongjmp while it read the file takes it over and reads it again;
 * others wait for such a holder a bounded time, then answer without the
 * file (the core computes) */
static struct efap2p_lock pc_lock;
#define PC_WAIT_S 2
static const struct efap2p_index *pc_index;

/*
 * Buffers come from mmap, not malloc: the file is read with the signals
 * open, and a handler that jumps out of the call (siglongjmp) must not
 * leave the program's heap half updated. The length is kept in front.
 */
#define BUF_HEAD 16

static void *buf_alloc(size_t len)
{
	uint8_t *p = mmap(NULL, len + BUF_HEAD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, &len, sizeof(len));
	return p + BUF_HEAD;
}

static void buf_free(void *buf)
{
	uint8_t *p = buf;
	size_t len;

	if (!p)
		return;
	memcpy(&len, p - BUF_HEAD, sizeof(len));
	munmap(p - BUF_HEAD, len + BUF_HEAD);
}

/* Opens path for reading without blocking; 0 and fd, st, or an errno
 * (EINVAL for anything but a regular file: a FIFO, a device, a folder). */
static int open_regular(const char *path, int *fd, struct stat *st)
{
	int f;

	do
		f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	while (f < 0 && errno == EINTR);
	if (f < 0)
		return errno;
	if (fstat(f, st)) {
		int err = errno;

		close(f);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		close(f);
		return EINVAL;
	}
	*fd = f;
	return 0;
}

/* Reads len bytes at off; 0 or an errno (EIO for a short file). */
static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		got += (size_t)n;
	}
	return 0;
}

/* Root or this user owns it, and nobody else may write it; else why. */
static const char *untrusted(const struct stat *st, char *why, size_t len)
{
	uid_t euid = geteuid();

	if (st->st_uid != 0 && st->st_uid != euid) {
		snprintf(why, len, "owned by uid %u, neither root nor this user (uid %u)",
			 (unsigned)st->st_uid, (unsigned)euid);
		return why;
	}
	if (st->st_mode & 022) {
		snprintf(why, len, "writable by %s (mode %04o)",
			 (st->st_mode & 022) == 022 ? "group and others" :
			 (st->st_mode & 020) ? "its group" : "others",
			 (unsigned)(st->st_mode & 07777));
		return why;
	}
	return NULL;
}

static uint64_t ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/*
 * Is the file the one st was taken of, unchanged? Its inode, size,
 * modification time and status-change time: the last is set by the kernel
 * on every change (and on a touch that sets the others back), and no one
 * can set it back but by the clock.
 */
static int same_file(const struct stat *st, uint64_t ino, uint64_t size, uint64_t mtime,
		     uint64_t ctime)
{
	return (uint64_t)st->st_ino == ino && (uint64_t)st->st_size == size &&
	       ns(&st->st_mtim) == mtime && ns(&st->st_ctim) == ctime;
}

/* A small attribute file's text, NUL-terminated, newline dropped. */
static int read_attr(const char *path, char *buf, size_t len)
{
	struct stat st;
	ssize_t n;
	int fd, rc = open_regular(path, &fd, &st);

	if (rc)
		return rc;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	rc = n < 0 ? errno : 0;
	close(fd);
	if (rc)
		return rc;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

static void key_name(uint64_t key, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)(key >> 16), (unsigned)(key >> 8) & 0xff,
		 (unsigned)(key >> 3) & 0x1f, (unsigned)key & 7);
}

/* A function's vendor or device ID from sysfs. */
static int read_id(const char *dev_dir, const char *attr, uint16_t *out)
{
	char path[PATH_MAX], text[32], *end;
	unsigned long v;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dev_dir, attr);
	rc = read_attr(path, text, sizeof(text));
	if (rc)
		return rc;
	errno = 0;
	v = strtoul(text, &end, 16);
	if (errno || end == text || *end || v > 0xffff)
		return EIO;
	*out = (uint16_t)v;
	return 0;
}

/*
 * Is every function the index covers here, with its IDs? 0, ESRCH with
 * why for a function absent or different, another errno when sysfs cannot
 * be read (then the core decides).
 */
static int functions_match(const struct efap2p_index *ix, char *why, size_t len)
{
	const char *sysfs = efap2p_config()->sysfs;
	char dir[PATH_MAX], name[32];
	uint32_t i;

	for (i = 0; i < ix->count[EFAP2P_SEC_FUNCTIONS]; i++) {
		struct efap2p_index_function f;
		uint16_t v, d;
		int rc;

		efap2p_index_function(ix, i, &f);
		key_name(f.key, name, sizeof(name));
		snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s", sysfs, name);
		rc = read_id(dir, "vendor", &v);
		if (!rc)
			rc = read_id(dir, "device", &d);
		if (rc == ENOENT) {
			snprintf(why, len, "%s is %04x:%04x there, absent here", name, f.vendor, f.device);
			return ESRCH;
		}
		if (rc)
			return rc;
		if (v != f.vendor || d != f.device) {
			snprintf(why, len, "%s is %04x:%04x there, %04x:%04x here", name, f.vendor,
				 f.device, v, d);
			return ESRCH;
		}
	}
	return 0;
}

static int read_boot_id(char *buf, size_t len)
{
	return read_attr("/proc/sys/kernel/random/boot_id", buf, len);
}

/* How many PCI functions the machine has (entries of bus/pci/devices), 0
 * when it cannot be read. */
static uint64_t count_functions(void)
{
	char dir[PATH_MAX], ents[4096];
	uint64_t n = 0;
	ssize_t got;
	int fd;

	/* getdents64, not opendir: no malloc (see buf_alloc) */
	snprintf(dir, sizeof(dir), "%s/bus/pci/devices", efap2p_config()->sysfs);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((got = getdents64(fd, ents, sizeof(ents))) > 0) {
		ssize_t off = 0;

		while (off < got) {
			const struct dirent64 *e = (const struct dirent64 *)(ents + off);

			n += e->d_name[0] != '.';
			off += e->d_reclen;
		}
	}
	close(fd);
	return n;
}

/* The sysfs tree's identity as a checked index records it (answer.TreeID):
 * FNV-1a of the device and inode of its bus/pci/devices; 0 if unknown. */
static uint64_t tree_id(void)
{
	char dir[PATH_MAX];
	uint8_t b[16];
	uint64_t h = 14695981039346656037ull, v[2];
	struct stat st;
	int i;

	snprintf(dir, sizeof(dir), "%s/bus/pci/devices", efap2p_config()->sysfs);
	if (stat(dir, &st))
		return 0;
	v[0] = (uint64_t)st.st_dev;
	v[1] = (uint64_t)st.st_ino;
	for (i = 0; i < 16; i++)
		b[i] = (uint8_t)(v[i / 8] >> (8 * (i % 8)));
	for (i = 0; i < 16; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Reads and parses the head of the index at path; 0, or why not. */
static int read_index(const char *path, const struct stat *json, char *why, size_t len)
{
	uint8_t first[EFAP2P_INDEX_HEADER + 16 * EFAP2P_SEC_KINDS];
	char reason[128];
	struct stat st;
	size_t head_len, first_len;
	int fd, rc = open_regular(path, &fd, &st);

	if (rc) {
		snprintf(why, len, "%s: %s", path, rc == EINVAL ? "not a regular file" : strerror(rc));
		return rc;
	}
	if (untrusted(&st, reason, sizeof(reason))) {
		snprintf(why, len, "%s is not trusted: %s", path, reason);
		close(fd);
		return EPERM;
	}
	rc = EINVAL;
	snprintf(why, len, "%s is malformed", path);
	if (st.st_size < EFAP2P_INDEX_HEADER ||
	    ((uint64_t)st.st_size > EFAP2P_INDEX_MIN_LIMIT &&
	     (uint64_t)st.st_size > efap2p_index_limit(count_functions())))
		goto out;
	first_len = (size_t)st.st_size < sizeof(first) ? (size_t)st.st_size : sizeof(first);
	if ((rc = pread_full(fd, first, first_len, 0)))
		goto out;
	rc = EINVAL;
	head_len = efap2p_index_head_len(first, first_len, (uint64_t)st.st_size);
	if (!head_len)
		goto out;
	pc.head = buf_alloc(head_len);
	if (!pc.head) {
		rc = ENOMEM;
		goto out;
	}
	if ((rc = pread_full(fd, pc.head, head_len, 0)) ||
	    (rc = efap2p_index_parse(&pc.ix, pc.head, head_len)) ||
	    (rc = pc.ix.file_size == (uint64_t)st.st_size ? 0 : EINVAL))
		goto out;
	if (!same_file(json, pc.ix.json_ino, pc.ix.json_size, pc.ix.json_mtime_ns, pc.ix.json_ctime_ns)) {
		snprintf(why, len, "%s is stale: the file changed after 'efap2p export' wrote it", path);
		rc = ESTALE;
		goto out;
	}
	pc.idx_st = st;
out:
	close(fd);
	if (rc) {
		buf_free(pc.head);
		pc.head = NULL;
	}
	return rc;
}

/* Does the index describe this machine? 0, ESRCH with the message to say,
 * or another errno when it cannot be told (the core decides). */
static int describes_machine(const char *file, char *msg, size_t len)
{
	int boot_bound = pc.ix.flags & EFAP2P_INDEX_BOOT_BOUND;
	char boot[64], why[PATH_MAX];
	struct utsname u;
	int rc;

	/* checked on this machine in this boot, on this tree: its functions
	 * were read then (a device hot-plugged since is not seen) */
	pc.this_boot = (pc.ix.flags & EFAP2P_INDEX_CHECKED) && pc.ix.tree &&
		       !read_boot_id(boot, sizeof(boot)) && !strcmp(boot, pc.ix.boot_id) &&
		       pc.ix.tree == tree_id();
	/* the functions first, as the Go reader: that another machine wrote
	 * the file says more than that another kernel did */
	if (!boot_bound && !pc.this_boot) {
		rc = functions_match(&pc.ix, why, sizeof(why));
		if (rc == ESRCH)
			snprintf(msg, len, "%s describes another machine: %s", file, why);
		if (rc)
			return rc;
	}
	if (pc.ix.kernel[0]) {
		const char *rel = efap2p_config()->kernel;

		/* EFAP2P_KERNEL is the Go core's to parse ("6.1" is 6.1.0):
		 * a file that differs from it in writing goes to the core */
		if (rel && strcmp(rel, pc.ix.kernel))
			return EINVAL;
		if (!rel && (uname(&u) || strcmp(u.release, pc.ix.kernel))) {
			snprintf(msg, len, "%s was written for kernel %s, this is %s", file,
				 pc.ix.kernel, u.release);
			return ESRCH;
		}
	}
	if (boot_bound) {
		if ((rc = read_boot_id(boot, sizeof(boot))))
			return rc;
		if (strcmp(boot, pc.ix.boot_id)) {
			snprintf(msg, len,
				 "%s was written during boot %s, this is boot %s (a boot-time file is rewritten at every boot)",
				 file, pc.ix.boot_id, boot);
			return ESRCH;
		}
		pc.this_boot = 1;
	}
	return 0;
}

/* Tries the candidate file; 1 when it answers, 0 to try the next, -1 to
 * leave it (and the rest) to the core. */
static int try_candidate(const char *file, int explicit)
{
	char why[PATH_MAX + 256], idx[PATH_MAX];
	struct stat st;
	int rc;

	if (stat(file, &st)) {
		if (errno != ENOENT || explicit)
			efap2p_log(EFAP2P_LOG_ERROR, "open %s: %s; using the other sources instead",
				   file, strerror(errno));
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		efap2p_log(EFAP2P_LOG_ERROR, "open %s: not a regular file; using the other sources instead",
			   file);
		return 0;
	}
	if (untrusted(&st, why, sizeof(why))) {
		efap2p_log(EFAP2P_LOG_ERROR, "%s is not trusted: %s; using the other sources instead",
			   file, why);
		return 0;
	}
	if ((size_t)snprintf(idx, sizeof(idx), "%s%s", file, INDEX_SUFFIX) >= sizeof(idx))
		return -1;
	why[0] = 0;
	rc = read_index(idx, &st, why, sizeof(why));
	if (rc) {
		efap2p_log(EFAP2P_LOG_INFO, "%s; the oracle reads %s", why, file);
		return -1;
	}
	rc = describes_machine(file, why, sizeof(why));
	if (rc == ESRCH) {
		efap2p_log(EFAP2P_LOG_ERROR, "%s; using the other sources instead", why);
		buf_free(pc.head);
		pc.head = NULL;
		return 0;
	}
	if (rc) {
		buf_free(pc.head);
		pc.head = NULL;
		return -1;
	}
	snprintf(pc.path, sizeof(pc.path), "%s", file);
	return 1;
}

/* Finds, checks and reads the file (under pc_lock). Done again from the
 * start by a thread whose call was abandoned in it (what it allocated
 * then is left). */
static void load(void)
{
	const struct efap2p_config *cfg = efap2p_config();
	const char *cand[CANDIDATES];
	int i, n = 0, explicit = cfg->topology != NULL, nfiles = 0;

	pc_index = NULL;
	memset(&pc.ix, 0, sizeof(pc.ix));
	pc.head = NULL;
	pc.this_boot = 0;

	if (explicit) {
		cand[n++] = cfg->topology;
	} else {
		snprintf(pc.names[0], PATH_MAX, "%s%s", cfg->topology_root, BOOT_FILE);
		snprintf(pc.names[1], PATH_MAX, "%s%s", cfg->topology_root, OPERATOR_FILE);
		cand[n++] = pc.names[0];
		cand[n++] = pc.names[1];
	}
	for (i = 0; i < n; i++) {
		int r = try_candidate(cand[i], explicit);

		if (r > 0) {
			pc.core_files[nfiles++] = cand[i];
			pc_index = &pc.ix;
			efap2p_log(EFAP2P_LOG_DEBUG, "answers from %s", cand[i]);
			break;
		}
		if (r < 0) {
			while (i < n)
				pc.core_files[nfiles++] = cand[i++];
			break;
		}
	}
	pc.core_files[nfiles] = NULL;
}

static void ensure_loaded(void)
{
	struct efap2p_guard g;

	if (atomic_load_explicit(&pc_state, memory_order_acquire) == PC_READY)
		return;
	efap2p_guard_enter(&g);
	if (!efap2p_lock_take_within(&pc_lock, PC_WAIT_S)) {
		if (atomic_load_explicit(&pc_state, memory_order_relaxed) != PC_READY) {
			load();
			atomic_store_explicit(&pc_state, PC_READY, memory_order_release);
		}
		efap2p_lock_drop(&pc_lock);
	}
	efap2p_guard_leave(&g);
}

/* pc is read only once loaded (a load can be left waiting on an
 * abandoned holder) */
static int loaded(void)
{
	ensure_loaded();
	return atomic_load_explicit(&pc_state, memory_order_acquire) == PC_READY;
}

const struct efap2p_index *efap2p_precomp(void)
{
	return loaded() ? pc_index : NULL;
}

const char *const *efap2p_precomp_core_files(void)
{
	static const char *const none[] = { NULL };

	return loaded() ? pc.core_files : none;
}

int efap2p_precomp_this_boot(void)
{
	return efap2p_precomp() && pc.this_boot;
}

const char *efap2p_precomp_file(void)
{
	return efap2p_precomp() ? pc.path : NULL;
}

/* Reads len bytes at off of the index in use, which must be the one read
 * at first (same device, inode, size and times), into a new buffer. */
static int read_region(uint64_t off, size_t len, char **out)
{
	char idx[PATH_MAX];
	struct stat st;
	char *buf;
	int fd, rc;

	if ((size_t)snprintf(idx, sizeof(idx), "%s%s", pc.path, INDEX_SUFFIX) >= sizeof(idx))
		return ENAMETOOLONG;
	if ((rc = open_regular(idx, &fd, &st)))
		return rc;
	rc = ESTALE;
	if (st.st_dev != pc.idx_st.st_dev ||
	    !same_file(&st, pc.idx_st.st_ino, (uint64_t)pc.idx_st.st_size, ns(&pc.idx_st.st_mtim),
		       ns(&pc.idx_st.st_ctim)))
		goto out;
	buf = buf_alloc(len ? len : 1);
	rc = ENOMEM;
	if (!buf)
		goto out;
	rc = pread_full(fd, buf, len, (off_t)off);
	if (rc)
		buf_free(buf);
	else
		*out = buf;
out:
	close(fd);
	return rc;
}

/* Loads a part of the index once: state 0 not read, 1 attached, -1
 * cannot be. */
static int load_part(_Atomic int *state, int (*load)(void), const char *what)
{
	struct efap2p_guard g;
	int st = atomic_load_explicit(state, memory_order_acquire);

	if (st)
		return st > 0 ? 0 : EIO;
	if (!efap2p_precomp())
		return ENOENT;
	efap2p_guard_enter(&g);
	if (efap2p_lock_take_within(&pc_lock, PC_WAIT_S)) {
		efap2p_guard_leave(&g);
		return EIO;
	}
	st = atomic_load_explicit(state, memory_order_relaxed);
	if (!st) {
		int rc = load();

		if (rc)
			efap2p_log(EFAP2P_LOG_INFO, "%s%s: %s cannot be read (%s)", pc.path,
				   INDEX_SUFFIX, what, strerror(rc));
		st = rc ? -1 : 1;
		atomic_store_explicit(state, st, memory_order_release);
	}
	efap2p_lock_drop(&pc_lock);
	efap2p_guard_leave(&g);
	return st > 0 ? 0 : EIO;
}

static int load_strings(void)
{
	char *strs = NULL;
	int rc = read_region(pc.ix.strs_off, pc.ix.strs_len, &strs);

	if (!rc && (rc = efap2p_index_attach(&pc.ix, strs, pc.ix.strs_len)))
		buf_free(strs);
	return rc;
}

static int load_records(void)
{
	uint64_t off = pc.ix.strs_off, end = 0;
	char *buf = NULL;
	int kind, rc;

	for (kind = EFAP2P_SEC_FUNCTIONS; kind <= EFAP2P_SEC_PEERS; kind++)
		if (pc.ix.present[kind] && !pc.ix.rec[kind] && pc.ix.sec_off[kind] < off)
			off = pc.ix.sec_off[kind];
	end = pc.ix.strs_off;
	if (off >= end)
		return 0;
	rc = read_region(off, (size_t)(end - off), &buf);
	if (!rc && (rc = efap2p_index_attach_records(&pc.ix, (const uint8_t *)buf, off,
						     (size_t)(end - off))))
		buf_free(buf);
	return rc ? rc : efap2p_index_complete(&pc.ix) ? 0 : EINVAL;
}

static _Atomic int records_state;

int efap2p_precomp_strings(void)
{
	return load_part(&strs_state, load_strings, "reasons");
}

int efap2p_precomp_records(void)
{
	return load_part(&records_state, load_records, "its dma-buf and peer records");
}

int efap2p_nic_key(struct ibv_device *device, uint64_t *key)
{
	char link[PATH_MAX], target[PATH_MAX];
	const char *base;
	int64_t k;
	ssize_t n;

	if ((size_t)snprintf(link, sizeof(link), "%s/device", device->ibdev_path) >= sizeof(link))
		return ENAMETOOLONG;
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return errno;
	target[n] = 0;
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	k = efap2p_parse_pci(base, 0);
	if (k < 0)
		return ENODEV;
	*key = (uint64_t)k;
	return 0;
}

/* In the child of fork(): only this thread exists. */
void efap2p_precomp_atfork_child(void)
{
	efap2p_lock_atfork_child(&pc_lock, efap2p_lock_mine(&pc_lock));
}
