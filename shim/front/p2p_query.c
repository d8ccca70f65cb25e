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

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses n (1..8) hex digits; -1 if any is not one. */
static int64_t hex(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return n ? v : -1;
}

/*
 * "DDDD:BB:DD.F" (a domain of 4 to 8 digits) or "BB:DD.F", as sysfs and
 * lspci write them, to domain << 16 | bus << 8 | devfn; -1 if malformed.
 */
static int64_t parse_pci(const char *s)
{
	size_t len = strlen(s), dlen = len - 8;
	int64_t domain = 0, bus, dev, fn;

	if (len != 7 && (len < 12 || len > 16 || s[dlen] != ':'))
		return -1;
	if (len != 7) {
		domain = hex(s, dlen);
		s += dlen + 1;
	}
	if (domain < 0 || s[2] != ':' || s[5] != '.')
		return -1;
	bus = hex(s, 2);
	dev = hex(s + 3, 2);
	fn = hex(s + 6, 1);
	if (bus < 0 || dev < 0 || dev > 31 || fn < 0 || fn > 7)
		return -1;
	return domain << 16 | bus << 8 | dev << 3 | fn;
}

static int args_ok(struct ibv_context *ibvctx, const void *attr, uint32_t inlen)
{
	return ibvctx && ibvctx->device && attr && inlen >= ATTR_MIN_LEN;
}

static int query_peer(struct ibv_context *ibvctx, const char *peer_pci,
		      struct efadv_p2p_attr *attr, uint32_t inlen)
{
	const struct efadv_p2p_attr *hit;
	struct efadv_p2p_attr a;
	int64_t peer;
	int dev, rc;

	if (!args_ok(ibvctx, attr, inlen) || !peer_pci || (peer = parse_pci(peer_pci)) < 0)
		return EINVAL;
	dev = efap2p_dev_index(ibvctx->device->name);
	hit = dev < 0 ? NULL : efap2p_peer_find(dev, (uint64_t)peer);
	if (!hit) {
		memset(&a, 0, sizeof(a));
		rc = efap2p_core_peer(ibvctx->device->name, (uint32_t)(peer >> 16),
				      (uint32_t)(peer >> 8) & 0xff, (uint32_t)peer & 0xff, &a);
		if (rc)
			return rc;
		if (dev >= 0)
			efap2p_peer_add(dev, (uint64_t)peer, &a);
		hit = &a;
	}
	attr_copy_out(attr, hit, inlen);
	return 0;
}

static int query_dmabuf(struct ibv_context *ibvctx, int dmabuf_fd,
			struct efadv_p2p_attr *attr, uint32_t inlen)
{
	struct efap2p_dmabuf_id id;
	struct efap2p_pair tmp, *p;
	int dev, rc;

	if (!args_ok(ibvctx, attr, inlen))
		return EINVAL;
	rc = efap2p_dmabuf_identify(dmabuf_fd, &id);
	if (rc)
		return rc;
	dev = efap2p_dev_index(ibvctx->device->name);
	if (dev < 0)
		return ENOMEM;
	p = efap2p_pair_get(dev, id.exp, &tmp, &rc);
	if (!p)
		return rc;
	if (p->core.decision == EFAP2P_DMABUF_PASS)
		return p->core.err;
	attr_copy_out(attr, &p->core.best, inlen);
	return 0;
}

/* errno is the caller's: the answer is the return value. */
__attribute__((visibility("default")))
int efadv_p2p_query_peer(struct ibv_context *ibvctx, const char *peer_pci,
			 struct efadv_p2p_attr *attr, uint32_t inlen)
{
	int saved = errno, rc = query_peer(ibvctx, peer_pci, attr, inlen);

	errno = saved;
	return rc;
}

__attribute__((visibility("default")))
int efadv_p2p_query_dmabuf(struct ibv_context *ibvctx, int dmabuf_fd,
			   struct efadv_p2p_attr *attr, uint32_t inlen)
{
	int saved = errno, rc = query_dmabuf(ibvctx, dmabuf_fd, attr, inlen);

	errno = saved;
	return rc;
}
