// SPDX-License-Identifier: MIT
/*
 * The objects of a uverbs file: its handles, as the kernel's idr hands them
 * out (lowest free first, one space for every type), each with a type whose
 * operations release it; and the file's device memory.
 *
 * Device memory: the descriptor of an emulated uverbs file is a memfd.
 * Rings and doorbells are ranges of it ("regions"); the mmap key of a
 * region is its offset, as rdma_user_mmap_get_offset makes one. libefa
 * maps them with mmap(cmd_fd, key) and gets the same pages the engine maps
 * for itself: the memory the device reads and writes. Page 0 holds the
 * allocation cursor, shared with a fork child.
 */
#include "objects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

const struct efasim_obj_type efasim_pending_type = { "pending", ~0u, NULL };

/* ---------------------------------------------------------------- idr */

int efasim_obj_alloc(struct efasim_uverbs *uv, const struct efasim_obj_type *type,
		     uint32_t *handle)
{
	struct efasim_obj *objs;
	uint32_t i, n;

	for (i = 0; i < uv->nobjs; i++)
		if (!uv->objs[i].type)
			goto found;
	n = uv->nobjs ? uv->nobjs * 2 : 8;
	objs = realloc(uv->objs, n * sizeof(*objs));
	if (!objs)
		return -ENOMEM;
	memset(objs + uv->nobjs, 0, (n - uv->nobjs) * sizeof(*objs));
	uv->objs = objs;
	i = uv->nobjs;
	uv->nobjs = n;
found:
	memset(&uv->objs[i], 0, sizeof(uv->objs[i]));
	uv->objs[i].type = type;
	*handle = i;
	return 0;
}

struct efasim_obj *efasim_obj_lookup(struct efasim_uverbs *uv, int64_t handle,
				     const struct efasim_obj_type *type, int *err)
{
	struct efasim_obj *o;

	if (handle < 0) {
		*err = EINVAL;
		return NULL;
	}
	if ((uint64_t)handle >= uv->nobjs || !(o = &uv->objs[handle])->type ||
	    o->type == &efasim_pending_type) {
		*err = ENOENT;
		return NULL;
	}
	if (o->type != type) {
		*err = EINVAL;
		return NULL;
	}
	return o;
}

void efasim_obj_destroy(struct efasim_uverbs *uv, uint32_t handle)
{
	struct efasim_obj *o;

	if (handle >= uv->nobjs)
		return;
	o = &uv->objs[handle];
	if (o->type && o->type->release)
		o->type->release(uv, o);
	memset(o, 0, sizeof(*o));
}

void efasim_obj_put(struct efasim_uverbs *uv, uint32_t handle)
{
	if (handle < uv->nobjs && uv->objs[handle].usecnt)
		uv->objs[handle].usecnt--;
}

void efasim_uverbs_release(struct efasim_uverbs *uv)
{
	unsigned int rank, next;
	uint32_t i;

	/* The kernel destroys what a closed file still holds, users first:
	 * QPs, AHs, CQs, then MRs. */
	for (rank = 0; rank != ~0u; rank = next) {
		next = ~0u;
		for (i = 0; i < uv->nobjs; i++) {
			const struct efasim_obj_type *t = uv->objs[i].type;

			if (!t || t->release_rank < rank)
				continue;
			if (t->release_rank == rank)
				efasim_obj_destroy(uv, i);
			else if (t->release_rank < next)
				next = t->release_rank;
		}
	}
	if (uv->cursor)
		munmap((void *)uv->cursor, (size_t)sysconf(_SC_PAGESIZE));
	uv->cursor = NULL;
	free(uv->regions);
	uv->regions = NULL;
	uv->nregions = 0;
	free(uv->objs);
	uv->objs = NULL;
	uv->nobjs = 0;
	if (uv->has_ctx)
		efasim_trace("uverbs%d context closed", uv->dev->index);
}

/* ---------------------------------------------------------------- regions */

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t page_align(uint64_t n)
{
	return (n + page_size() - 1) & ~(page_size() - 1);
}

static void *raw_mmap(int fd, uint64_t off, uint64_t len, int prot)
{
	long p = syscall(SYS_mmap, NULL, (size_t)len, prot, MAP_SHARED, fd, (off_t)off);

	return (p == -1) ? NULL : (void *)p;
}

static int region_add(struct efasim_uverbs *uv, uint64_t off, uint64_t len)
{
	struct efasim_region *r = realloc(uv->regions, (uv->nregions + 1) * sizeof(*r));

	if (!r)
		return -ENOMEM;
	uv->regions = r;
	r[uv->nregions].off = off;
	r[uv->nregions].len = len;
	uv->nregions++;
	return 0;
}

static void region_del(struct efasim_uverbs *uv, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < uv->nregions; i++) {
		if (uv->regions[i].off != off)
			continue;
		uv->regions[i] = uv->regions[--uv->nregions];
		return;
	}
}

int efasim_region_alloc(struct efasim_uverbs *uv, int fd, uint64_t len, uint64_t *off,
			void **map)
{
	uint64_t o;
	int rc;

	len = page_align(len);
	if (!uv->cursor) {
		if (syscall(SYS_fallocate, fd, 0, (off_t)0, (off_t)page_size()))
			return -ENOMEM;
		uv->cursor = raw_mmap(fd, 0, page_size(), PROT_READ | PROT_WRITE);
		if (!uv->cursor)
			return -ENOMEM;
	}
	o = __atomic_load_n(uv->cursor, __ATOMIC_ACQUIRE);
	for (;;) {
		uint64_t start = o < page_size() ? page_size() : o;

		if (__atomic_compare_exchange_n(uv->cursor, &o, start + len, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			o = start;
			break;
		}
	}
	/* fallocate only grows the file, even when a fork child races us */
	if (syscall(SYS_fallocate, fd, 0, (off_t)o, (off_t)len))
		return -ENOMEM;
	*map = raw_mmap(fd, o, len, PROT_READ | PROT_WRITE);
	if (!*map)
		return -ENOMEM;
	rc = region_add(uv, o, len);
	if (rc) {
		munmap(*map, len);
		return rc;
	}
	*off = o;
	return 0;
}

/* punch: give the pages back (a stale mapping of the application then
 * reads zeros). */
void efasim_region_free(struct efasim_uverbs *uv, uint64_t off, uint64_t len, void *map,
			bool punch)
{
	if (!len)
		return;
	if (map) {
		if (punch)
			madvise(map, len, MADV_REMOVE);
		munmap(map, len);
	}
	region_del(uv, off);
}

int efasim_region_check(const struct efasim_uverbs *uv, uint64_t off, uint64_t len)
{
	uint32_t i;

	/* rdma_user_mmap_entry_get: an entry at that offset, of that size */
	for (i = 0; i < uv->nregions; i++)
		if (uv->regions[i].off == off && page_align(len) == uv->regions[i].len)
			return 0;
	return -EINVAL;
}
