/* SPDX-License-Identifier: MIT */
/*
 * libefap2p's C front: what its files share. Nothing here is exported; the
 * version script (efap2p.map) names the only public symbols.
 */
#ifndef EFAP2P_FRONT_H
#define EFAP2P_FRONT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/efadv_p2p.h>
#include <infiniband/verbs.h>

#include "efap2p_core.h"
#include "index.h"

/* Linux's kernel-internal ENOTSUPP, which NVIDIA's exporter returns. */
#define EFAP2P_ENOTSUPP 524
/* efadv_device_attr.device_caps ends here: inlen must reach it. */
#define EFAP2P_CAPS_END (offsetof(struct efadv_device_attr, device_caps) + sizeof(uint32_t))

/* guard.c: slow paths run with cancellation disabled, marked in their
 * thread, their log lines written once they are left. */
struct efap2p_guard {
	int cancel;
	struct efap2p_guard *outer;
	/* log lines written inside the guard, written out on leaving it (a
	 * write to a full pipe must not block with the signals blocked) */
	size_t npending;
	char pending[2048];
};

void efap2p_guard_enter(struct efap2p_guard *g);
void efap2p_guard_leave(struct efap2p_guard *g);
/* Inside a guard of this thread: a signal handler called into the library
 * from a slow path. The entry points then answer without a lock. A guard
 * of a call abandoned by a siglongjmp is told apart by where the caller's
 * frame lies (guard.c), and dropped: the macro passes the frame of the
 * function it is written in, which must be one whose callees make the
 * guards of the call. */
int efap2p_reentered_at(const void *frame);
#define efap2p_reentered() efap2p_reentered_at(__builtin_frame_address(0))
/* A guard of this thread is marked (live or abandoned). */
int efap2p_in_guard(void);
/* Blocks the asynchronous signals (the synchronous ones stay open). */
void efap2p_signals_block(sigset_t *old);
void efap2p_signals_restore(const sigset_t *old);
/* Keeps a log line for the innermost guard of this thread; 0 when no
 * guard is active (the caller writes it itself). */
int efap2p_guard_defer(const char *line, size_t len);
/* A loader section: calls into the dynamic loader after the constructors,
 * one at a time, the asynchronous signals blocked (old: the mask before);
 * fork() waits for one in flight in another thread. Sections nest in a
 * thread. */
void efap2p_loader_enter(sigset_t *old);
void efap2p_loader_leave(const sigset_t *old);
/* The fork handlers: level is the fork's nesting in its thread (1, or 2
 * and more for a fork from a signal handler while the thread's own fork
 * ran its handlers or the system call). */
void efap2p_loader_atfork_prepare(unsigned level);
void efap2p_loader_atfork_parent(unsigned level);
void efap2p_loader_atfork_child(unsigned level);

/* A lock whose word names the thread holding it (0: free), so that a
 * thread can tell it holds it (a fork from a signal handler, the next call
 * after an abandoned one) in the same atomic step that took it; a futex
 * for the waiters. Not recursive. */
struct efap2p_lock {
	_Atomic uint32_t word;
	_Atomic uint32_t stuck;	/* a holder a bounded wait ran out on */
};

uint32_t efap2p_thread_mark(void);
void efap2p_lock_take(struct efap2p_lock *l);
/* 0, or ETIMEDOUT past until (CLOCK_MONOTONIC). */
int efap2p_lock_take_until(struct efap2p_lock *l, const struct timespec *until);
/* 0 when taken at once, else EBUSY. */
int efap2p_lock_try(struct efap2p_lock *l);
/* The holder's mark, 0 when free. */
uint32_t efap2p_lock_holder(struct efap2p_lock *l);
/* For locks no signal handler takes, held for a bounded time: 0 when
 * taken, or held by this thread already (a call of it abandoned by a
 * siglongjmp while it held it: the caller takes it over); ETIMEDOUT after
 * waiting wait_s for another holder, or at once for a holder such a wait
 * ran out on before (one whose call was abandoned). */
int efap2p_lock_take_within(struct efap2p_lock *l, int wait_s);
void efap2p_lock_drop(struct efap2p_lock *l);
int efap2p_lock_mine(struct efap2p_lock *l);
/* In the child of fork(): held by its only thread (keep), else free. */
void efap2p_lock_atfork_child(struct efap2p_lock *l, int keep);

/* config.c: the environment (EFAP2P_*, SYSFS_PATH, read with
 * secure_getenv), and the log. */
enum {
	EFAP2P_MODE_ENFORCE = 0,
	EFAP2P_MODE_ADVISE = 1,
	EFAP2P_MODE_OFF = 2,
};

struct efap2p_config {
	int mode;
	int log_level;		/* EFAP2P_LOG_* of efap2p_core.h */
	const char *topology;	/* EFAP2P_TOPOLOGY, NULL when unset */
	const char *topology_root; /* EFAP2P_TOPOLOGY_ROOT, "" when unset */
	const char *core;	/* EFAP2P_CORE, NULL when unset */
	const char *sysfs;	/* the sysfs root: $SYSFS_PATH or /sys */
	const char *kernel;	/* EFAP2P_KERNEL, NULL when unset */
	const char *kernel_config; /* EFAP2P_KERNEL_CONFIG, NULL when unset */
	int secure;		/* AT_SECURE: the variables above are all unset */
};

const struct efap2p_config *efap2p_config(void);
void efap2p_config_atfork_child(void);
void efap2p_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* real.c: the functions the interposed ones stand in front of. */
typedef int (*efap2p_query_device_fn)(struct ibv_context *, struct efadv_device_attr *,
				      uint32_t);
typedef struct ibv_mr *(*efap2p_reg_dmabuf_mr_fn)(struct ibv_pd *, uint64_t, size_t, uint64_t,
						   int, int);
efap2p_query_device_fn efap2p_real_query_device(void);
efap2p_reg_dmabuf_mr_fn efap2p_real_reg_dmabuf_mr(void);

/* core.c: the Go core, loaded on first need. Each call, made inside the
 * caller's guard g with the asynchronous signals blocked for its length,
 * returns 0 or an errno: ECHILD in a child forked after the core was
 * started (Go is never entered there), ELIBACC when the core cannot be
 * loaded or may not be (host.c), else the core's answer. */
int efap2p_core_nic(const struct efap2p_guard *g, const char *ibdev, struct efap2p_core_nic *out);
int efap2p_core_dmabuf(const struct efap2p_guard *g, const char *ibdev, const char *exp_name,
		       struct efap2p_core_dmabuf *out);
int efap2p_core_peer(const struct efap2p_guard *g, const char *ibdev, uint32_t domain,
		     uint32_t bus, uint32_t devfn, struct efadv_p2p_attr *out);
int efap2p_core_refusable(const struct efap2p_guard *g, const char *ibdev, int *out);
void efap2p_core_atfork_child(void);

/* cache.c: answers kept in C memory, readable without a lock and without
 * Go (so in a forked child too). Lookups take no lock; inserts take one
 * mutex, never held across a call into Go or the real functions. */
/* A cached yes/no answer. */
enum {
	EFAP2P_UNKNOWN = 0,
	EFAP2P_NO = 1,
	EFAP2P_YES = 2,
};

/* A (NIC, exporter) pair's registration decision. */
struct efap2p_pair {
	int dev, exp;			/* efap2p_dev_index, efap2p_exp_index */
	struct efap2p_core_dmabuf core;	/* what the oracle said */
	/* From the topology file's index: the best candidate's attr record
	 * and the summary's offset, whose strings are read on first need
	 * (core.best.reason and core.summary are then not set); NULL when
	 * the core answered. */
	const uint8_t *index_attr;
	uint32_t index_summary;
	_Atomic int logged;		/* the refusal line was written */
	/* The kernel refused a registration: errno << 32 | access flags,
	 * 0 for none. A later call asking for at least these flags gets the
	 * same answer without the kernel. */
	_Atomic uint64_t kernel_refusal;
};

int efap2p_dev_index(const char *ibdev);
/* The index of device, without a lock; -1 when not known yet. */
int efap2p_dev_lookup(const struct ibv_device *device);

/* The device pointers the warm paths know (cache.c), an open-addressed
 * table: the pointer, its entry, the first 16 bytes of its name (to tell a
 * pointer freed and reused by another device) and its P2P_DMA answer. */
#define EFAP2P_DEV_SLOTS 1024	/* power of two */
struct efap2p_dev_slot {
	_Atomic uintptr_t ptr;	/* 0: empty */
	int dev;
	int long_name;		/* 16 bytes or more: compared whole */
	uint64_t name[2];
	_Atomic int caps;	/* EFAP2P_UNKNOWN, _NO or _YES */
};
extern struct efap2p_dev_slot efap2p_dev_slots[EFAP2P_DEV_SLOTS];

static inline uint32_t efap2p_hash_ptr(uintptr_t p)
{
	uint64_t k = (uint64_t)p >> 4;

	k ^= k >> 29;
	k *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(k >> 32);
}

int efap2p_dev_caps_slow(const struct ibv_device *device);

/* device's slot when it holds device under a name of under 16 bytes, else
 * NULL (then the callers ask the whole table). Probed inline as
 * efap2p_dev_of places it, so that a device whose pointer's first slot was
 * taken by another's costs a slot or two more, not a call: the table is
 * never more than 3/4 full, and an empty slot ends the probe. */
static inline const struct efap2p_dev_slot *efap2p_dev_slot_of(const struct ibv_device *device)
{
	uintptr_t p = (uintptr_t)device, k;
	uint32_t i = efap2p_hash_ptr(p), n;
	const struct efap2p_dev_slot *s;
	uint64_t n0, n1;

	for (n = 0;; n++, i++) {
		s = &efap2p_dev_slots[i & (EFAP2P_DEV_SLOTS - 1)];
		k = atomic_load_explicit(&s->ptr, memory_order_acquire);
		if (k == p)
			break;
		if (!k || n == EFAP2P_DEV_SLOTS)
			return NULL;
	}
	if (s->long_name)
		return NULL;
	memcpy(&n0, device->name, 8);
	memcpy(&n1, device->name + 8, 8);
	return n0 == s->name[0] && n1 == s->name[1] ? s : NULL;
}

/* The cached P2P_DMA answer of device, without a lock (and mostly without
 * a call): EFAP2P_UNKNOWN when not known yet. The warm efadv_query_device. */
static inline int efap2p_dev_caps_of(const struct ibv_device *device)
{
	const struct efap2p_dev_slot *s = efap2p_dev_slot_of(device);

	return s ? atomic_load_explicit(&s->caps, memory_order_acquire) : efap2p_dev_caps_slow(device);
}

/* efap2p_dev_lookup, the first slot read inline. */
static inline int efap2p_dev_find(const struct ibv_device *device)
{
	const struct efap2p_dev_slot *s = efap2p_dev_slot_of(device);

	return s ? s->dev : efap2p_dev_lookup(device);
}
/* Records the P2P_DMA answer of entry dev (the first one stays) and in
 * device's slot; returns the answer kept. */
int efap2p_dev_set_caps(const struct ibv_device *device, int dev, int caps);
/* The index of device, added if new (inside a guard); -1 when full. */
int efap2p_dev_of(const struct ibv_device *device);
_Atomic int *efap2p_dev_caps(int dev);
_Atomic uint32_t *efap2p_dev_access(int dev);
_Atomic int *efap2p_dev_refusable(int dev);
const char *efap2p_dev_name(int dev);
int efap2p_exp_index(const char *exp_name);
const char *efap2p_exp_name(int exp);
struct efap2p_pair *efap2p_pair_find(int dev, int exp);
struct efap2p_pair *efap2p_pair_add(const struct efap2p_pair *p);
const struct efadv_p2p_attr *efap2p_peer_find(int dev, uint64_t peer);
void efap2p_peer_add(int dev, uint64_t peer, const struct efadv_p2p_attr *attr);
int efap2p_fd_find(dev_t st_dev, ino_t st_ino);
void efap2p_fd_add(dev_t st_dev, ino_t st_ino, int exp);
void efap2p_cache_atfork_prepare(unsigned level);
void efap2p_cache_atfork_parent(unsigned level);
void efap2p_cache_atfork_child(unsigned level);

/* dmabuf.c: a descriptor's dma-buf exporter, through libc. */
struct efap2p_dmabuf_id {
	int exp;		/* exporter index (efap2p_exp_index) */
	uint64_t size;		/* the buffer's size, 0 if unknown */
};

int efap2p_dmabuf_identify(int fd, struct efap2p_dmabuf_id *id);
struct efap2p_pair *efap2p_pair_get(const struct efap2p_guard *g, struct ibv_device *device,
				    int dev, int exp, struct efap2p_pair *tmp, int *err);
/* The pair's summary and best attr, with their strings. */
const char *efap2p_pair_summary(const struct efap2p_pair *p);
void efap2p_pair_best(const struct efap2p_pair *p, struct efadv_p2p_attr *out);
/* The key of the NIC of device (entry dev, or -1 when the table is full:
 * then not cached), from its sysfs link, cached; 0 or an errno. */
int efap2p_dev_key(int dev, struct ibv_device *device, uint64_t *key);

/* precomp.c: the topology file's index, found, checked and read once. */
const struct efap2p_index *efap2p_precomp(void);	/* NULL: none answers */
const char *efap2p_precomp_file(void);			/* the file it belongs to */
/* 1 when the index was written in this boot, or checked in it on this
 * sysfs tree: its NICs' names are this boot's. */
int efap2p_precomp_this_boot(void);
const char *const *efap2p_precomp_core_files(void);	/* what the core reads */
int efap2p_precomp_strings(void);	/* 0 once the index's strings are read */
int efap2p_precomp_records(void);	/* 0 once its dma-buf and peer records are */
int efap2p_nic_key(struct ibv_device *device, uint64_t *key);
void efap2p_precomp_atfork_child(void);

/* host.c: may a Go runtime start in this process? 1 and why when not.
 * caller is the signal mask of the thread asking, as the program set it. */
#define EFAP2P_GO_THREADS 8	/* threads a starting Go runtime may need */
int efap2p_host_refuses_go(const sigset_t *caller, char *why, size_t len);

/* util.c: "DDDD:BB:DD.F" (a domain of 4 to 8 hex digits; "BB:DD.F" too
 * with allow_short) to domain << 16 | bus << 8 | devfn; -1 if malformed. */
int64_t efap2p_parse_pci(const char *s, int allow_short);

#endif /* EFAP2P_FRONT_H */
