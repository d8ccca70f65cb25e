// SPDX-License-Identifier: MIT
/*
 * The C ABI of libefap2p, inside the emulated p5.48xlarge:
 * - efadv_query_device answers exactly what libefa answers (return value,
 *   every byte, errno), for inlen 0, 8, 24, 28, 32 and 64, a NULL context
 *   or attr (libefa crashes: so must the library, the same way), and a
 *   device that is not EFA -- except the P2P_DMA bit, set when device_caps
 *   fits in inlen;
 * - efadv_p2p_query_peer and efadv_p2p_query_dmabuf follow rdma-core's
 *   rules: NULL arguments and an inlen short of `distance` are EINVAL,
 *   inlen bytes are zeroed and only the fields wholly inside are filled.
 *
 * Run preloaded (test_abi shim) or plain (test_abi plain: no bit, no new
 * symbols). libefa's own function is reached with dlvsym on its handle.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shimtest.h"

/* struct efadv_p2p_attr and the new functions, from efap2p's header */
#include <infiniband/efadv_p2p.h>

typedef int (*query_peer_fn)(struct ibv_context *, const char *, struct efadv_p2p_attr *,
			     uint32_t);
typedef int (*query_dmabuf_fn)(struct ibv_context *, int, struct efadv_p2p_attr *, uint32_t);

static int preloaded;

/*
 * A context of a device libefa does not own, as another provider's would
 * be: an extended verbs context (the ibv_context last, abi_compat marking
 * it), whose device is followed, as in libibverbs' struct verbs_device, by
 * the provider's ops pointer, which libefa compares with its own (zeroes
 * are no provider's).
 */
static struct {
	struct ibv_device dev;
	char rest[1024];
} other_dev;
static struct verbs_context other_vctx = {
	.context = { .device = &other_dev.dev, .abi_compat = __VERBS_ABI_IS_EXTENDED },
};
#define other_ctx (other_vctx.context)

static void compare_inlen(struct ibv_context *ctx, uint32_t inlen)
{
	unsigned char a[80], b[80];
	struct efadv_device_attr *ea = (void *)a, *eb = (void *)b;
	int ra, rb, ea_errno, eb_errno;

	memset(a, 0xa5, sizeof(a));
	memset(b, 0xa5, sizeof(b));
	errno = 4242;
	ra = efadv_query_device(ctx, ea, inlen);
	ea_errno = errno;
	errno = 4242;
	rb = real_query_device()(ctx, eb, inlen);
	eb_errno = errno;
	CHECK(ra == rb, "inlen %u: rc %d, libefa %d", inlen, ra, rb);
	CHECK(ea_errno == eb_errno, "inlen %u: errno %d, libefa's %d", inlen, ea_errno, eb_errno);
	if (!ra && inlen >= offsetof(struct efadv_device_attr, device_caps) + 4) {
		CHECK(!(eb->device_caps & P2P_DMA_BIT), "libefa sets bit 31");
		CHECK(!!(ea->device_caps & P2P_DMA_BIT) == preloaded,
		      "inlen %u: P2P_DMA %s", inlen, preloaded ? "missing" : "set without the library");
		ea->device_caps &= ~P2P_DMA_BIT;
	}
	CHECK(!memcmp(a, b, sizeof(a)), "inlen %u: bytes differ from libefa's", inlen);
}

/* The wait status of fn(ctx, attr, inlen) run in a child. */
static int status_of(query_device_fn fn, struct ibv_context *ctx, void *attr, uint32_t inlen)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		_exit(fn(ctx, attr, inlen) & 0x7f);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	return st;
}

static void compare_nulls(struct ibv_context *ctx)
{
	struct efadv_device_attr a;
	static const struct {
		int null_ctx, null_attr;
		uint32_t inlen;
	} cases[] = { { 1, 0, 32 }, { 0, 1, 32 }, { 0, 1, 0 }, { 1, 1, 0 } };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibv_context *c = cases[i].null_ctx ? NULL : ctx;
		void *p = cases[i].null_attr ? NULL : &a;
		int ours = status_of(efadv_query_device, c, p, cases[i].inlen);
		int theirs = status_of(real_query_device(), c, p, cases[i].inlen);

		CHECK(ours == theirs, "NULL case %zu: wait status %#x, libefa's %#x", i, ours, theirs);
	}
}

static void compare_other_device(void)
{
	struct efadv_device_attr a, b;
	int ra, rb;

	strcpy(other_dev.dev.name, "mlx5_0");
	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	ra = efadv_query_device(&other_ctx, &a, sizeof(a));
	rb = real_query_device()(&other_ctx, &b, sizeof(b));
	CHECK_ERR(rb, EOPNOTSUPP);
	CHECK(ra == rb && !memcmp(&a, &b, sizeof(a)), "non-EFA device: rc %d, libefa %d", ra, rb);
}

/* Bytes [from, to) of p all equal v. */
static int all(const void *p, size_t from, size_t to, unsigned char v)
{
	const unsigned char *b = p;

	for (; from < to; from++)
		if (b[from] != v)
			return 0;
	return 1;
}

static void check_peer_args(query_peer_fn q, struct ibv_context *ctx)
{
	static const char *const bad[] = { "", "53:00", "0000:53:00.8", "zz:00.0", "0000:53:20.0",
					   "0000-53:00.0", "000:53:00.0", "0000:53:00.00" };
	struct efadv_p2p_attr a;
	size_t i;

	CHECK_ERR(q(NULL, "0000:53:00.0", &a, sizeof(a)), EINVAL);
	CHECK_ERR(q(ctx, NULL, &a, sizeof(a)), EINVAL);
	CHECK_ERR(q(ctx, "0000:53:00.0", NULL, sizeof(a)), EINVAL);
	CHECK_ERR(q(ctx, "0000:53:00.0", &a, 0), EINVAL);
	CHECK_ERR(q(ctx, "0000:53:00.0", &a, 8), EINVAL);
	CHECK_ERR(q(ctx, "0000:53:00.0", &a, 15), EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(q(ctx, bad[i], &a, sizeof(a)) == EINVAL, "address \"%s\" accepted", bad[i]);
	CHECK_ERR(q(ctx, "0000:ee:00.0", &a, sizeof(a)), ENOENT);
	CHECK_ERR(q(&other_ctx, "0000:53:00.0", &a, sizeof(a)), ENODEV);
}

/* rdmap79s0 (4f:00.0) and the H100 53:00.0 under one switch: BUS_ADDR at
 * 4, PIX, nvidia's rule, p2p (models/machines/p5.48xlarge.json). */
static void check_peer(query_peer_fn q, struct ibv_context *ctx)
{
	unsigned char buf[112];
	struct efadv_p2p_attr *a = (void *)buf;
	const char *reason;

	memset(buf, 0xa5, sizeof(buf));
	errno = 4242;
	CHECK_ERR(q(ctx, "0000:53:00.0", a, sizeof(*a)), 0);
	CHECK_EQ(errno, 4242);
	CHECK_EQ(a->comp_mask, 0);
	CHECK_EQ(a->map_type, EFADV_P2P_MAP_BUS_ADDR);
	CHECK_EQ(a->distance, 4);
	CHECK_EQ(a->path, EFADV_P2P_PATH_PIX);
	CHECK_EQ(a->outcome, EFADV_P2P_OUTCOME_P2P);
	CHECK_EQ(a->policy, EFADV_P2P_POLICY_NVIDIA);
	CHECK_EQ(a->source, EFADV_P2P_SOURCE_COMPUTED);
	CHECK(a->bandwidth_mbs > 0 && a->latency_ns > 0, "figures %u MB/s %u ns", a->bandwidth_mbs,
	      a->latency_ns);
	CHECK_EQ(a->flags, 0);
	CHECK_EQ(a->peer_domain, 0);
	CHECK_EQ(a->peer_bus, 0x53);
	CHECK_EQ(a->peer_devfn, 0);
	CHECK(all(buf, offsetof(struct efadv_p2p_attr, reserved), offsetof(struct efadv_p2p_attr, reason), 0),
	      "reserved bytes not zeroed");
	CHECK(a->reason && strstr(a->reason, "0000:45:00.0"), "reason: %s", a->reason ? a->reason : "NULL");
	/* the model's out-of-tree EFA driver offers "NVIDIA peermem", which
	 * serves the nvidia driver of the H100: true P2P by peer memory too;
	 * efap2p sim sets EFAP2P_KERNEL to the model's release */
	CHECK_EQ(a->peer_mem_outcome, EFADV_P2P_OUTCOME_P2P);
	CHECK_EQ(a->peer_mem_provider, EFADV_P2P_PEER_MEM_NVIDIA_PEERMEM);
	CHECK(a->kernel_release && !strcmp(a->kernel_release, "6.8.0-1021-aws"), "kernel_release: %s",
	      a->kernel_release ? a->kernel_release : "NULL");
	CHECK(all(buf, sizeof(*a), sizeof(buf), 0xa5), "bytes past inlen written");
	reason = a->reason;

	/* the short form names the same function; the reason is the same string */
	CHECK_ERR(q(ctx, "53:00.0", a, sizeof(*a)), 0);
	CHECK(a->reason == reason, "reason moved");

	/* inlen through distance: the rest untouched */
	memset(buf, 0xa5, sizeof(buf));
	CHECK_ERR(q(ctx, "0000:53:00.0", a, 16), 0);
	CHECK(a->comp_mask == 0 && a->map_type == EFADV_P2P_MAP_BUS_ADDR && a->distance == 4,
	      "inlen 16: map %u distance %d", a->map_type, a->distance);
	CHECK(all(buf, 16, sizeof(buf), 0xa5), "inlen 16: bytes past it written");
	/* inlen 22: path fits, outcome does not: its first bytes are zeroed */
	memset(buf, 0xa5, sizeof(buf));
	CHECK_ERR(q(ctx, "0000:53:00.0", a, 22), 0);
	CHECK(a->path == EFADV_P2P_PATH_PIX, "inlen 22: path %u", a->path);
	CHECK(all(buf, 20, 22, 0) && all(buf, 22, sizeof(buf), 0xa5), "inlen 22: partial field");
	/* the 64-byte struct of efap2p 1.0 (up to reason): filled, the
	 * fields after it untouched */
	memset(buf, 0xa5, sizeof(buf));
	CHECK_ERR(q(ctx, "0000:53:00.0", a, 64), 0);
	CHECK(a->reason == reason && a->outcome == EFADV_P2P_OUTCOME_P2P && all(buf, 64, sizeof(buf), 0xa5),
	      "inlen 64");
	/* a larger struct from a future header: zeroed to its end */
	memset(buf, 0xa5, sizeof(buf));
	CHECK_ERR(q(ctx, "0000:53:00.0", a, 96), 0);
	CHECK(a->reason == reason && a->kernel_release && all(buf, 80, 96, 0) && all(buf, 96, sizeof(buf), 0xa5),
	      "inlen 96");
}

static void check_dmabuf_args(query_dmabuf_fn q, struct ibv_context *ctx)
{
	struct efadv_p2p_attr a;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	CHECK_ERR(q(NULL, fd, &a, sizeof(a)), EINVAL);
	CHECK_ERR(q(ctx, fd, NULL, sizeof(a)), EINVAL);
	CHECK_ERR(q(ctx, fd, &a, 15), EINVAL);
	CHECK_ERR(q(ctx, fd, &a, sizeof(a)), EINVAL);	/* a regular file */
	close(fd);
	CHECK_ERR(q(ctx, fd, &a, sizeof(a)), EBADF);
	CHECK_ERR(q(ctx, -1, &a, sizeof(a)), EBADF);
}

int main(int argc, char **argv)
{
	static const uint32_t inlens[] = { 0, 8, 24, 28, 32, 64 };
	struct ibv_context *ctx;
	size_t i;

	if (argc != 2 || (strcmp(argv[1], "shim") && strcmp(argv[1], "plain"))) {
		fprintf(stderr, "usage: %s shim|plain\n", argv[0]);
		return 2;
	}
	preloaded = !strcmp(argv[1], "shim");
	CHECK(shim_loaded() == preloaded, "libefap2p %s", preloaded ? "not loaded" : "loaded");
	ctx = open_by_name("rdmap79s0");
	if (!ctx)
		return check_exit("test_abi");
	for (i = 0; i < sizeof(inlens) / sizeof(inlens[0]); i++)
		compare_inlen(ctx, inlens[i]);
	compare_nulls(ctx);
	compare_other_device();
	if (preloaded) {
		query_peer_fn qp = (query_peer_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_peer");
		query_dmabuf_fn qd = (query_dmabuf_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_dmabuf");

		check_peer_args(qp, ctx);
		check_peer(qp, ctx);
		check_dmabuf_args(qd, ctx);
	}
	ibv_close_device(ctx);
	return check_exit("test_abi");
}
