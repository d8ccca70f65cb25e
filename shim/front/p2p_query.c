// SPDX-License-Identifier: MIT
/*
 * efadv_p2p_query_peer and efadv_p2p_query_dmabuf (EFAP2P_1.0): the
 * oracle's pairwise verdict, rdma-core style. Answers are cached in C
 * memory, so that a forked child can give the ones its parent asked for;
 * anything else there fails with ECHILD.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "front.h"

/* inlen must reach the end of distance */
#define ATTR_MIN_LEN (offsetof(struct efadv_p2p_attr, distance) + sizeof(int32_t))

#define FILL(dst, src, inlen, f)                                              \
	do {                                                                  \
		if (offsetof(struct efadv_p2p_attr, f) + sizeof((dst)->f) <= (inlen)) \
			(dst)->f = (src)->f;                                  \
	} while (0)

/* Zeroes inlen bytes of dst and fills the fields that lie wholly in them;
 * comp_mask stays 0. */
static void attr_copy_out(struct efadv_p2p_attr *dst, const struct efadv_p2p_attr *src,
			  uint32_t inlen)
{
	memset(dst, 0, inlen);
	FILL(dst, src, inlen, map_type);
	FILL(dst, src, inlen, distance);
	FILL(dst, src, inlen, path);
	FILL(dst, src, inlen, outcome);
	FILL(dst, src, inlen, policy);
	FILL(dst, src, inlen, source);
	FILL(dst, src, inlen, bandwidth_mbs);
	FILL(dst, src, inlen, latency_ns);
	FILL(dst, src, inlen, flags);
	FILL(dst, src, inlen, peer_domain);
	FILL(dst, src, inlen, peer_bus);
	FILL(dst, src, inlen, peer_devfn);
	FILL(dst, src, inlen, reason);
	FILL(dst, src, inlen, peer_mem_outcome);
	FILL(dst, src, inlen, peer_mem_provider);
	FILL(dst, src, inlen, kernel_release);
}

static int args_ok(struct ibv_context *ibvctx, const void *attr, uint32_t inlen)
{
	return ibvctx && ibvctx->device && attr && inlen >= ATTR_MIN_LEN;
}

/* The attr from the topology file's index; 0, or ENOENT when it has none
 * for the pair (or cannot give its reason). */
static int peer_from_index(struct ibv_device *device, int dev, uint64_t peer,
			   struct efadv_p2p_attr *out)
{
	const struct efap2p_index *ix = efap2p_precomp();
	const uint8_t *rec;
	uint64_t key;

	if (!ix || dev < 0 || efap2p_dev_key(dev, device, &key) || efap2p_precomp_records() ||
	    efap2p_index_peer(ix, key, peer, &rec) || efap2p_precomp_strings())
		return ENOENT;
	efap2p_index_attr(ix, rec, out);
	return 0;
}

static int query_peer(struct ibv_context *ibvctx, const char *peer_pci,
		      struct efadv_p2p_attr *attr, uint32_t inlen)
{
	const struct efadv_p2p_attr *hit;
	struct efadv_p2p_attr a;
	struct efap2p_guard g;
	int64_t peer;
	int dev, rc = 0;

	if (!args_ok(ibvctx, attr, inlen) || !peer_pci || (peer = efap2p_parse_pci(peer_pci, 1)) < 0)
		return EINVAL;
	efap2p_guard_enter(&g);
	dev = efap2p_dev_of(ibvctx->device);
	hit = dev < 0 ? NULL : efap2p_peer_find(dev, (uint64_t)peer);
	if (!hit) {
		memset(&a, 0, sizeof(a));
		if (peer_from_index(ibvctx->device, dev, (uint64_t)peer, &a))
			rc = efap2p_core_peer(&g, ibvctx->device->name, (uint32_t)(peer >> 16),
					      (uint32_t)(peer >> 8) & 0xff, (uint32_t)peer & 0xff, &a);
		if (!rc && dev >= 0)
			efap2p_peer_add(dev, (uint64_t)peer, &a);
		hit = &a;
	}
	if (!rc)
		attr_copy_out(attr, hit, inlen);
	efap2p_guard_leave(&g);
	return rc;
}

static int query_dmabuf(struct ibv_context *ibvctx, int dmabuf_fd,
			struct efadv_p2p_attr *attr, uint32_t inlen)
{
	struct efap2p_dmabuf_id id;
	struct efap2p_pair tmp, *p;
	struct efadv_p2p_attr best;
	struct efap2p_guard g;
	int dev, rc;

	if (!args_ok(ibvctx, attr, inlen))
		return EINVAL;
	rc = efap2p_dmabuf_identify(dmabuf_fd, &id);
	if (rc)
		return rc;
	efap2p_guard_enter(&g);
	dev = efap2p_dev_of(ibvctx->device);
	p = dev < 0 ? NULL : efap2p_pair_get(&g, ibvctx->device, dev, id.exp, &tmp, &rc);
	if (dev < 0)
		rc = ENOMEM;
	else if (p && p->core.decision == EFAP2P_DMABUF_PASS)
		rc = p->core.err;
	else if (p) {
		efap2p_pair_best(p, &best);
		attr_copy_out(attr, &best, inlen);
	}
	efap2p_guard_leave(&g);
	return rc;
}

/* errno is the caller's: the answer is the return value. */
__attribute__((visibility("default")))
int efadv_p2p_query_peer(struct ibv_context *ibvctx, const char *peer_pci,
			 struct efadv_p2p_attr *attr, uint32_t inlen)
{
	int saved = errno, rc;

	efap2p_config();
	/* from a signal handler interrupting a slow path of the library in
	 * this thread: no lock may be taken */
	rc = efap2p_reentered() ? EAGAIN : query_peer(ibvctx, peer_pci, attr, inlen);

	errno = saved;
	return rc;
}

__attribute__((visibility("default")))
int efadv_p2p_query_dmabuf(struct ibv_context *ibvctx, int dmabuf_fd,
			   struct efadv_p2p_attr *attr, uint32_t inlen)
{
	int saved = errno, rc;

	efap2p_config();
	rc = efap2p_reentered() ? EAGAIN : query_dmabuf(ibvctx, dmabuf_fd, attr, inlen);

	errno = saved;
	return rc;
}
