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
 * an error completion, never a crash.
 */
#include "engine.h"

#include <errno.h>
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
}

void dp_mr_del(struct dp_ctx *ctx, struct dp_mr *mr)
{
	struct dp_mr **p;

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
		n = out ? process_vm_writev(getpid(), &l, 1, &r, 1, 0)
			: process_vm_readv(getpid(), &l, 1, &r, 1, 0);
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
	uint64_t off;
	uint8_t *mem;
	int rc;

	if (!len)
		return 0;
	rc = dp_mr_range(mr, iova, len, &off);
	if (rc)
		return rc;
	if (!mr->on_dmabuf)
		return user_copy(out, mr->start + off, local, len);
	if (!mr->map)
		return ST_INVALID_LKEY;
	mem = (uint8_t *)mr->map + mr->map_skew + off;
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
