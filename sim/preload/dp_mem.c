// SPDX-License-Identifier: MIT
/*
 * The device's tables and its memory accesses. The driver (obj_verbs.c)
 * adds a memory region when it is registered and an address handle when it
 * is created, and removes them before they are freed; the device finds
 * them by key and by number, as the hardware's translation and AH tables
 * do, without knowing the uverbs handles behind them.
 *
 * User memory is read and written with process_vm_readv/writev on this
 * process, as DMA would: a buffer unmapped behind the device's back gives
 * an error completion, never a crash. An RDMA read copies from the
 * responder process's memory the same way (the MRs it published, fabric.h),
 * so that the responder need not run, and a pulled send from the sender's.
 *
 * What a peer may read is what the device would: a registered MR of a live
 * QP's process, checked when the bytes are copied. Every copy from another
 * process reads that process's token in the same process_vm_readv as the
 * bytes (one system call reads one address space: the pid named the owner
 * for the whole copy, not a process that took the pid since, nor the
 * program the owner exec()ed); the caller checks the MR's record before
 * and after. A copy that fails those checks wipes what it wrote.
 */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define HAVE_VALGRIND 1
#endif
#endif

static atomic_int vm_broken; /* process_vm_* refused (seccomp): copy directly */
static atomic_int peer_broken; /* reading other processes refused (ptrace rules) */
static int direct_reads = -1;  /* EFASIM_DIRECT_READ=0: every read takes packets */
static uint64_t tags;

/* ------------------------------------------------------------ published MRs */

static void mr_publish(const struct dp_ctx *ctx, struct dp_mr *mr)
{
	uint64_t addr;

	mr->published = !dp_mr_where(mr, mr->iova, 0, &addr) &&
			!fab_mr_publish(ctx->tag, mr->pd, mr->key, mr->access, mr->iova, mr->length,
					addr);
}

bool dp_mr_published(const struct dp_ctx *ctx, const struct dp_mr *mr)
{
	return ctx->published == efasim_pid() && mr->published;
}

bool dp_mem_publish(struct dp_ctx *ctx)
{
	unsigned int b;
	struct dp_mr *mr;

	if (ctx->published == efasim_pid())
		return true;
	if (!fab_mr_table_ready())
		return false;
	if (!ctx->tag)
		ctx->tag = ++tags;
	ctx->published = efasim_pid();
	for (b = 0; b < DP_MR_BUCKETS; b++)
		for (mr = ctx->mrs[b]; mr; mr = mr->hnext)
			mr_publish(ctx, mr);
	return true;
}

/* ------------------------------------------------------------ tables */

static unsigned int mr_bucket(uint32_t key)
{
	return (key & EFA_LKEY_MASK) % DP_MR_BUCKETS;
}

void dp_mr_add(struct dp_ctx *ctx, struct dp_mr *mr)
{
	unsigned int b = mr_bucket(mr->key);

	mr->hnext = ctx->mrs[b];
	ctx->mrs[b] = mr;
	if (ctx->published == efasim_pid())
		mr_publish(ctx, mr);
}

void dp_mr_del(struct dp_ctx *ctx, struct dp_mr *mr)
{
	struct dp_mr **p;

	/* first: no peer reads it once the deregistration returns */
	if (ctx->published == efasim_pid())
		fab_mr_unpublish(ctx->tag, mr->key);
	mr->published = 0;
	for (p = &ctx->mrs[mr_bucket(mr->key)]; *p; p = &(*p)->hnext) {
		if (*p == mr) {
			*p = mr->hnext;
			mr->hnext = NULL;
			return;
		}
	}
}

struct dp_mr *dp_mr_lookup(const struct dp_ctx *ctx, uint32_t key, uint32_t pd)
{
	struct dp_mr *mr;

	for (mr = ctx->mrs[mr_bucket(key)]; mr; mr = mr->hnext)
		if ((mr->key & EFA_LKEY_MASK) == (key & EFA_LKEY_MASK) && mr->pd == pd)
			return mr;
	return NULL;
}

void dp_ah_add(struct dp_ctx *ctx, struct dp_ah *ah)
{
	ah->next = ctx->ahs;
	ctx->ahs = ah;
}

void dp_ah_del(struct dp_ctx *ctx, struct dp_ah *ah)
{
	struct dp_ah **p;

	for (p = &ctx->ahs; *p; p = &(*p)->next) {
		if (*p == ah) {
			*p = ah->next;
			ah->next = NULL;
			return;
		}
	}
}

uint16_t dp_ah_number(const struct dp_ctx *ctx, uint32_t pd, const uint8_t gid[FAB_GID_LEN])
{
	const struct dp_ah *ah;

	for (ah = ctx->ahs; ah; ah = ah->next)
		if (ah->pd == pd && !memcmp(ah->gid, gid, FAB_GID_LEN))
			return ah->ahn;
	return EFA_AH_UNKNOWN;
}

const struct dp_ah *dp_ah_lookup(const struct dp_ctx *ctx, uint16_t ahn, uint32_t pd)
{
	const struct dp_ah *ah;

	for (ah = ctx->ahs; ah; ah = ah->next)
		if (ah->ahn == ahn && ah->pd == pd)
			return ah;
	return NULL;
}

bool dp_ah_number_used(const struct dp_ctx *ctx, uint16_t ahn)
{
	const struct dp_ah *ah;

	for (ah = ctx->ahs; ah; ah = ah->next)
		if (ah->ahn == ahn)
			return true;
	return false;
}

/* ------------------------------------------------------------ memory */

static int user_copy(bool out, uint64_t addr, void *local, size_t len)
{
	struct iovec l = { local, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!atomic_load_explicit(&vm_broken, memory_order_relaxed)) {
		n = out ? process_vm_writev(efasim_pid(), &l, 1, &r, 1, 0)
			: process_vm_readv(efasim_pid(), &l, 1, &r, 1, 0);
		if (n == (ssize_t)len) {
#ifdef HAVE_VALGRIND
			if (out && RUNNING_ON_VALGRIND)
				VALGRIND_MAKE_MEM_DEFINED((void *)(uintptr_t)addr, len);
#endif
			return 0;
		}
		if (n >= 0 || (errno != ENOSYS && errno != EPERM && errno != EACCES))
			return ST_INVALID_LKEY;
		atomic_store(&vm_broken, 1);
	}
	if (efasim_user_mapped(addr, len))
		return ST_INVALID_LKEY;
	if (out)
		memcpy((void *)(uintptr_t)addr, local, len);
	else
		memcpy(local, (const void *)(uintptr_t)addr, len);
	return 0;
}

int dp_mr_range(const struct dp_mr *mr, uint64_t iova, size_t len, uint64_t *off)
{
	if (iova < mr->iova || iova + len < iova || iova + len > mr->iova + mr->length)
		return ST_INVALID_LKEY;
	*off = iova - mr->iova;
	return 0;
}

/* Copies len bytes between the MR's [iova, iova+len) and local: into the
 * MR when out. */
static int mr_copy(bool out, const struct dp_mr *mr, uint64_t iova, void *local, size_t len)
{
	uint64_t addr;
	uint8_t *mem;
	int rc;

	if (!len)
		return 0;
	rc = dp_mr_where(mr, iova, len, &addr);
	if (rc)
		return rc;
	if (!mr->on_dmabuf)
		return user_copy(out, addr, local, len);
	mem = (uint8_t *)(uintptr_t)addr;
	if (out)
		memcpy(mem, local, len);
	else
		memcpy(local, mem, len);
	return 0;
}

int dp_mem_read(const struct dp_mr *mr, uint64_t iova, void *dst, size_t len)
{
	return mr_copy(false, mr, iova, dst, len);
}

int dp_mem_write(const struct dp_mr *mr, uint64_t iova, const void *src, size_t len)
{
	return mr_copy(true, mr, iova, (void *)src, len);
}

bool dp_mem_direct(void)
{
	if (direct_reads < 0) { /* lock held */
		const char *v = getenv("EFASIM_DIRECT_READ");

		direct_reads = !(v && !strcmp(v, "0"));
	}
	return direct_reads && !atomic_load_explicit(&peer_broken, memory_order_relaxed);
}

int dp_mr_where(const struct dp_mr *mr, uint64_t iova, size_t len, uint64_t *addr)
{
	uint64_t off;

	if (dp_mr_range(mr, iova, len, &off))
		return ST_INVALID_LKEY;
	if (!mr->on_dmabuf) {
		*addr = mr->start + off;
		return 0;
	}
	if (!mr->map)
		return ST_INVALID_LKEY;
	*addr = (uint64_t)(uintptr_t)((uint8_t *)mr->map + mr->map_skew + off);
	return 0;
}

/* Writes zeros over this process's buffers l[0..n) (a failed copy's). */
void dp_mem_wipe_iov(const struct iovec *l, int n)
{
	static const uint8_t zero[4096];
	int i;

	for (i = 0; i < n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)l[i].iov_base, left = l[i].iov_len;

		while (left) {
			size_t k = left < sizeof(zero) ? (size_t)left : sizeof(zero);

			if (user_copy(true, a, (void *)zero, k))
				break; /* unmapped: nothing of it to wipe */
			a += k;
			left -= k;
		}
	}
}

void dp_mem_wipe(const struct dp_mr *mr, uint64_t iova, size_t len)
{
	uint64_t where;
	struct iovec l;

	if (dp_mr_where(mr, iova, len, &where))
		return;
	l.iov_base = (void *)(uintptr_t)where;
	l.iov_len = len;
	if (mr->on_dmabuf)
		memset(l.iov_base, 0, len);
	else
		dp_mem_wipe_iov(&l, 1);
}

/* One process_vm_readv of the owner's bytes (remote, len in all) into
 * local, the owner's token last: 0 or a DP_PEER_ error (what was written
 * wiped). */
static int peer_copy(const struct fab_rmem *rm, const struct iovec *local, int nlocal,
		     const struct iovec *remote, int nremote, size_t len)
{
	struct iovec l[DP_PULL_IOV + 1], r[DP_PULL_IOV + 1];
	uint64_t seen = 0;
	ssize_t n;
	int i;

	if (nlocal > DP_PULL_IOV || nremote > DP_PULL_IOV || !dp_mem_direct() || rm->pid <= 0)
		return DP_PEER_UNREACHABLE;
	for (i = 0; i < nlocal; i++)
		l[i] = local[i];
	for (i = 0; i < nremote; i++)
		r[i] = remote[i];
	/* the owner's token last, read in the same call: the pid named the
	 * owner for the whole copy, not another process that took it since,
	 * nor the program it exec()ed */
	l[nlocal] = (struct iovec){ &seen, sizeof(seen) };
	r[nremote] = (struct iovec){ (void *)(uintptr_t)rm->token_addr, sizeof(seen) };
	n = process_vm_readv(rm->pid, l, (unsigned long)nlocal + 1, r, (unsigned long)nremote + 1, 0);
	if (n == (ssize_t)(len + sizeof(seen)) && seen == rm->token) {
#ifdef HAVE_VALGRIND
		if (RUNNING_ON_VALGRIND)
			for (i = 0; i < nlocal; i++)
				VALGRIND_MAKE_MEM_DEFINED(l[i].iov_base, l[i].iov_len);
#endif
		return 0;
	}
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		atomic_store(&peer_broken, 1);
		return DP_PEER_UNREACHABLE;
	}
	if (n < 0 && errno == ESRCH)
		return DP_PEER_NOT_OWNER; /* nothing was written */
	if (n > 0)
		dp_mem_wipe_iov(local, nlocal);
	/* the bytes were there but the token was not, or had another value:
	 * not the owner's memory (the owner's token is mapped for as long as
	 * it runs that program); short of the bytes, a buffer failed */
	return n >= (ssize_t)len ? DP_PEER_NOT_OWNER : DP_PEER_FAULT;
}

int dp_mem_pull(const struct fab_rmem *rm, const struct iovec *local, int nlocal,
		const struct iovec *remote, int nremote, size_t len)
{
#ifdef EFASIM_BENCH_FLOOR
	/* the benchmark's floor (make bench): a send's first buffer (the
	 * header libfabric puts there) is copied, the rest is not */
	struct iovec l[DP_PULL_IOV];
	int i;

	if (nremote > 1 && nlocal <= DP_PULL_IOV) {
		size_t keep = remote[0].iov_len;

		for (i = 0; i < nlocal && keep; i++) {
			l[i] = local[i];
			if (l[i].iov_len > keep)
				l[i].iov_len = keep;
			keep -= l[i].iov_len;
		}
		return peer_copy(rm, l, i, remote, 1, remote[0].iov_len);
	}
#endif
	return peer_copy(rm, local, nlocal, remote, nremote, len);
}

int dp_mem_read_peer(const struct dp_mr *mr, uint64_t iova, const struct fab_rmem *rm, size_t len)
{
	struct iovec l, r = { (void *)(uintptr_t)rm->addr, len };
	uint64_t where;

	if (!dp_mem_direct() || dp_mr_where(mr, iova, len, &where))
		return DP_PEER_UNREACHABLE;
	l.iov_base = (void *)(uintptr_t)where;
	l.iov_len = len;
	return peer_copy(rm, &l, 1, &r, 1, len);
}
