// SPDX-License-Identifier: MIT
/*
 * An unmodified rdma-core program: built against the plain rdma-core
 * headers, linked only with libibverbs and libefa. For each EFA device it
 * prints what efadv_query_device answers, and whether the P2P_DMA bit
 * (1u << 31, efap2p's extension) is set: it is, when libefap2p.so is
 * preloaded and the NIC reaches an accelerator with true P2P DMA.
 *
 * With --peer IBDEV=PCI it also asks for one pairwise explanation, through
 * efadv_p2p_query_peer looked up at run time (dlsym(RTLD_DEFAULT)), so the
 * program needs neither efap2p's header nor its library.
 *
 * Usage: p2p_caps [--peer rdmap79s0=0000:53:00.0]
 * Exit status: 0, or 1 when no device could be listed or queried.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#define P2P_DMA (1u << 31)

/* struct efadv_p2p_attr, as efap2p's header lays it out (64 bytes). */
struct peer_attr {
	uint64_t comp_mask;
	uint32_t map_type;
	int32_t distance;
	uint32_t path, outcome, policy, source, bandwidth_mbs, latency_ns, flags, peer_domain;
	uint8_t peer_bus, peer_devfn, reserved[6];
	const char *reason;
};
_Static_assert(sizeof(struct peer_attr) == 64, "struct efadv_p2p_attr is 64 bytes");

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct peer_attr *, uint32_t);

static const char *name_of(uint32_t v, const char *const *names, size_t n)
{
	return v < n ? names[v] : "?";
}

static void explain(struct ibv_context *ctx, const char *peer)
{
	static const char *const maps[] = { "UNKNOWN", "NOT_SUPPORTED", "BUS_ADDR", "THRU_HOST_BRIDGE" };
	static const char *const paths[] = { "UNKNOWN", "LOC", "PIX", "PXB", "PHB", "NODE", "SYS" };
	static const char *const outcomes[] = { "unknown", "p2p", "bounced", "refused" };
	static const char *const policies[] = { "kernel", "amdgpu", "nvidia" };
	static const char *const sources[] = { "computed", "acpi", "topology-file" };
	query_peer_fn query = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
	const char *dev = ibv_get_device_name(ctx->device);
	struct peer_attr a;
	int rc;

	if (!query) {
		printf("%s -> %s: efadv_p2p_query_peer is not available (libefap2p is not loaded)\n",
		       dev, peer);
		return;
	}
	rc = query(ctx, peer, &a, sizeof(a));
	if (rc) {
		printf("%s -> %s: efadv_p2p_query_peer: %s\n", dev, peer, strerror(rc));
		return;
	}
	printf("%s -> %s: %s, distance %d, path %s, outcome %s (%s policy, %s), %u MB/s, ~%u ns\n",
	       dev, peer, name_of(a.map_type, maps, 4), a.distance, name_of(a.path, paths, 7),
	       name_of(a.outcome, outcomes, 4), name_of(a.policy, policies, 3),
	       name_of(a.source, sources, 3), a.bandwidth_mbs, a.latency_ns);
	printf("  %s\n", a.reason ? a.reason : "(no reason)");
}

static int show(struct ibv_device *dev, const char *peer_dev, const char *peer)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	const char *name = ibv_get_device_name(dev);
	struct efadv_device_attr a;
	int rc;

	if (!ctx) {
		printf("%s: ibv_open_device: %s\n", name, strerror(errno));
		return 1;
	}
	memset(&a, 0, sizeof(a));
	rc = efadv_query_device(ctx, &a, sizeof(a));
	if (rc) {
		printf("%s: efadv_query_device: %s\n", name, strerror(rc));
	} else {
		printf("%s: P2P_DMA %s (device_caps 0x%08x; max_sq_wr %u max_rq_wr %u max_sq_sge %u max_rq_sge %u inline_buf_size %u max_rdma_size %u)\n",
		       name, (a.device_caps & P2P_DMA) ? "yes" : "no ", a.device_caps, a.max_sq_wr,
		       a.max_rq_wr, a.max_sq_sge, a.max_rq_sge, a.inline_buf_size, a.max_rdma_size);
	}
	if (peer_dev && !strcmp(peer_dev, name))
		explain(ctx, peer);
	ibv_close_device(ctx);
	return rc != 0;
}

int main(int argc, char **argv)
{
	char *peer_dev = NULL, *peer = NULL;
	struct ibv_device **list;
	int i, n = 0, bad = 0;

	if (argc == 3 && !strcmp(argv[1], "--peer") && (peer = strchr(argv[2], '='))) {
		*peer++ = 0;
		peer_dev = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--peer IBDEV=PCI]\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "p2p_caps: no RDMA device\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		bad |= show(list[i], peer_dev, peer);
	ibv_free_device_list(list);
	return bad;
}
