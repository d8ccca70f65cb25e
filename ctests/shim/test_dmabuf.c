// SPDX-License-Identifier: MIT
/*
 * ibv_reg_dmabuf_mr through libefap2p, on fake dma-bufs of the emulated
 * host ctests/emulator/refused.json (verdicts worked out by hand there):
 *
 *   rdmap3s0 (03:00.0) + H100 04:00.0 (nvidia)   p2p: registers
 *   rdmap3s0           + MI210 07:00.0 (amdgpu)  bounced: registers
 *   rdmap3s0           + Gaudi2 06:00.0          refused by the PCI rule
 *                        (habanalabs)            (its exporter asks it)
 *   rdmap5s0 (05:00.0) + H100 04:00.0            the PCI rule allows it, but
 *                                                the NIC's firmware blocks peers:
 *                                                the emulated kernel refuses
 *
 * Modes, as the test runs under them:
 *   enforce   the default: the refused pair fails with EOPNOTSUPP without
 *             reaching the emulated kernel; the blocked pair reaches it
 *             once, then fails fast
 *   topology  EFAP2P_TOPOLOGY names a file that records rdmap5s0 as
 *             peer-blocked: that pair fails fast from the first call
 *   advise    EFAP2P_MODE=advise: every call reaches the kernel, refusals
 *             are logged
 *   off       EFAP2P_MODE=off: every call reaches the kernel, nothing logged
 *   plain     without the library
 * In every mode, errors that are not about P2P (closed descriptor, regular
 * file, bad PD, bad length or range, bad access flags) are exactly those of
 * libibverbs' own function, called alongside.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/efadv_p2p.h>

#include "shimtest.h"

#define SIZE (2u << 20)
#define LW IBV_ACCESS_LOCAL_WRITE

enum mode { ENFORCE, TOPOLOGY, ADVISE, OFF, PLAIN };
static enum mode mode;
static struct efasim_api sim;

struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

static struct dev nic3 = { .name = "rdmap3s0" }, nic5 = { .name = "rdmap5s0" };

static void open_dev(struct dev *d)
{
	d->ctx = open_by_name(d->name);
	d->pd = d->ctx ? ibv_alloc_pd(d->ctx) : NULL;
	CHECK(d->pd != NULL, "%s: ibv_alloc_pd: %s", d->name, strerror(errno));
	if (!d->pd)
		exit(check_exit("test_dmabuf"));
}

static int buffer(const char *owner, const char *exp)
{
	int fd = sim.dmabuf_create(owner, exp, SIZE);

	CHECK(fd >= 0, "efasim_dmabuf_create(%s, %s): %s", owner ? owner : "-", exp ? exp : "-",
	      strerror(errno));
	return fd;
}

/*
 * Registers fd on d: want is 0 for success or the errno expected, kernel
 * whether the call must reach the emulated kernel.
 */
static void reg(const char *what, struct dev *d, int fd, int access, int want, int kernel)
{
	unsigned long before = sim.reg_calls();
	struct ibv_mr *mr;
	int err;

	errno = 4242;
	mr = ibv_reg_dmabuf_mr(d->pd, 0, SIZE / 2, 0, fd, access);
	err = mr ? 0 : errno;
	CHECK(err == want, "%s: %s, want %s", what, mr ? "registered" : strerror(err),
	      want ? strerror(want) : "success");
	if (mr) {
		CHECK(errno == 4242, "%s: errno changed on success (%d)", what, errno);
		CHECK_ERR(ibv_dereg_mr(mr), 0);
	}
	CHECK(kernel == (sim.reg_calls() != before), "%s: the kernel was %sasked", what,
	      kernel ? "not " : "");
}

static int enforcing(void)
{
	return mode == ENFORCE || mode == TOPOLOGY;
}

static void check_pairs(void)
{
	int nv = buffer("0000:04:00.0", NULL), amd = buffer("0000:07:00.0", NULL);
	int hl = buffer("0000:06:00.0", NULL), drm = buffer("0000:07:00.0", "drm");
	int sys = buffer(NULL, "system");

	reg("rdmap3s0 + nvidia", &nic3, nv, LW, 0, 1);
	reg("rdmap3s0 + amdgpu (bounced)", &nic3, amd, LW, 0, 1);
	reg("rdmap3s0 + system memory", &nic3, sys, LW, 0, 1);
	reg("rdmap3s0 + habanalabs", &nic3, hl, LW, EOPNOTSUPP, !enforcing());
	reg("rdmap3s0 + habanalabs again", &nic3, hl, 0, EOPNOTSUPP, !enforcing());
	/* "drm" names no device: its one candidate here is the bounced
	 * amdgpu, which the library does not refuse; the kernel registers */
	reg("rdmap3s0 + drm (amdgpu's)", &nic3, drm, LW, 0, 1);
	/* the peer-blocked NIC: the PCI rule allows, the firmware refuses */
	reg("rdmap5s0 + nvidia", &nic5, nv, LW, EOPNOTSUPP, mode != TOPOLOGY);
	reg("rdmap5s0 + nvidia again", &nic5, nv, LW, EOPNOTSUPP, !enforcing());
	reg("rdmap5s0 + nvidia, more access", &nic5, nv, LW | IBV_ACCESS_REMOTE_READ, EOPNOTSUPP,
	    !enforcing());
	reg("rdmap5s0 + system memory", &nic5, sys, LW, 0, 1);
	close(nv);
	close(amd);
	close(hl);
	close(drm);
	close(sys);
}

/* ours and libibverbs' own agree on the result and errno */
static void same(const char *what, struct ibv_pd *pd, uint64_t off, size_t len, int fd, int access)
{
	struct ibv_mr *a, *b;
	int ea, eb;

	errno = 0;
	a = ibv_reg_dmabuf_mr(pd, off, len, 0, fd, access);
	ea = errno;
	errno = 0;
	b = real_reg_dmabuf_mr()(pd, off, len, 0, fd, access);
	eb = errno;
	CHECK(!a == !b && (a || ea == eb), "%s: %s (%d), libibverbs: %s (%d)", what,
	      a ? "registered" : strerror(ea), ea, b ? "registered" : strerror(eb), eb);
	CHECK(!a, "%s: registered", what);
	if (a)
		ibv_dereg_mr(a);
	if (b)
		ibv_dereg_mr(b);
}

static void check_errors(void)
{
	int hl = buffer("0000:06:00.0", NULL), nv = buffer("0000:04:00.0", NULL);
	int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), closed = dup(file);
	struct ibv_pd bad = *nic3.pd;

	close(closed);
	bad.handle = 4242;
	same("closed descriptor", nic3.pd, 0, SIZE, closed, LW);
	same("regular file", nic3.pd, 0, SIZE, file, LW);
	same("negative descriptor", nic3.pd, 0, SIZE, -1, LW);
	same("bad PD", &bad, 0, SIZE, nv, LW);
	/* on the pair the oracle refuses, what the kernel checks first */
	same("length 0", nic3.pd, 0, 0, hl, LW);
	same("past the end", nic3.pd, SIZE, 4096, hl, LW);
	same("offset overflow", nic3.pd, UINT64_MAX - 10, 4096, hl, LW);
	same("remote write without local write", nic3.pd, 0, SIZE, hl, IBV_ACCESS_REMOTE_WRITE);
	close(file);
	close(hl);
	close(nv);
}

typedef int (*query_dmabuf_fn)(struct ibv_context *, int, struct efadv_p2p_attr *, uint32_t);

static void check_query(void)
{
	query_dmabuf_fn q = (query_dmabuf_fn)dlsym(RTLD_DEFAULT, "efadv_p2p_query_dmabuf");
	int nv = buffer("0000:04:00.0", NULL), hl = buffer("0000:06:00.0", NULL);
	int drm = buffer("0000:07:00.0", "drm"), sys = buffer(NULL, "system");
	struct efadv_p2p_attr a;

	CHECK((q != NULL) == (mode != PLAIN), "efadv_p2p_query_dmabuf %sfound", q ? "" : "not ");
	if (!q)
		return;
	CHECK_ERR(q(nic3.ctx, nv, &a, sizeof(a)), 0);
	CHECK(a.outcome == EFADV_P2P_OUTCOME_P2P && a.peer_bus == 4 && !a.flags,
	      "nvidia: outcome %u peer %02x flags %#x", a.outcome, a.peer_bus, a.flags);
	CHECK_ERR(q(nic3.ctx, hl, &a, sizeof(a)), 0);
	CHECK(a.outcome == EFADV_P2P_OUTCOME_REFUSED && a.map_type == EFADV_P2P_MAP_NOT_SUPPORTED &&
	      a.peer_bus == 6, "habanalabs: outcome %u map %u peer %02x", a.outcome, a.map_type, a.peer_bus);
	/* "drm": the one DRM device here is the amdgpu, so the peer is known */
	CHECK_ERR(q(nic3.ctx, drm, &a, sizeof(a)), 0);
	CHECK(a.outcome == EFADV_P2P_OUTCOME_BOUNCED && a.peer_bus == 7 &&
	      !(a.flags & EFADV_P2P_FLAG_AMBIGUOUS_PEER),
	      "drm: outcome %u peer %02x flags %#x", a.outcome, a.peer_bus, a.flags);
	CHECK_ERR(q(nic3.ctx, sys, &a, sizeof(a)), ENOENT);
	CHECK_ERR(q(nic5.ctx, nv, &a, sizeof(a)), 0);
	if (mode == TOPOLOGY)
		CHECK(a.outcome == EFADV_P2P_OUTCOME_REFUSED && a.source == EFADV_P2P_SOURCE_TOPOLOGY_FILE,
		      "blocked NIC, topology file: outcome %u source %u", a.outcome, a.source);
	else
		CHECK(a.outcome == EFADV_P2P_OUTCOME_P2P && a.source == EFADV_P2P_SOURCE_COMPUTED,
		      "blocked NIC: outcome %u source %u", a.outcome, a.source);
	close(nv);
	close(hl);
	close(drm);
	close(sys);
}

/* stderr goes to a memory file, to count the library's lines */
static int capture_stderr(void)
{
	int fd = memfd_create("stderr", MFD_CLOEXEC), saved = dup(STDERR_FILENO);

	dup2(fd, STDERR_FILENO);
	close(fd);
	return saved;
}

static void check_log(int saved)
{
	char text[16384], *p;
	ssize_t n;
	int lines = 0, want = mode == OFF || mode == PLAIN ? 0 : 2;

	lseek(STDERR_FILENO, 0, SEEK_SET);
	n = read(STDERR_FILENO, text, sizeof(text) - 1);
	text[n > 0 ? n : 0] = 0;
	dup2(saved, STDERR_FILENO);
	close(saved);
	fputs(text, stdout);
	for (p = text; (p = strstr(p, "efap2p: error: ibv_reg_dmabuf_mr: ")); p++)
		lines++;
	CHECK(lines == want, "%d refusal lines logged, want %d (one a pair)", lines, want);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "enforce", "topology", "advise", "off", "plain" };
	int saved;

	for (mode = 0; argc == 2 && mode <= PLAIN; mode++)
		if (!strcmp(argv[1], names[mode]))
			break;
	if (argc != 2 || mode > PLAIN) {
		fprintf(stderr, "usage: %s enforce|topology|advise|off|plain\n", argv[0]);
		return 2;
	}
	CHECK(shim_loaded() == (mode != PLAIN), "libefap2p is %sloaded", shim_loaded() ? "" : "not ");
	sim = efasim_api();
	open_dev(&nic3);
	open_dev(&nic5);
	saved = capture_stderr();
	check_pairs();
	check_errors();
	check_query();
	check_log(saved);
	return check_exit("test_dmabuf");
}
