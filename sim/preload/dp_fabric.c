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
 * QP of that number. Everything is plain shared memory with C11 atomics.
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
#include <time.h>
#include <unistd.h>

#define FAB_MAGIC_DEV 0x45464456u /* "EFDV" */
#define FAB_MAGIC_QP 0x45465150u  /* "EFQP" */
#define FAB_VERSION 1
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
	uint64_t nonce;
	uint64_t claim; /* our nonce on the claimed port */
	int port;
	uint32_t qpn, tail;
	uint8_t gid[FAB_GID_LEN];
};

static struct fab_devfile devfiles[FAB_MAX_DEVS];
static unsigned int ndevfiles;
static struct fab_wake *own_wake;
static char own_engine[48];
static char fabric_dir[4096];

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

static int path_of(char *buf, size_t len, const char *kind, const uint8_t gid[FAB_GID_LEN],
		   long qpn)
{
	char hex[33];
	int n;

	gid_hex(gid, hex);
	if (qpn >= 0)
		n = snprintf(buf, len, "%s/%s-%s-%ld", fab_dir(), kind, hex, qpn);
	else
		n = snprintf(buf, len, "%s/%s-%s", fab_dir(), kind, hex);
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

static int sys_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0600);
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
	int fd;

	for (i = 0; i < ndevfiles; i++)
		if (!memcmp(devfiles[i].gid, gid, FAB_GID_LEN))
			goto found;
	if (ndevfiles == FAB_MAX_DEVS || path_of(path, sizeof(path), "dev", gid, -1))
		return NULL;
	fd = sys_open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0));
	if (fd < 0)
		return NULL;
	if (create) {
		/* first writer wins; the header only tells senders the size */
		hdr[0] = FAB_MAGIC_DEV;
		hdr[1] = max_qp;
		if (lseek(fd, 0, SEEK_END) == 0 && pwrite(fd, hdr, sizeof(hdr), 0) != sizeof(hdr)) {
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

static int lock_at(int fd, off_t off, short type, int cmd, pid_t *holder)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = off, .l_len = 1 };

	if (syscall(SYS_fcntl, fd, cmd, &fl) < 0)
		return -errno;
	if (holder)
		*holder = fl.l_type == F_UNLCK ? 0 : fl.l_pid;
	return 0;
}

static int lock_byte(int fd, uint32_t qpn, short type, int cmd, pid_t *holder)
{
	return lock_at(fd, FAB_LOCK_BASE + (off_t)qpn, type, cmd, holder);
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
	rc = mkdir_p(fab_dir());
	if (rc)
		return rc;
	d = devfile(gid, max_qp, true);
	if (!d || !d->owned)
		return -ENOMEM;
	for (qpn = 1; qpn <= d->max_qp; qpn++) {
		if (d->owned[qpn])
			continue;
		if (lock_byte(d->fd, qpn, F_WRLCK, F_SETLK, NULL) == 0)
			break;
	}
	if (qpn > d->max_qp)
		return -ENOMEM; /* the device's QPs are all in use */
	q = calloc(1, sizeof(*q));
	if (!q)
		goto err_unlock;
	if (path_of(q->path, sizeof(q->path), "qp", gid, qpn))
		goto err_free;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", q->path, (int)getpid());
	fd = sys_open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC);
	size = qp_file_size(slot);
	if (fd < 0 || ftruncate(fd, (off_t)size))
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
	q->hdr->nonce = random_u64();
	q->hdr->nports = FAB_PORTS;
	q->hdr->nslots = FAB_SLOTS;
	q->hdr->slot_size = slot;
	q->hdr->max_payload = slot - FAB_PKT_HDR;
	memcpy(q->hdr->gid, gid, FAB_GID_LEN);
	memcpy(q->hdr->engine, own_engine, sizeof(q->hdr->engine));
	atomic_store_explicit(&q->hdr->live, 1, memory_order_release);
	if (rename(tmp, q->path))
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
	unlink(tmp);
	free(q);
	lock_byte(d->fd, qpn, F_UNLCK, F_SETLK, NULL);
	efasim_warn("cannot create a QP file in %s: %s", fab_dir(), efasim_errname(-rc));
	return rc;
err_free:
	free(q);
err_unlock:
	lock_byte(d->fd, qpn, F_UNLCK, F_SETLK, NULL);
	return -ENOMEM;
}

void fab_qp_destroy(struct fab_qpfile *q)
{
	if (!q)
		return;
	atomic_store_explicit(&q->hdr->live, 0, memory_order_release);
	/* still ours while the byte is locked: nobody renamed over it */
	unlink(q->path);
	munmap(q->base, q->size);
	if (q->dev->owned && q->qpn <= q->dev->max_qp)
		q->dev->owned[q->qpn] = 0;
	lock_byte(q->dev->fd, q->qpn, F_UNLCK, F_SETLK, NULL);
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
	int fd = sys_open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) || (size_t)st.st_size < min) {
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
	if (path_of(path, sizeof(path), "qp", gid, qpn))
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
	alive = fab_peer_alive(p);
	if (alive <= 0) {
		fab_peer_close(p);
		return -ENOENT;
	}
	p->hdr->engine[sizeof(p->hdr->engine) - 1] = '\0';
	if (p->hdr->engine[0] && !strchr(p->hdr->engine, '/')) {
		snprintf(path, sizeof(path), "%s/%s", fab_dir(), p->hdr->engine);
		p->wake = map_file(path, sizeof(struct fab_wake), &wsize);
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
		munmap(p->wake, 4096);
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

int fab_peer_alive(struct fab_peer *p)
{
	pid_t holder = 0;

	if (!atomic_load_explicit(&p->hdr->live, memory_order_acquire))
		return 0;
	if (p->hdr->owner_pid == (int32_t)getpid())
		/* our own QP: the lock does not conflict with ourselves */
		return p->dev->owned && p->qpn <= p->dev->max_qp && p->dev->owned[p->qpn] ? 1 : 0;
	if (lock_byte(p->dev->fd, p->qpn, F_WRLCK, F_GETLK, &holder))
		return 1; /* cannot tell: assume alive */
	if (holder == 0)
		return -1;
	return holder == p->hdr->owner_pid ? 1 : -1;
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

/* ------------------------------------------------------------ wake-ups */

int fab_engine_init(void)
{
	char path[4200];
	int fd, rc;

	if (own_wake)
		return 0;
	rc = mkdir_p(fab_dir());
	if (rc)
		return rc;
	snprintf(own_engine, sizeof(own_engine), "eng-%016llx", (unsigned long long)random_u64());
	snprintf(path, sizeof(path), "%s/%s", fab_dir(), own_engine);
	fd = sys_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 4096)) {
		rc = -errno;
		efasim_sys_close(fd);
		return rc;
	}
	own_wake = sys_mmap_shared(fd, 4096);
	/* held while we live (the descriptor stays open): a file nobody locks
	 * is a departed engine's, and `efap2p sim` removes it */
	lock_at(fd, 0, F_WRLCK, F_SETLK, NULL);
	if (own_wake == MAP_FAILED) {
		own_wake = NULL;
		return -ENOMEM;
	}
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
	own_engine[0] = '\0';
}
