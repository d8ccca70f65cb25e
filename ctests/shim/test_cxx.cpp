// SPDX-License-Identifier: MIT
// The public header from C++: it compiles, its layout is the C one, and a
// C++ program calls the library through it (run in the emulated
// p5.48xlarge, linked with `pkg-config --libs efap2p`).
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <infiniband/efadv_p2p.h>

static_assert(sizeof(efadv_p2p_attr) == 80, "struct efadv_p2p_attr is 80 bytes");
static_assert(offsetof(efadv_p2p_attr, distance) + sizeof(int32_t) == 16, "distance ends at 16");
static_assert(offsetof(efadv_p2p_attr, reason) == 56, "reason at 56");
static_assert(offsetof(efadv_p2p_attr, peer_mem_outcome) == 64, "efap2p 1.1 fields after the 64 bytes");
static_assert(offsetof(efadv_p2p_attr, kernel_release) == 72, "kernel_release at 72");
static_assert(EFADV_DEVICE_ATTR_CAPS_P2P_DMA == 1u << 31, "the top bit");

int main()
{
	int n = 0, failures = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_context *ctx = (list && n) ? ibv_open_device(list[0]) : nullptr;

	if (!ctx) {
		std::fprintf(stderr, "no device\n");
		return 1;
	}
	efadv_device_attr attr{};
	efadv_p2p_attr p{};
	if (efadv_query_device(ctx, &attr, sizeof(attr)) ||
	    !(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_P2P_DMA))
		failures++;
	if (efadv_p2p_query_peer(ctx, "0000:53:00.0", &p, sizeof(p)) ||
	    p.outcome != EFADV_P2P_OUTCOME_P2P || !p.reason)
		failures++;
	std::printf("%s: P2P_DMA %s; to 0000:53:00.0: outcome %u, %s\n",
		    ibv_get_device_name(ctx->device),
		    (attr.device_caps & EFADV_DEVICE_ATTR_CAPS_P2P_DMA) ? "yes" : "no", p.outcome,
		    p.reason ? p.reason : "");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	std::printf("test_cxx: %s\n", failures ? "FAILED" : "all checks passed");
	return failures;
}
