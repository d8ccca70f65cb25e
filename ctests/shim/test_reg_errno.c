// SPDX-License-Identifier: MIT
/*
 * ibv_reg_dmabuf_mr with libefap2p preloaded answers exactly as libibverbs'
 * own function (called alongside, in the same process) for every access
 * flag combination, descriptor kind and range, in the emulated host
 * ctests/emulator/refused.json; the library may only spare the kernel a
 * call that the kernel would refuse for peer-to-peer DMA, and then with the
 * same errno. And a kernel refusal that is not about the peer (REMOTE_WRITE
 * on a NIC without RDMA write, for host memory too) is not learnt as a
 * peer-access block: later calls still ask the kernel, nothing is blamed
 * on peer access.
 *
 *   rdmap3s0 (03:00.0): RDMA read, no RDMA write
 *   rdmap5s0 (05:00.0): RDMA read and write, firmware blocks peer access
 *   04:00.0 nvidia: p2p for both by the PCI rule; 06:00.0 habanalabs: refused;
 *   07:00.0 amdgpu: bounced
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shimtest.h"

#define SIZE (2u << 20)
#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ

static struct efasim_api sim;

struct dev {
	const char *name;
	struct ibv_pd *pd;
};

static struct dev nic3 = { "rdmap3s0", NULL }, nic5 = { "rdmap5s0", NULL };

static void open_dev(struct dev *d)
{
	struct ibv_context *ctx = open_by_name(d->name);

	d->pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!d->pd) {
		fprintf(stderr, "%s: no PD\n", d->name);
		exit(2);
	}
}

struct fd_kind {
	const char *name;
	int fd;
	int refused;	/* the oracle refuses it on rdmap3s0 */
};

/* One registration through ibv_reg_dmabuf_mr (the library's when it is
 * preloaded) or libibverbs' own: 0 or the errno; the MR is released. */
static int reg(int real, struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova, int fd,
	       int access)
{
	struct ibv_mr *mr;
	int saved = 4242;

	errno = saved;
	mr = real ? real_reg_dmabuf_mr()(pd, off, len, iova, fd, access)
		  : ibv_reg_dmabuf_mr(pd, off, len, iova, fd, access);
	if (!mr)
		return errno;
	CHECK(errno == saved, "errno changed on success (%d)", errno);
	ibv_dereg_mr(mr);
	return 0;
}

struct geometry {
	const char *name;
	uint64_t off, iova;
	size_t len;
};

static const struct geometry geometries[] = {
	{ "half", 0, 0, SIZE / 2 },
	{ "whole", 0, 0x10000, SIZE },
	{ "length 0", 0, 0, 0 },
	{ "past the end", SIZE, 0, 4096 },
	{ "offset overflow", UINT64_MAX - 10, 0, 4096 },
	{ "offset and iova in different pages' places", 100, 0, 4096 },
	{ "same place in the page", 4196, 100, 4096 },
};

/* Every access flag uverbs knows, two optional ones, and bits beyond. */
static const int flag_bits[] = {
	IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
	IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED,
	IBV_ACCESS_ON_DEMAND, IBV_ACCESS_HUGETLB, 1 << 8, 1 << 9,
	IBV_ACCESS_RELAXED_ORDERING, 1 << 21,
};

static int flags_of(unsigned combo)
{
	int access = 0;
	size_t i;

	for (i = 0; i < sizeof(flag_bits) / sizeof(flag_bits[0]); i++)
		if (combo & 1u << i)
			access |= flag_bits[i];
	return access;
}

static unsigned long spared, compared;

static void compare(struct dev *d, const struct geometry *g, const struct fd_kind *k, int access)
{
	unsigned long before = sim.reg_calls();
	int lib = reg(0, d->pd, g->off, g->len, g->iova, k->fd, access), kernel;

	kernel = sim.reg_calls() != before;
	int real = reg(1, d->pd, g->off, g->len, g->iova, k->fd, access);

	compared++;
	CHECK(lib == real, "%s + %s, %s, access %#x: library %s, libibverbs %s", d->name, k->name,
	      g->name, access, lib ? strerror(lib) : "registered", real ? strerror(real) : "registered");
	if (!kernel) {
		spared++;
		/* only a refusal about the peer may be spared the kernel */
		CHECK(lib == EOPNOTSUPP && (k->refused || d == &nic5),
		      "%s + %s, %s, access %#x: answered %s without the kernel", d->name, k->name,
		      g->name, access, lib ? strerror(lib) : "success");
	}
}

/* Item: a refusal for another reason is not a peer-access block. */
static void check_not_learnt(int nv)
{
	unsigned long before;
	int i;

	for (i = 0; i < 3; i++) {
		before = sim.reg_calls();
		CHECK_ERR(reg(0, nic3.pd, 0, SIZE / 2, 0, nv, LW | RW), EOPNOTSUPP);
		CHECK(sim.reg_calls() == before + 1,
		      "REMOTE_WRITE on a NIC without RDMA write, call %d: the kernel was not asked", i);
		before = sim.reg_calls();
		CHECK_ERR(reg(0, nic3.pd, 0, SIZE / 2, 0, nv, LW | RR), 0);
		CHECK(sim.reg_calls() == before + 1, "the allowed registration did not reach the kernel");
	}
}

static int capture_stderr(void)
{
	int fd = memfd_create("stderr", MFD_CLOEXEC), saved = dup(STDERR_FILENO);

	dup2(fd, STDERR_FILENO);
	close(fd);
	return saved;
}

static void check_log(int saved)
{
	char text[65536];
	ssize_t n;

	lseek(STDERR_FILENO, 0, SEEK_SET);
	n = read(STDERR_FILENO, text, sizeof(text) - 1);
	text[n > 0 ? n : 0] = 0;
	dup2(saved, STDERR_FILENO);
	close(saved);
	fputs(text, stdout);
	CHECK(!strstr(text, "rdmap3s0 a dma-buf from"),
	      "a refusal of REMOTE_WRITE on rdmap3s0 was blamed on peer access");
}

int main(void)
{
	int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), closed = dup(file);
	struct fd_kind kinds[9];
	unsigned combo;
	size_t g, k, n = 0;
	int saved, nv;

	close(closed);
	if (!shim_loaded()) {
		fprintf(stderr, "test_reg_errno: run with libefap2p preloaded\n");
		return 2;
	}
	sim = efasim_api();
	open_dev(&nic3);
	open_dev(&nic5);
	saved = capture_stderr();
	nv = sim.dmabuf_create("0000:04:00.0", NULL, SIZE);
	check_not_learnt(nv);

	kinds[n++] = (struct fd_kind){ "nvidia", nv, 0 };
	kinds[n++] = (struct fd_kind){ "habanalabs", sim.dmabuf_create("0000:06:00.0", NULL, SIZE), 1 };
	kinds[n++] = (struct fd_kind){ "amdgpu", sim.dmabuf_create("0000:07:00.0", NULL, SIZE), 0 };
	kinds[n++] = (struct fd_kind){ "drm", sim.dmabuf_create("0000:07:00.0", "drm", SIZE), 0 };
	kinds[n++] = (struct fd_kind){ "system", sim.dmabuf_create(NULL, "system", SIZE), 0 };
	kinds[n++] = (struct fd_kind){ "unknown exporter", sim.dmabuf_create(NULL, "mystery", SIZE), 0 };
	kinds[n++] = (struct fd_kind){ "regular file", file, 0 };
	kinds[n++] = (struct fd_kind){ "closed", closed, 0 };
	kinds[n++] = (struct fd_kind){ "-1", -1, 0 };
	for (k = 0; k < n; k++)
		CHECK(kinds[k].fd >= 0 || k >= n - 2, "%s: no descriptor", kinds[k].name);

	/* every flag combination on the first geometry; the usual ones on
	 * the others */
	for (combo = 0; combo < 1u << (sizeof(flag_bits) / sizeof(flag_bits[0])); combo++)
		for (k = 0; k < n; k++) {
			compare(&nic3, &geometries[0], &kinds[k], flags_of(combo));
			compare(&nic5, &geometries[0], &kinds[k], flags_of(combo));
		}
	for (g = 1; g < sizeof(geometries) / sizeof(geometries[0]); g++)
		for (k = 0; k < n; k++)
			for (combo = 0; combo < 16; combo++) {
				compare(&nic3, &geometries[g], &kinds[k], flags_of(combo));
				compare(&nic5, &geometries[g], &kinds[k], flags_of(combo));
			}
	check_log(saved);
	printf("test_reg_errno: %lu calls compared, %lu answered without the kernel\n", compared, spared);
	CHECK(spared > 0, "the library never spared the kernel a call");
	return check_exit("test_reg_errno");
}
