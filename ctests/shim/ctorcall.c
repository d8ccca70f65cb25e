// SPDX-License-Identifier: MIT
/*
 * A library whose constructor asks efadv_query_device of every RDMA
 * device: loaded with dlopen, it runs with the loader's lock held by its
 * thread, and its first call is the process's first (the Go core loads
 * there). test_host ctor loads it and reads what it counted.
 */
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#define P2P_DMA_BIT (1u << 31)

__attribute__((visibility("default"))) int ctorcall_devices = -1;
__attribute__((visibility("default"))) int ctorcall_p2p = -1;

__attribute__((constructor)) static void ask_in_constructor(void)
{
	struct efadv_device_attr attr;
	struct ibv_device **list;
	int i, n = 0, p2p = 0;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);

		memset(&attr, 0, sizeof(attr));
		if (ctx && !efadv_query_device(ctx, &attr, sizeof(attr)) &&
		    (attr.device_caps & P2P_DMA_BIT))
			p2p++;
		if (ctx)
			ibv_close_device(ctx);
	}
	if (list)
		ibv_free_device_list(list);
	ctorcall_devices = n;
	ctorcall_p2p = p2p;
}
