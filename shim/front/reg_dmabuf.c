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

/* The pair to judge the registration by, or NULL to pass it through. */
static struct efap2p_pair *judge(struct ibv_pd *pd, uint64_t offset, size_t length, int fd,
				 int access, struct efap2p_pair *tmp)
{
	struct efap2p_dmabuf_id id;
	struct efap2p_pair *p;
	int dev, err;

	if (efap2p_config()->mode == EFAP2P_MODE_OFF)
		return NULL;
	if (!pd || !pd->context || !pd->context->device)
		return NULL;
	if (efap2p_dmabuf_identify(fd, &id) || !plausible(offset, length, access, id.size))
		return NULL;
	dev = efap2p_dev_index(pd->context->device->name);
	if (dev < 0)
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

/* Remembers what the kernel said about an allowed pair. errno is kept. */
static void learn(struct efap2p_pair *p, const struct ibv_mr *mr, int access)
{
	int err = errno;
	uint64_t k, old;

	if (mr) {
		atomic_store_explicit(&p->confirmed, 1, memory_order_relaxed);
		return;
	}
	/* a refusal that which device owns the buffer could explain is not
	 * the pair's: the next buffer may come from an allowed device */
	if ((err != EOPNOTSUPP && err != EFAP2P_ENOTSUPP) || !p->core.all_allowed)
		return;
	k = (uint64_t)err << 32 | (uint32_t)access;
	old = atomic_load_explicit(&p->kernel_refusal, memory_order_relaxed);
	/* keep the smallest set of flags known to be refused */
	while ((!old || ((uint32_t)old & (uint32_t)access) == (uint32_t)access) &&
	       !atomic_compare_exchange_weak(&p->kernel_refusal, &old, k))
		;
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
	struct efap2p_pair tmp, *p;
	struct ibv_mr *mr;
	int saved = errno, fail;

	if (!real) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	p = judge(pd, offset, length, fd, access, &tmp);
	if (p && (fail = fast_fail(p, access))) {
		errno = fail;
		return NULL;
	}
	errno = saved;
	mr = real(pd, offset, length, iova, fd, access);
	if (p)
		learn(p, mr, access);
	return mr;
}
