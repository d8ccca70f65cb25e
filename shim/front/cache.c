// SPDX-License-Identifier: MIT
/*
 * Answers kept in C memory: the warm paths read them without a lock and
 * without Go, and a forked child reads them where Go is out of reach.
 *
 * - devices: RDMA device names, each with its P2P_DMA answer and whether
 *   any dma-buf registration on it can be refused;
 * - exporters: dma-buf exporter names;
 * - pairs: (device, exporter) -> registration decision;
 * - peers: (device, PCI function) -> efadv_p2p_attr;
 * - fds: (st_dev, st_ino) of a descriptor known to be a dma-buf -> its
 *   exporter, so that a warm registration needs one fstat, not a read of
 *   /proc/self/fdinfo.
 *
 * - device pointers: struct ibv_device * -> device index, so that the warm
 *   efadv_query_device finds its answer with one hash of a pointer;
 *
 * Tables are fixed arrays, written once per entry under insert_lock (by
 * callers inside a guard) and published with a release store; readers take
 * no lock. When a table is
 * full, answers are simply not cached. The fd table is direct-mapped and
 * overwrites old entries, under a sequence counter per slot.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#define NAME_MAX_LEN IBV_SYSFS_NAME_MAX
#define MAX_DEVS 256
#define MAX_EXPS 64
#define PAIR_SLOTS 1024	/* power of two */
#define PEER_SLOTS 2048	/* power of two */
#define FD_SLOTS 256	/* power of two */

/*
 * insert_lock names its holder (guard.c, efap2p_lock): a fork from a signal
 * handler can tell whether its own thread holds the lock it interrupted
 * (the prepare handler must not wait for it) without changing the signal
 * mask around every insert. A signal handler never takes it: every entry
 * point answers a call that re-entered a guard without a lock
 * (efap2p_reentered). So a thread that finds itself holding it when it
 * comes to take it is one whose earlier call was abandoned by a siglongjmp
 * in the middle of an insert: it takes the lock over. Other threads wait
 * for a holder at most INSERT_WAIT_S (a holder is done in microseconds,
 * unless its call was abandoned), then insert nothing, and wait no more
 * for that holder: a full table's answers, computed on each call. Every
 * insert publishes its entry last (a count, a key, an even sequence
 * number), so one abandoned, or copied by a fork in the middle, leaves
 * nothing a reader sees.
 */
#define INSERT_WAIT_S 1
#define FORK_WAIT_S 2

static struct efap2p_lock insert_lock;
static __thread unsigned fork_took;	/* the level of this thread's fork that took it */

/* 0 when taken: the insert may go on. */
static int insert_lock_take(void)
{
	return efap2p_lock_take_within(&insert_lock, INSERT_WAIT_S);
}

static void insert_lock_drop(void)
{
	efap2p_lock_drop(&insert_lock);
}

/* ---- names: append-only arrays, published by their count ---- */

struct name {
	uint32_t hash;
	char s[NAME_MAX_LEN];
	_Atomic int caps;	/* devices: EFAP2P_UNKNOWN, _NO or _YES, for P2P_DMA */
	_Atomic int refusable;	/* devices: EFAP2P_UNKNOWN, _NO or _YES, a dma-buf may be refused */
	/* devices: the access flags the NIC's driver takes for an MR
	 * (EFAP2P_ACCESS_*), 0 until known */
	_Atomic uint32_t access;
	/* devices: the PCI function's key once read (key_state: 0 not
	 * read, -1 being written, 1 read, else the errno + 2) */
	_Atomic int key_state;
	uint64_t key;
};

struct names {
	_Atomic int n;
	int max;
	struct name *v;
};

static struct name dev_names[MAX_DEVS], exp_names[MAX_EXPS];
static struct names devs = { .max = MAX_DEVS, .v = dev_names };
static struct names exps = { .max = MAX_EXPS, .v = exp_names };

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int names_find(struct names *t, const char *s, uint32_t h)
{
	int n = atomic_load_explicit(&t->n, memory_order_acquire), i;

	for (i = 0; i < n; i++)
		if (t->v[i].hash == h && !strcmp(t->v[i].s, s))
			return i;
	return -1;
}

/* Under insert_lock: the index of s (of hash h and under NAME_MAX_LEN
 * bytes), added if new; -1 when t is full. */
static int names_add_locked(struct names *t, const char *s, uint32_t h)
{
	int n = atomic_load_explicit(&t->n, memory_order_relaxed), i = names_find(t, s, h);

	if (i < 0 && n < t->max) {
		t->v[n].hash = h;
		strcpy(t->v[n].s, s);
		atomic_store_explicit(&t->n, n + 1, memory_order_release);
		i = n;
	}
	return i;
}

/* The index of s, added if new; -1 when s is too long or t is full. */
static int names_index(struct names *t, const char *s)
{
	uint32_t h = hash_str(s);
	int i = names_find(t, s, h);

	if (i >= 0)
		return i;
	if (strlen(s) >= NAME_MAX_LEN)
		return -1;
	if (insert_lock_take())
		return -1;
	i = names_add_locked(t, s, h);
	insert_lock_drop();
	return i;
}

int efap2p_dev_index(const char *ibdev)
{
	return names_index(&devs, ibdev);
}

_Atomic int *efap2p_dev_caps(int dev)
{
	return &dev_names[dev].caps;
}

_Atomic int *efap2p_dev_refusable(int dev)
{
	return &dev_names[dev].refusable;
}

const char *efap2p_dev_name(int dev)
{
	return dev_names[dev].s;
}

_Atomic uint32_t *efap2p_dev_access(int dev)
{
	return &dev_names[dev].access;
}

/* device's key, by its name in an index of this boot (no sysfs read), else
 * from its sysfs link. */
static int find_key(struct ibv_device *device, uint64_t *k)
{
	const struct efap2p_index *ix = efap2p_precomp();

	if (ix && efap2p_precomp_this_boot() && !efap2p_index_nic_named(ix, device->name, k))
		return 0;
	return efap2p_nic_key(device, k);
}

/*
 * The key is published without the insert lock (no signal mask to change,
 * two system calls a device): the thread that claims the entry (0 to -1)
 * writes it; one that finds it being written, or loses the claim, answers
 * from what it read itself, which is the same.
 */
int efap2p_dev_key(int dev, struct ibv_device *device, uint64_t *key)
{
	struct name *n;
	int st, rc, unread = 0;
	uint64_t k = 0;

	if (dev < 0)	/* the table is full: found every time */
		return find_key(device, key);
	n = &dev_names[dev];
	st = atomic_load_explicit(&n->key_state, memory_order_acquire);
	if (st == 1) {
		*key = n->key;
		return 0;
	}
	if (st > 1)
		return st - 2;
	rc = find_key(device, &k);
	if (!st && atomic_compare_exchange_strong_explicit(&n->key_state, &unread, -1, memory_order_acquire,
							   memory_order_relaxed)) {
		n->key = k;
		atomic_store_explicit(&n->key_state, rc ? rc + 2 : 1, memory_order_release);
	}
	if (rc)
		return rc;
	*key = k;
	return 0;
}

/* ---- devices by their struct ibv_device: the warm paths' index ---- */

/*
 * Each slot keeps, beside the pointer and the device's entry, the first 16
 * bytes of its name and its P2P_DMA answer once known, so that the warm
 * efadv_query_device reads one slot (front.h: efap2p_dev_caps_of) and
 * nothing else.
 */
struct efap2p_dev_slot efap2p_dev_slots[EFAP2P_DEV_SLOTS];
static int dev_slots_used;

/* The name's first 16 bytes, NUL-padded as libibverbs' zeroed device
 * structs and dev_names hold them. */
static void name16(const char *name, uint64_t out[2])
{
	char b[16] = { 0 };
	size_t n = strnlen(name, sizeof(b));

	memcpy(b, name, n);
	memcpy(out, b, sizeof(b));
}

/* Is entry dev the device called name? */
static int same_name(int dev, const char *name)
{
	return !strcmp(dev_names[dev].s, name);
}

int efap2p_dev_lookup(const struct ibv_device *device)
{
	uintptr_t p = (uintptr_t)device;
	uint32_t i = efap2p_hash_ptr(p) & (EFAP2P_DEV_SLOTS - 1), probes;

	for (probes = 0; probes < EFAP2P_DEV_SLOTS; probes++, i = (i + 1) & (EFAP2P_DEV_SLOTS - 1)) {
		uintptr_t k = atomic_load_explicit(&efap2p_dev_slots[i].ptr, memory_order_acquire);

		if (k == p)
			return same_name(efap2p_dev_slots[i].dev, device->name) ? efap2p_dev_slots[i].dev : -1;
		if (!k)
			return -1;
	}
	return -1;
}

int efap2p_dev_caps_slow(const struct ibv_device *device)
{
	int dev = efap2p_dev_lookup(device);

	return dev < 0 ? EFAP2P_UNKNOWN : atomic_load_explicit(&dev_names[dev].caps, memory_order_acquire);
}

int efap2p_dev_of(const struct ibv_device *device)
{
	uintptr_t p = (uintptr_t)device;
	uint32_t i = efap2p_hash_ptr(p) & (EFAP2P_DEV_SLOTS - 1), h = hash_str(device->name);
	int dev = names_find(&devs, device->name, h);
	struct efap2p_dev_slot *s;

	if (dev >= 0 && efap2p_dev_lookup(device) == dev)
		return dev;
	if (dev < 0 && strlen(device->name) >= NAME_MAX_LEN)
		return -1;
	/* a new device's name and pointer under one lock */
	if (insert_lock_take())
		return dev;
	if (dev < 0)
		dev = names_add_locked(&devs, device->name, h);
	if (dev >= 0 && dev_slots_used < EFAP2P_DEV_SLOTS / 4 * 3) {
		while (atomic_load_explicit(&efap2p_dev_slots[i].ptr, memory_order_relaxed) &&
		       atomic_load_explicit(&efap2p_dev_slots[i].ptr, memory_order_relaxed) != p)
			i = (i + 1) & (EFAP2P_DEV_SLOTS - 1);
		/* a pointer seen before for another name (a device freed and
		 * its memory reused) keeps its slot: lookups by name answer */
		s = &efap2p_dev_slots[i];
		if (!atomic_load_explicit(&s->ptr, memory_order_relaxed)) {
			s->dev = dev;
			name16(device->name, s->name);
			s->long_name = strlen(device->name) >= sizeof(s->name);
			atomic_store_explicit(&s->caps,
					      atomic_load_explicit(&dev_names[dev].caps, memory_order_relaxed),
					      memory_order_relaxed);
			atomic_store_explicit(&s->ptr, p, memory_order_release);
			dev_slots_used++;
		}
	}
	insert_lock_drop();
	return dev;
}

int efap2p_dev_set_caps(const struct ibv_device *device, int dev, int caps)
{
	uintptr_t p = (uintptr_t)device;
	uint32_t i = efap2p_hash_ptr(p) & (EFAP2P_DEV_SLOTS - 1), probes;
	int want = EFAP2P_UNKNOWN;

	atomic_compare_exchange_strong(&dev_names[dev].caps, &want, caps);
	caps = atomic_load_explicit(&dev_names[dev].caps, memory_order_acquire);
	/* this pointer's slot gets the answer, for the warm path; another
	 * pointer of the device gets it on its first call */
	for (probes = 0; probes < EFAP2P_DEV_SLOTS; probes++, i = (i + 1) & (EFAP2P_DEV_SLOTS - 1)) {
		uintptr_t k = atomic_load_explicit(&efap2p_dev_slots[i].ptr, memory_order_acquire);

		if (!k)
			break;
		if (k == p && efap2p_dev_slots[i].dev == dev) {
			atomic_store_explicit(&efap2p_dev_slots[i].caps, caps, memory_order_release);
			break;
		}
	}
	return caps;
}

int efap2p_exp_index(const char *exp_name)
{
	return names_index(&exps, exp_name);
}

const char *efap2p_exp_name(int exp)
{
	return exp_names[exp].s;
}

/* ---- maps with 64-bit keys: open addressing, 0 is an empty slot ---- */

static uint32_t hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k;
}

/* The slot holding key, or -1. */
static int slot_find(_Atomic uint64_t *keys, uint32_t mask, uint64_t key)
{
	uint32_t i = hash_u64(key) & mask, probes;

	for (probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
		uint64_t k = atomic_load_explicit(&keys[i], memory_order_acquire);

		if (k == key)
			return (int)i;
		if (!k)
			return -1;
	}
	return -1;
}

/* Under insert_lock: the empty slot where key goes, or -1 past 3/4 full. */
static int slot_claim(_Atomic uint64_t *keys, uint32_t mask, int *used, uint64_t key)
{
	uint32_t i = hash_u64(key) & mask;

	if ((uint32_t)*used >= (mask + 1) / 4 * 3)
		return -1;
	(*used)++;
	while (atomic_load_explicit(&keys[i], memory_order_relaxed))
		i = (i + 1) & mask;
	return (int)i;
}

static _Atomic uint64_t pair_keys[PAIR_SLOTS], peer_keys[PEER_SLOTS];
static struct efap2p_pair pairs[PAIR_SLOTS];
static struct efadv_p2p_attr peers[PEER_SLOTS];
static int pairs_used, peers_used;

static uint64_t pair_key(int dev, int exp)
{
	return (uint64_t)(dev + 1) << 32 | (uint32_t)(exp + 1);
}

struct efap2p_pair *efap2p_pair_find(int dev, int exp)
{
	int i = slot_find(pair_keys, PAIR_SLOTS - 1, pair_key(dev, exp));

	return i < 0 ? NULL : &pairs[i];
}

/* The cached pair for (p->dev, p->exp), a copy of p if new; NULL when the
 * table is full. */
struct efap2p_pair *efap2p_pair_add(const struct efap2p_pair *p)
{
	uint64_t key = pair_key(p->dev, p->exp);
	int i;

	if (insert_lock_take())
		return NULL;
	i = slot_find(pair_keys, PAIR_SLOTS - 1, key);
	if (i < 0) {
		i = slot_claim(pair_keys, PAIR_SLOTS - 1, &pairs_used, key);
		if (i >= 0) {
			pairs[i].dev = p->dev;
			pairs[i].exp = p->exp;
			pairs[i].core = p->core;
			pairs[i].index_attr = p->index_attr;
			pairs[i].index_summary = p->index_summary;
			atomic_store_explicit(&pair_keys[i], key, memory_order_release);
		}
	}
	insert_lock_drop();
	return i < 0 ? NULL : &pairs[i];
}

/* peer: domain << 16 | bus << 8 | devfn */
static uint64_t peer_key(int dev, uint64_t peer)
{
	return (uint64_t)(dev + 1) << 48 | peer;
}

const struct efadv_p2p_attr *efap2p_peer_find(int dev, uint64_t peer)
{
	int i = slot_find(peer_keys, PEER_SLOTS - 1, peer_key(dev, peer));

	return i < 0 ? NULL : &peers[i];
}

void efap2p_peer_add(int dev, uint64_t peer, const struct efadv_p2p_attr *attr)
{
	uint64_t key = peer_key(dev, peer);
	int i;

	if (insert_lock_take())
		return;
	if (slot_find(peer_keys, PEER_SLOTS - 1, key) < 0 &&
	    (i = slot_claim(peer_keys, PEER_SLOTS - 1, &peers_used, key)) >= 0) {
		peers[i] = *attr;
		atomic_store_explicit(&peer_keys[i], key, memory_order_release);
	}
	insert_lock_drop();
}

/* ---- dma-buf descriptors: direct-mapped, a sequence counter a slot ---- */

struct fd_slot {
	_Atomic uint32_t seq;	/* odd while written */
	_Atomic uint32_t exp;	/* exporter index + 1; 0: empty */
	_Atomic uint64_t dev, ino;
};

static struct fd_slot fds[FD_SLOTS];

static struct fd_slot *fd_slot(dev_t st_dev, ino_t st_ino)
{
	return &fds[hash_u64((uint64_t)st_ino * 31 + (uint64_t)st_dev) & (FD_SLOTS - 1)];
}

/* The exporter index of the dma-buf (st_dev, st_ino), or -1. */
int efap2p_fd_find(dev_t st_dev, ino_t st_ino)
{
	struct fd_slot *s = fd_slot(st_dev, st_ino);
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire), exp;
	uint64_t dev, ino;

	if (seq & 1)
		return -1;
	exp = atomic_load_explicit(&s->exp, memory_order_relaxed);
	dev = atomic_load_explicit(&s->dev, memory_order_relaxed);
	ino = atomic_load_explicit(&s->ino, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
		return -1;
	if (!exp || dev != (uint64_t)st_dev || ino != (uint64_t)st_ino)
		return -1;
	return (int)exp - 1;
}

void efap2p_fd_add(dev_t st_dev, ino_t st_ino, int exp)
{
	struct fd_slot *s = fd_slot(st_dev, st_ino);
	uint32_t seq;

	if (insert_lock_take())
		return;
	/* even: a write abandoned by a siglongjmp left it odd */
	seq = (atomic_load_explicit(&s->seq, memory_order_relaxed) + 1) & ~1u;
	atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->exp, (uint32_t)exp + 1, memory_order_relaxed);
	atomic_store_explicit(&s->dev, (uint64_t)st_dev, memory_order_relaxed);
	atomic_store_explicit(&s->ino, (uint64_t)st_ino, memory_order_relaxed);
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
	insert_lock_drop();
}

/* ---- fork: the child gets a consistent copy ---- */

void efap2p_cache_atfork_prepare(unsigned level)
{
	/* held by this thread: an insert that the fork's signal handler
	 * interrupted (the child gets the lock held by this thread, which
	 * finishes and drops it), or an outer fork of this thread (which
	 * drops it) */
	if (efap2p_lock_mine(&insert_lock))
		return;
	/* a holder that never drops it (its call abandoned): the child gets
	 * what its inserts published */
	if (!efap2p_lock_take_within(&insert_lock, FORK_WAIT_S))
		fork_took = level;
}

void efap2p_cache_atfork_parent(unsigned level)
{
	if (fork_took == level) {
		fork_took = 0;
		insert_lock_drop();
	}
}

void efap2p_cache_atfork_child(unsigned level)
{
	int keep = fork_took != level && efap2p_lock_mine(&insert_lock);

	if (fork_took == level)
		fork_took = 0;
	efap2p_lock_atfork_child(&insert_lock, keep);
}
