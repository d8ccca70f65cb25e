// SPDX-License-Identifier: MIT
/*
 * An unmodified rdma-core program for valgrind (ctest shim.valgrind, run by
 * check_valgrind.sh with libefap2p preloaded, inside the emulated
 * p5.48xlarge): it asks efadv_query_device of every EFA device, which loads
 * the library's Go core, and prints how many have P2P_DMA.
 *
 * With "bug" it then makes an error of its own that memcheck must still
 * see with the library's suppressions: a branch on uninitialised heap
 * memory, in main.
 *
 * Usage: test_valgrind [bug]
 * Exit status: 0, or 1 when no device could be listed or queried.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#define P2P_DMA (1u << 31)

static int query_all(int *with_p2p)
{
	struct ibv_device **list;
	int i, n = 0, bad = 0;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		return 1;
	for (i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct efadv_device_attr a;

		if (!ctx) {
			bad = 1;
			continue;
		}
		memset(&a, 0, sizeof(a));
		if (efadv_query_device(ctx, &a, sizeof(a)))
			bad = 1;
		else if (a.device_caps & P2P_DMA)
			(*with_p2p)++;
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return bad;
}

int main(int argc, char **argv)
{
	int with_p2p = 0, bad = query_all(&with_p2p);

	printf("test_valgrind: %d devices with P2P_DMA\n", with_p2p);
	if (argc > 1 && !strcmp(argv[1], "bug")) {
		int *volatile p = malloc(sizeof(*p)); /* volatile: the compiler cannot see it */

		if (p && *p == 42) /* uninitialised: memcheck reports it */
			puts("test_valgrind: 42");
		free(p);
	}
	return bad;
}
