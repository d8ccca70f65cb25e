// SPDX-License-Identifier: MIT
/*
 * A program linked with `pkg-config --libs efap2p` (not preloaded), inside
 * the emulated p5.48xlarge: its efadv_query_device is libefap2p's (the
 * P2P_DMA bit is set), which calls libefa's; it calls the new functions by
 * name.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <infiniband/efadv_p2p.h>

#include "check.h"

static struct ibv_context *open_first(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list && n)
		ctx = ibv_open_device(list[n - 1]);	/* rdmap79s0 */
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

int main(void)
{
	struct ibv_context *ctx = open_first();
	struct efadv_device_attr attr;
	struct efadv_p2p_attr p;
	Dl_info info;

	CHECK(ctx != NULL, "no device");
	if (!ctx)
		return check_exit("test_linked");
	CHECK(dladdr((void *)efadv_query_device, &info) && strstr(info.dli_fname, "libefap2p"),
	      "efadv_query_device comes from %s", info.dli_fname);
	CHECK(!strcmp(ibv_get_device_name(ctx->device), "rdmap79s0"), "device %s",
	      ibv_get_device_name(ctx->device));
	CHECK_ERR(efadv_query_device(ctx, &attr, sizeof(attr)), 0);
	CHECK(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_P2P_DMA, "caps %#x", attr.device_caps);
	CHECK(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ, "caps %#x", attr.device_caps);
	CHECK_ERR(efadv_p2p_query_peer(ctx, "0000:53:00.0", &p, sizeof(p)), 0);
	CHECK_EQ(p.outcome, EFADV_P2P_OUTCOME_P2P);
	CHECK_ERR(efadv_p2p_query_dmabuf(ctx, -1, &p, sizeof(p)), EBADF);
	ibv_close_device(ctx);
	return check_exit("test_linked");
}
