// SPDX-License-Identifier: MIT
/*
 * ibv_reg_dmabuf_mr@IBVERBS_1.12: refuse, without asking the kernel, a
 * registration the oracle knows cannot work; otherwise the real function.
 *
 * Everything that is not about peer-to-peer DMA is the real function's to
 * answer: a descriptor that is not positively a dma-buf, a NULL PD, a
 * length, range or access flags the kernel rejects before it looks at the
 * exporter all pass through. A PD the kernel would reject is not seen: on
 * a refused pair the answer is EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>

#include "front.h"

/* Rejected by the kernel before the exporter is asked: leave those to it. */
static int plausible(uint64_t offset, size_t length, int access, uint64_t size)
{
	if (!length || offset + length < offset)
		return 0;
	if (size && offset + length > size)
		return 0;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return 0;
	return 1;
}

/*
 * Can a registration on dev be refused before the kernel? Only when some
 * exporter is refused for its NIC (asked once of the core), or the kernel
 * has refused one already. When not, buffers need not be identified: the
 * warm path costs no system call. Unknown (a forked child, no core) counts
 * as yes.
 */
static int refusable(int dev)
{
	_Atomic int *slot = efap2p_dev_refusable(dev);
	int r = atomic_load_explicit(slot, memory_order_relaxed), out = 1;

	if (r != EFAP2P_UNKNOWN)
		return r == EFAP2P_YES;
	if (efap2p_core_refusable(efap2p_dev_name(dev), &out) == 0)
		atomic_store_explicit(slot, out ? EFAP2P_YES : EFAP2P_NO,
				      memory_order_relaxed);
	return out;
}

/* The device index of the PD's NIC, or -1 to pass the call through. */
static int nic_of(struct ibv_pd *pd)
{
	if (efap2p_config()->mode == EFAP2P_MODE_OFF)
		return -1;
	if (!pd || !pd->context || !pd->context->device)
		return -1;
	return efap2p_dev_index(pd->context->device->name);
}

/* The pair to judge the registration by, or NULL to pass it through. */
static struct efap2p_pair *judge(int dev, uint64_t offset, size_t length, int fd, int access,
				 struct efap2p_pair *tmp)
{
	struct efap2p_dmabuf_id id;
	struct efap2p_pair *p;
	int err;

	if (efap2p_dmabuf_identify(fd, &id) || !plausible(offset, length, access, id.size))
		return NULL;
	p = efap2p_pair_get(dev, id.exp, tmp, &err);
	if (!p || p->core.decision == EFAP2P_DMABUF_PASS)
		return NULL;
	return p;
}

static int enforcing(void)
{
	return efap2p_config()->mode == EFAP2P_MODE_ENFORCE;
}

/* The errno to fail with before the kernel, or 0 to ask it. */
static int fast_fail(struct efap2p_pair *p, int access)
{
	uint64_t k = atomic_load_explicit(&p->kernel_refusal, memory_order_relaxed);
	uint32_t flags = (uint32_t)k;

	if (p->core.decision == EFAP2P_DMABUF_REFUSE) {
		if (!atomic_exchange(&p->logged, 1))
			efap2p_log(EFAP2P_LOG_ERROR, "ibv_reg_dmabuf_mr: %s: %s",
				   enforcing() ? "refused without asking the kernel (EFAP2P_MODE=advise lets the kernel decide)"
					       : "advise mode, asking the kernel anyway",
				   p->core.summary);
		return enforcing() ? EOPNOTSUPP : 0;
	}
	if (k && ((uint32_t)access & flags) == flags && enforcing())
		return (int)(k >> 32);
	return 0;
}

/*
 * The kernel refused a registration with err (EOPNOTSUPP, or the ENOTSUPP
 * NVIDIA's exporter returns): remember it for the pair when the oracle
 * allowed every device the exporter may own, so that which device owns
 * the buffer cannot explain it. errno is left as it was.
 */
static void learn_refusal(struct efap2p_pair *p, int access, int err)
{
	uint64_t k = (uint64_t)err << 32 | (uint32_t)access, old;

	if (p->core.decision != EFAP2P_DMABUF_ALLOW || !p->core.all_allowed)
		return;
	old = atomic_load_explicit(&p->kernel_refusal, memory_order_relaxed);
	/* keep the smallest set of flags known to be refused */
	while ((!old || ((uint32_t)old & (uint32_t)access) == (uint32_t)access) &&
	       !atomic_compare_exchange_weak(&p->kernel_refusal, &old, k))
		;
	atomic_store_explicit(efap2p_dev_refusable(p->dev), EFAP2P_YES, memory_order_relaxed);
	if (!atomic_exchange(&p->logged, 1))
		efap2p_log(EFAP2P_LOG_ERROR,
			   "ibv_reg_dmabuf_mr: the kernel refused %s a dma-buf from \"%s\" (%s) although the PCI path allows it: the NIC or the platform blocks peer access (record it with 'efap2p export --peer-blocked'); %s",
			   efap2p_dev_name(p->dev), efap2p_exp_name(p->exp),
			   err == EOPNOTSUPP ? "EOPNOTSUPP" : "ENOTSUPP",
			   enforcing() ? "later registrations on this pair fail without asking it"
				       : "advise mode: later registrations still ask it");
	errno = err;
}

__attribute__((visibility("default")))
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	efap2p_reg_dmabuf_mr_fn real = efap2p_real_reg_dmabuf_mr();
	struct efap2p_pair tmp, *p = NULL;
	int saved = errno, dev = nic_of(pd), err;
	struct ibv_mr *mr;

	if (!real) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (dev >= 0 && refusable(dev))
		p = judge(dev, offset, length, fd, access, &tmp);
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
		p = judge(dev, offset, length, fd, access, &tmp);
	if (p)
		learn_refusal(p, access, err);
	errno = err;
	return NULL;
}
