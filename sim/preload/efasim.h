// SPDX-License-Identifier: MIT
/*
 * libefasim: the public API of the EFA host emulator's preload library.
 *
 * Every function here is exported with C linkage and plain types, so that a
 * test can reach it from C, from Python (ctypes.CDLL(None) sees a preloaded
 * library) or from Go (purego.Dlsym(RTLD_DEFAULT, ...)).
 */
#ifndef EFASIM_H
#define EFASIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * efasim_dmabuf_create makes a fake dma-buf of size bytes, exported by the
 * PCI function owner_pci ("0000:53:00.0" or "53:00.0") of the emulated
 * machine. exp_name is the exporter name that fdinfo shows; NULL or "" means
 * the driver bound to owner_pci in the model (e.g. "nvidia"). owner_pci may
 * be NULL or "" for a system-memory exporter (then exp_name is required, e.g.
 * "system"): such a buffer is never a peer and every NIC accepts it.
 *
 * Returns a new file descriptor (close-on-exec) or -1 with errno:
 * ENODEV when no emulated machine is loaded or owner_pci is not one of its
 * functions, EINVAL for a malformed address, a size of 0 or a missing
 * exporter name, or the errno of memfd_create/ftruncate.
 *
 * The descriptor behaves as a dma-buf for the emulated kernel (REG_DMABUF_MR)
 * and for libc: fstatfs() reports DMA_BUF_MAGIC, /proc/self/fdinfo/<fd> lists
 * size, count and exp_name, DMA_BUF_SET_NAME sets the name fdinfo shows.
 */
int efasim_dmabuf_create(const char *owner_pci, const char *exp_name, size_t size);

/*
 * efasim_reg_dmabuf_mr_calls returns how many REG_DMABUF_MR ioctls reached
 * the emulated kernel in this process (accepted or not).
 */
unsigned long efasim_reg_dmabuf_mr_calls(void);

/*
 * efasim_active returns 1 when an emulator configuration is loaded (the
 * process runs inside an emulated EFA host), 0 otherwise.
 */
int efasim_active(void);

#ifdef __cplusplus
}
#endif

#endif /* EFASIM_H */
