// SPDX-License-Identifier: MIT
/*
 * efadv_query_device@EFA_1.1: libefa's answer, plus the P2P_DMA bit when
 * the NIC gets true P2P DMA into at least one accelerator of the machine.
 * The bit is worked out once per device -- from the topology file's index
 * when it covers the NIC, else by the Go core -- and kept here; the warm
 * path finds it by the device's pointer, without a lock and without Go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "front.h"

/* The answer from the topology file's index: 1 or 0, -1 when it has none
 * for this NIC. */
static int from_index(struct ibv_device *device, int dev)
{
	const struct efap2p_index *ix = efap2p_precomp();
	struct efap2p_index_nic n;
	uint64_t key;

	if (!ix || efap2p_dev_key(dev, device, &key) || efap2p_index_nic(ix, key, &n))
		return -1;
	if (efap2p_config()->log_level >= EFAP2P_LOG_INFO && !efap2p_precomp_strings())
		efap2p_log(EFAP2P_LOG_INFO, "%s (from %s)", efap2p_index_str(ix, n.summary),
			   efap2p_precomp_file());
	return !!(n.flags & EFAP2P_INDEX_NIC_REACHES);
}

/* Works the answer out, inside a guard. In EFAP2P_MODE=off (off set) the
 * answer kept is no, so that later calls pass straight through. A device
 * past the table's room (more than 256 of them) is answered every time,
 * never kept. */
static int p2p_dma_slow(struct ibv_device *device, int off)
{
	struct efap2p_core_nic out;
	struct efap2p_guard g;
	int dev, caps = EFAP2P_UNKNOWN, reaches;

	efap2p_guard_enter(&g);
	dev = efap2p_dev_of(device);
	if (dev >= 0)
		caps = atomic_load_explicit(efap2p_dev_caps(dev), memory_order_acquire);
	if (caps != EFAP2P_UNKNOWN) {
		efap2p_dev_set_caps(device, dev, caps);	/* this pointer's slot too */
		efap2p_guard_leave(&g);
		return caps == EFAP2P_YES;
	}
	if (off) {
		reaches = 0;
	} else if ((reaches = from_index(device, dev)) < 0) {
		switch (efap2p_core_nic(&g, device->name, &out)) {
		case ECHILD:	/* a forked child: Go is out of reach, nothing cached */
		case ELIBACC:	/* no core: said once already */
			efap2p_guard_leave(&g);
			return 0;
		}
		reaches = out.reaches;
		if (out.summary && *out.summary)
			efap2p_log(EFAP2P_LOG_INFO, "%s", out.summary);
	}
	caps = reaches ? EFAP2P_YES : EFAP2P_NO;
	if (dev >= 0)
		caps = efap2p_dev_set_caps(device, dev, caps);
	efap2p_guard_leave(&g);
	return caps == EFAP2P_YES;
}

/* Does the NIC of device reach an accelerator? Unknown counts as no. A
 * call from a signal handler that interrupted a slow path of this thread
 * gets only what is cached. The configuration is read before the guard (a
 * first read inside one is taken for a signal handler's). errno is the
 * caller's again after it. Not inlined: the warm path keeps no frame
 * pointer (efap2p_reentered reads this function's frame). */
__attribute__((noinline)) static int p2p_dma_cold(struct ibv_device *device)
{
	int saved = errno, off = efap2p_config()->mode == EFAP2P_MODE_OFF, yes;

	yes = efap2p_reentered() ? 0 : p2p_dma_slow(device, off);
	errno = saved;
	return yes;
}

/*
 * The warm path is one lookup of the cached answer by the device's
 * pointer, beside the real call: no lock, no errno, nothing else called.
 */
__attribute__((visibility("default")))
int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
		       uint32_t inlen)
{
	efap2p_query_device_fn real = efap2p_real_query_device();
	int rc, caps;

	if (!real)
		return EOPNOTSUPP;
	rc = real(ibvctx, attr, inlen);
	if (rc || inlen < EFAP2P_CAPS_END)
		return rc;
	caps = efap2p_dev_caps_of(ibvctx->device);
	if (caps == EFAP2P_YES || (caps == EFAP2P_UNKNOWN && p2p_dma_cold(ibvctx->device)))
		attr->device_caps |= EFADV_DEVICE_ATTR_CAPS_P2P_DMA;
	return rc;
}
