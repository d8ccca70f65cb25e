// SPDX-License-Identifier: MIT
/*
 * efadv_query_device@EFA_1.1: libefa's answer, plus the P2P_DMA bit when
 * the NIC gets true P2P DMA into at least one accelerator of the machine.
 * The bit is worked out once per device by the Go core and kept here; the
 * warm path reads it without a lock and without Go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "front.h"

/* Does the NIC of device reach an accelerator? Unknown counts as no. */
static int p2p_dma(struct ibv_device *device)
{
	int dev = efap2p_dev_index(device->name), caps, want = EFAP2P_UNKNOWN;
	struct efap2p_core_nic out;
	_Atomic int *slot;

	if (dev < 0)
		return 0;
	slot = efap2p_dev_caps(dev);
	caps = atomic_load_explicit(slot, memory_order_acquire);
	if (caps != EFAP2P_UNKNOWN)
		return caps == EFAP2P_YES;
	switch (efap2p_core_nic(device->name, &out)) {
	case ECHILD:	/* a forked child: Go is out of reach, nothing cached */
	case ELIBACC:	/* no core: said once already */
		return 0;
	}
	caps = out.reaches ? EFAP2P_YES : EFAP2P_NO;
	/* one thread wins and logs */
	if (atomic_compare_exchange_strong(slot, &want, caps))
		efap2p_log(EFAP2P_LOG_INFO, "%s", out.summary);
	return caps == EFAP2P_YES;
}

__attribute__((visibility("default")))
int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
		       uint32_t inlen)
{
	efap2p_query_device_fn real = efap2p_real_query_device();
	int rc, saved;

	if (!real)
		return EOPNOTSUPP;
	rc = real(ibvctx, attr, inlen);
	if (rc || inlen < EFAP2P_CAPS_END || efap2p_config()->mode == EFAP2P_MODE_OFF)
		return rc;
	saved = errno;
	if (p2p_dma(ibvctx->device))
		attr->device_caps |= EFADV_DEVICE_ATTR_CAPS_P2P_DMA;
	errno = saved;
	return rc;
}
