// SPDX-License-Identifier: MIT
/*
 * ibv_reg_dmabuf_mr@IBVERBS_1.12: refuse, without asking the kernel, a
 * registration the oracle knows cannot work; otherwise the real function.
 *
 * The fast refusal answers only what the kernel would have refused for
 * peer-to-peer DMA: every check the kernel makes before the exporter
 * attaches the NIC -- the page offsets of offset and iova, the access flags
 * (uverbs', ib_check_mr_access's, the efa driver's for what the NIC
 * supports), the range and the buffer's size -- is made first, and any
 * call that one of them would fail goes to the real function, whose errno
 * the caller then gets, as without the library. A descriptor that is not
 * positively a dma-buf, a NULL PD, a NIC that is not EFA pass through too
 * (NCCL's probe, ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0), gets the kernel's
 * answer). A kernel refusal is learnt for the pair only when those checks
 * passed, so that only a refusal about the peer is taken for one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

#include "front.h"

/* What uverbs takes for REG_DMABUF_MR; anything else is EINVAL. */
#define DMABUF_ACCESS                                                                      \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)
/* rdma-core 50 and later; the bit libefa reports where it knows it */
#ifndef EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE
#define EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE (1 << 3)
#endif
/* efap2p_dev_access: known, and not an EFA device */
#define ACCESS_KNOWN (1u << 31)
#define ACCESS_NOT_EFA (1u << 30)

/*
 * The access flags the NIC's driver supports for an MR (LOCAL_WRITE, and
 * REMOTE_READ and REMOTE_WRITE as its caps say), from libefa's own answer,
 * once per device; 0 for a device that is not EFA (its checks are not
 * known: nothing is refused fast there).
 */
static uint32_t supported_access(int dev, struct ibv_context *ctx)
{
	_Atomic uint32_t *slot = efap2p_dev_access(dev);
	uint32_t a = atomic_load_explicit(slot, memory_order_relaxed);
	efap2p_query_device_fn real;
	struct efadv_device_attr attr;

	if (a & ACCESS_KNOWN)
		return a & ACCESS_NOT_EFA ? 0 : a & ~ACCESS_KNOWN;
	real = efap2p_real_query_device();
	if (!real || real(ctx, &attr, sizeof(attr))) {
		a = ACCESS_KNOWN | ACCESS_NOT_EFA;
	} else {
		/* libefa before 50 does not report RDMA_WRITE: REMOTE_WRITE is
		 * then not known to be supported, and such calls pass */
		a = ACCESS_KNOWN | IBV_ACCESS_LOCAL_WRITE;
		if (attr.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ)
			a |= IBV_ACCESS_REMOTE_READ;
		if (attr.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE)
			a |= IBV_ACCESS_REMOTE_WRITE;
	}
	atomic_store_explicit(slot, a, memory_order_relaxed);
	return a & ACCESS_NOT_EFA ? 0 : a & ~ACCESS_KNOWN;
}

/* The page size, asked of libc once. */
static uint64_t page_size(void)
{
	static _Atomic uint64_t page;
	uint64_t p = atomic_load_explicit(&page, memory_order_relaxed);

	if (!p) {
		p = (uint64_t)sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&page, p, memory_order_relaxed);
	}
	return p;
}

/*
 * Would every check the kernel makes before the exporter attaches pass?
 * size is the dma-buf's (fstat), 0 if unknown: then it cannot be told.
 */
static int checks_pass(int dev, struct ibv_context *ctx, uint64_t offset, size_t length,
		       uint64_t iova, int access, uint64_t size)
{
	uint64_t page = page_size(), end;
	uint32_t acc = (uint32_t)access, supp;

	if ((offset & (page - 1)) != (iova & (page - 1)))
		return 0;
	if (acc & ~(uint32_t)DMABUF_ACCESS)
		return 0;
	if ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(acc & IBV_ACCESS_LOCAL_WRITE))
		return 0;
	supp = supported_access(dev, ctx);
	if (!supp || (acc & ~(uint32_t)IBV_ACCESS_RELAXED_ORDERING & ~supp))
		return 0;
	end = offset + length;
	if (end < offset || !end || end > UINT64_MAX - page + 1)
		return 0;
	return size && end <= size;
}

/*
 * Can a registration on dev be refused before the kernel? Only when some
 * exporter is refused for its NIC (from the index, or asked once of the
 * core), or the kernel has refused one already. When not, buffers need not
 * be identified: the warm path costs no system call. Unknown (a forked
 * child, no core) counts as yes. Called inside the guard g.
 */
static int refusable_slow(const struct efap2p_guard *g, struct ibv_device *device, int dev)
{
	_Atomic int *slot = efap2p_dev_refusable(dev);
	const struct efap2p_index *ix = efap2p_precomp();
	struct efap2p_index_nic n;
	uint64_t key;
	int out = 1;

	if (ix && !efap2p_dev_key(dev, device, &key) && !efap2p_index_nic(ix, key, &n))
		out = !!(n.flags & EFAP2P_INDEX_NIC_REFUSABLE);
	else if (efap2p_core_refusable(g, efap2p_dev_name(dev), &out))
		return 1;
	atomic_store_explicit(slot, out ? EFAP2P_YES : EFAP2P_NO, memory_order_relaxed);
	return out;
}

/* The device index of the PD's NIC, or -1 to pass the call through. */
static int nic_of(struct ibv_pd *pd)
{
	struct efap2p_guard g;
	int dev;

	if (efap2p_config()->mode == EFAP2P_MODE_OFF)
		return -1;
	if (!pd || !pd->context || !pd->context->device)
		return -1;
	dev = efap2p_dev_find(pd->context->device);
	if (dev >= 0)
		return dev;
	efap2p_guard_enter(&g);
	dev = efap2p_dev_of(pd->context->device);
	efap2p_guard_leave(&g);
	return dev;
}

/* The pair to judge the registration by, or NULL to pass it through. */
static struct efap2p_pair *judge(struct ibv_pd *pd, int dev, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access, struct efap2p_pair *tmp,
				 int refusable_only)
{
	struct efap2p_dmabuf_id id;
	struct efap2p_pair *p;
	struct efap2p_guard g;
	int r, err;

	r = atomic_load_explicit(efap2p_dev_refusable(dev), memory_order_relaxed);
	if (refusable_only && r == EFAP2P_NO)
		return NULL;
	if (refusable_only && r == EFAP2P_UNKNOWN) {
		efap2p_guard_enter(&g);
		r = refusable_slow(&g, pd->context->device, dev);
		efap2p_guard_leave(&g);
		if (!r)
			return NULL;
	}
	if (efap2p_dmabuf_identify(fd, &id) ||
	    !checks_pass(dev, pd->context, offset, length, iova, access, id.size))
		return NULL;
	p = efap2p_pair_find(dev, id.exp);
	if (!p) {
		efap2p_guard_enter(&g);
		p = efap2p_pair_get(&g, pd->context->device, dev, id.exp, tmp, &err);
		efap2p_guard_leave(&g);
	}
	if (!p || p->core.decision == EFAP2P_DMABUF_PASS)
		return NULL;
	return p;
}

static int enforcing(void)
{
	return efap2p_config()->mode == EFAP2P_MODE_ENFORCE;
}

static void log_once(struct efap2p_pair *p, const char *fmt, const char *a, const char *b)
{
	struct efap2p_guard g;

	if (atomic_exchange(&p->logged, 1))
		return;
	efap2p_guard_enter(&g);
	efap2p_log(EFAP2P_LOG_ERROR, fmt, a, b);
	efap2p_guard_leave(&g);
}

/* The errno to fail with before the kernel, or 0 to ask it. */
static int fast_fail(struct efap2p_pair *p, int access)
{
	uint64_t k = atomic_load_explicit(&p->kernel_refusal, memory_order_relaxed);
	uint32_t flags = (uint32_t)k;

	if (p->core.decision == EFAP2P_DMABUF_REFUSE) {
		if (!atomic_load_explicit(&p->logged, memory_order_relaxed))
			log_once(p, "ibv_reg_dmabuf_mr: %s: %s",
				 enforcing() ? "refused without asking the kernel (EFAP2P_MODE=advise lets the kernel decide)"
					     : "advise mode, asking the kernel anyway",
				 efap2p_pair_summary(p));
		return enforcing() ? EOPNOTSUPP : 0;
	}
	if (k && ((uint32_t)access & flags) == flags && enforcing())
		return (int)(k >> 32);
	return 0;
}

/*
 * The kernel refused a registration with err (EOPNOTSUPP, or the ENOTSUPP
 * NVIDIA's exporter returns) after every check before the attach passed:
 * remember it for the pair when the oracle allowed every device the
 * exporter may own, so that which device owns the buffer cannot explain
 * it. errno is left as it was.
 */
static void learn_refusal(struct efap2p_pair *p, int access, int err)
{
	uint64_t k = (uint64_t)err << 32 | (uint32_t)access, old;
	struct efap2p_guard g;

	if (p->core.decision != EFAP2P_DMABUF_ALLOW || !p->core.all_allowed)
		return;
	old = atomic_load_explicit(&p->kernel_refusal, memory_order_relaxed);
	/* keep the smallest set of flags known to be refused */
	while ((!old || ((uint32_t)old & (uint32_t)access) == (uint32_t)access) &&
	       !atomic_compare_exchange_weak(&p->kernel_refusal, &old, k))
		;
	atomic_store_explicit(efap2p_dev_refusable(p->dev), EFAP2P_YES, memory_order_relaxed);
	if (atomic_exchange(&p->logged, 1))
		return;
	efap2p_guard_enter(&g);
	efap2p_log(EFAP2P_LOG_ERROR,
		   "ibv_reg_dmabuf_mr: the kernel refused %s a dma-buf from \"%s\" (%s) although the PCI path allows it: the NIC or the platform blocks peer access (record it with 'efap2p export --peer-blocked'); %s",
		   efap2p_dev_name(p->dev), efap2p_exp_name(p->exp),
		   err == EOPNOTSUPP ? "EOPNOTSUPP" : "ENOTSUPP",
		   enforcing() ? "later registrations on this pair fail without asking it"
			       : "advise mode: later registrations still ask it");
	efap2p_guard_leave(&g);
}

__attribute__((visibility("default")))
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	efap2p_reg_dmabuf_mr_fn real = efap2p_real_reg_dmabuf_mr();
	struct efap2p_pair tmp, *p = NULL;
	int saved = errno, dev, err;
	struct ibv_mr *mr;

	if (!real) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (efap2p_reentered()) {
		/* a signal handler interrupting a slow path of the library in
		 * this thread: no lock may be taken; the kernel decides */
		errno = saved;
		return real(pd, offset, length, iova, fd, access);
	}
	dev = nic_of(pd);
	if (dev >= 0)
		p = judge(pd, dev, offset, length, iova, fd, access, &tmp, 1);
	if (p && (err = fast_fail(p, access))) {
		errno = err;
		return NULL;
	}
	errno = saved;
	mr = real(pd, offset, length, iova, fd, access);
	if (mr || dev < 0 || (errno != EOPNOTSUPP && errno != EFAP2P_ENOTSUPP))
		return mr;
	/* a refusal: which pair was it? (the warm path may not have asked) */
	err = errno;
	if (!p)
		p = judge(pd, dev, offset, length, iova, fd, access, &tmp, 0);
	if (p)
		learn_refusal(p, access, err);
	errno = err;
	return NULL;
}
