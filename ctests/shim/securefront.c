// SPDX-License-Identifier: MIT
/*
 * A C program that check_secure.sh runs with file capabilities: it loads
 * libefap2p (the path given, which secure execution lets dlopen take) and
 * asks a pairwise query of a device it makes up, so that the Go core loads
 * and reads its inputs. In secure-execution mode none of them may come from
 * the environment: EFAP2P_KERNEL_CONFIG must not be read (the core would
 * quote the named file's first line), nor EFAP2P_LOG honoured.
 *   securefront LIBEFAP2P
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include <infiniband/efadv_p2p.h>

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *, uint32_t);

int main(int argc, char **argv)
{
	static struct ibv_device dev;
	static struct ibv_context ctx;
	struct efadv_p2p_attr attr;
	query_peer_fn q;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: securefront LIBEFAP2P\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	q = h ? (query_peer_fn)dlsym(h, "efadv_p2p_query_peer") : NULL;
	if (!q) {
		fprintf(stderr, "securefront: %s\n", dlerror());
		return 1;
	}
	strcpy(dev.name, "rdmap79s0");
	strcpy(dev.ibdev_path, "/nonexistent");
	ctx.device = &dev;
	printf("secure %d\n", getauxval(AT_SECURE) != 0);
	printf("query_peer %d\n", q(&ctx, "0000:53:00.0", &attr, sizeof(attr)));
	return 0;
}
