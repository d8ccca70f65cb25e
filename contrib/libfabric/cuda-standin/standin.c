// SPDX-License-Identifier: MIT
/*
 * A stand-in for libcuda.so.1 and libcudart.so, for efap2p's libfabric
 * check (contrib/libfabric/check.sh) where no GPU and no CUDA exist.
 *
 * It enumerates the machine's NVIDIA GPUs (PCI vendor 0x10de, class 0x0300
 * or 0x0302) from sysfs (SYSFS_PATH, as libibverbs reads it, else /sys), in
 * PCI address order, and answers what libfabric asks of a driver without a
 * context: how many devices, a device's PCI address, whether it exports
 * dma-bufs. It has no device memory: creating a context or allocating
 * fails with CUDA_ERROR_NOT_SUPPORTED, so libfabric's registration probe
 * always fails in it, and no pointer is device memory. It measures nothing
 * a real driver costs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "cuda_runtime.h"

#define STANDIN_EXPORT __attribute__((visibility("default")))
#define STANDIN_MAX_GPUS 64

struct standin_gpu {
	unsigned int domain, bus, device, function;
};

static struct standin_gpu standin_gpus[STANDIN_MAX_GPUS];
static int standin_gpu_count;
static pthread_once_t standin_once = PTHREAD_ONCE_INIT;

static int standin_read_hex(const char *root, const char *dev,
			    const char *attr, unsigned long *value)
{
	char path[4096], buf[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", root, dev,
		 attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	*value = strtoul(buf, NULL, 16);
	return 0;
}

static int standin_gpu_cmp(const void *a, const void *b)
{
	const struct standin_gpu *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->function < y->function ? -1 : x->function > y->function;
}

static void standin_enumerate(void)
{
	const char *root = getenv("SYSFS_PATH");
	char path[4096];
	struct dirent *e;
	unsigned long vendor, class;
	struct standin_gpu g;
	DIR *d;

	if (!root || !*root)
		root = "/sys";
	snprintf(path, sizeof(path), "%s/bus/pci/devices", root);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)) && standin_gpu_count < STANDIN_MAX_GPUS) {
		if (sscanf(e->d_name, "%x:%x:%x.%x", &g.domain, &g.bus,
			   &g.device, &g.function) != 4)
			continue;
		if (standin_read_hex(root, e->d_name, "vendor", &vendor) ||
		    standin_read_hex(root, e->d_name, "class", &class))
			continue;
		if (vendor != 0x10de ||
		    (class >> 8 != 0x0300 && class >> 8 != 0x0302))
			continue;
		standin_gpus[standin_gpu_count++] = g;
	}
	closedir(d);
	qsort(standin_gpus, standin_gpu_count, sizeof(standin_gpus[0]),
	      standin_gpu_cmp);
}

static int standin_count(void)
{
	pthread_once(&standin_once, standin_enumerate);
	return standin_gpu_count;
}

/* The errors the stand-in returns, by the driver's names and words (the
 * runtime's codes it returns are the same numbers). */
static const struct standin_error {
	int code;
	const char *name, *words;
} standin_errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
	  "operation not supported (the efap2p CUDA stand-in has no device memory)" },
};

static const struct standin_error *standin_error(int code)
{
	static const struct standin_error unknown = { -1, "CUDA_ERROR_UNKNOWN", "unknown error" };
	size_t i;

	for (i = 0; i < sizeof(standin_errors) / sizeof(standin_errors[0]); i++)
		if (standin_errors[i].code == code)
			return &standin_errors[i];
	return &unknown;
}

/* The driver API */

STANDIN_EXPORT CUresult cuInit(unsigned int flags)
{
	(void)flags;
	return standin_count() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

STANDIN_EXPORT CUresult cuGetErrorName(CUresult error, const char **pstr)
{
	if (!pstr)
		return CUDA_ERROR_INVALID_VALUE;
	*pstr = standin_error(error)->name;
	return CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuGetErrorString(CUresult error, const char **pstr)
{
	if (!pstr)
		return CUDA_ERROR_INVALID_VALUE;
	*pstr = standin_error(error)->words;
	return CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= standin_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

STANDIN_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
					     CUdevice dev)
{
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= standin_count())
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		*pi = (int)standin_gpus[dev].domain;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		*pi = (int)standin_gpus[dev].bus;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		*pi = (int)standin_gpus[dev].device;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
		*pi = 1;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

STANDIN_EXPORT CUresult cuDeviceCanAccessPeer(int *can_access_peer, CUdevice dev,
					      CUdevice peer)
{
	if (!can_access_peer || dev < 0 || dev >= standin_count() ||
	    peer < 0 || peer >= standin_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*can_access_peer = 0;
	return CUDA_SUCCESS;
}

/* No pointer is device memory here. */
STANDIN_EXPORT CUresult cuPointerGetAttribute(void *data,
					      CUpointer_attribute attribute,
					      CUdeviceptr ptr)
{
	(void)data;
	(void)attribute;
	(void)ptr;
	return CUDA_ERROR_INVALID_VALUE;
}

STANDIN_EXPORT CUresult cuPointerGetAttributes(unsigned int num_attributes,
					       CUpointer_attribute *attributes,
					       void **data, CUdeviceptr ptr)
{
	(void)num_attributes;
	(void)attributes;
	(void)data;
	(void)ptr;
	return CUDA_ERROR_INVALID_VALUE;
}

STANDIN_EXPORT CUresult cuPointerSetAttribute(const void *data,
					      CUpointer_attribute attribute,
					      CUdeviceptr ptr)
{
	(void)data;
	(void)attribute;
	(void)ptr;
	return CUDA_ERROR_INVALID_VALUE;
}

STANDIN_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize,
					     CUdeviceptr dptr)
{
	(void)pbase;
	(void)psize;
	(void)dptr;
	return CUDA_ERROR_INVALID_VALUE;
}

STANDIN_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle,
						      CUdeviceptr dptr,
						      size_t size,
						      CUmemRangeHandleType type,
						      unsigned long long flags)
{
	(void)handle;
	(void)dptr;
	(void)size;
	(void)type;
	(void)flags;
	return CUDA_ERROR_INVALID_VALUE;
}

/* What needs a context or device memory: not supported. */
#define STANDIN_UNSUPPORTED(name, params)				\
	STANDIN_EXPORT CUresult name params				\
	{								\
		return CUDA_ERROR_NOT_SUPPORTED;			\
	}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
STANDIN_UNSUPPORTED(cuCtxCreate_v2, (CUcontext *pctx, unsigned int flags, CUdevice dev))
STANDIN_UNSUPPORTED(cuCtxDestroy, (CUcontext ctx))
STANDIN_UNSUPPORTED(cuMemAlloc, (CUdeviceptr *dptr, size_t bytesize))
STANDIN_UNSUPPORTED(cuMemFree, (CUdeviceptr dptr))
STANDIN_UNSUPPORTED(cuStreamCreate, (CUstream *phstream, unsigned int flags))
STANDIN_UNSUPPORTED(cuStreamDestroy, (CUstream hstream))
STANDIN_UNSUPPORTED(cuStreamSynchronize, (CUstream hstream))
STANDIN_UNSUPPORTED(cuEventCreate, (CUevent *phevent, unsigned int flags))
STANDIN_UNSUPPORTED(cuEventDestroy, (CUevent hevent))
STANDIN_UNSUPPORTED(cuEventRecord, (CUevent hevent, CUstream hstream))
STANDIN_UNSUPPORTED(cuEventSynchronize, (CUevent hevent))
STANDIN_UNSUPPORTED(cuEventQuery, (CUevent hevent))
STANDIN_UNSUPPORTED(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t count, CUstream hstream))

/* The runtime API */

#define STANDIN_RT_UNSUPPORTED(name, params)				\
	STANDIN_EXPORT cudaError_t name params				\
	{								\
		return cudaErrorNotSupported;				\
	}

STANDIN_RT_UNSUPPORTED(cudaMemcpy, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind))
STANDIN_RT_UNSUPPORTED(cudaMemcpyAsync, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream))
STANDIN_RT_UNSUPPORTED(cudaFree, (void *ptr))
STANDIN_RT_UNSUPPORTED(cudaMalloc, (void **ptr, size_t size))
STANDIN_RT_UNSUPPORTED(cudaHostRegister, (void *ptr, size_t size, unsigned int flags))
STANDIN_RT_UNSUPPORTED(cudaHostUnregister, (void *ptr))
STANDIN_RT_UNSUPPORTED(cudaIpcOpenMemHandle, (void **devptr, cudaIpcMemHandle_t handle, unsigned int flags))
STANDIN_RT_UNSUPPORTED(cudaIpcGetMemHandle, (cudaIpcMemHandle_t *handle, void *devptr))
STANDIN_RT_UNSUPPORTED(cudaIpcCloseMemHandle, (void *devptr))
STANDIN_RT_UNSUPPORTED(cudaHostAlloc, (void **phost, size_t size, unsigned int flags))
STANDIN_RT_UNSUPPORTED(cudaFreeHost, (void *ptr))
#pragma GCC diagnostic pop

STANDIN_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

STANDIN_EXPORT const char *cudaGetErrorName(cudaError_t error)
{
	return error == cudaErrorNotSupported ? "cudaErrorNotSupported" :
	       error == cudaErrorNoDevice ? "cudaErrorNoDevice" :
	       error == cudaSuccess ? "cudaSuccess" : "cudaErrorUnknown";
}

STANDIN_EXPORT const char *cudaGetErrorString(cudaError_t error)
{
	return standin_error(error)->words;
}

STANDIN_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return cudaErrorInvalidValue;
	*count = standin_count();
	return *count ? cudaSuccess : cudaErrorNoDevice;
}

static __thread int standin_current_device;

STANDIN_EXPORT cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return cudaErrorInvalidValue;
	if (!standin_count())
		return cudaErrorNoDevice;
	*device = standin_current_device;
	return cudaSuccess;
}

STANDIN_EXPORT cudaError_t cudaSetDevice(int device)
{
	if (device < 0 || device >= standin_count())
		return cudaErrorInvalidDevice;
	standin_current_device = device;
	return cudaSuccess;
}
