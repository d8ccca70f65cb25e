/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the CUDA driver API header, written for efap2p's libfabric
 * check (contrib/libfabric/check.sh): it declares only what libfabric's
 * CUDA support (src/hmem_cuda.c and its callers) names, so that libfabric
 * can be built with --with-cuda --enable-cuda-dlopen where no CUDA toolkit
 * can be installed. It is not NVIDIA's header; build nothing against it but
 * libfabric for that check, and run what you build only with the stand-in
 * library beside it (standin.c).
 */
#ifndef EFAP2P_CUDA_STANDIN_CUDA_H
#define EFAP2P_CUDA_STANDIN_CUDA_H

#include <stddef.h>

#define CUDAAPI

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

typedef enum cudaError_enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_NOT_SUPPORTED = 801,
} CUresult;

typedef enum CUpointer_attribute_enum {
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
} CUpointer_attribute;

typedef enum CUmemorytype_enum {
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
} CUmemorytype;

typedef enum CUdevice_attribute_enum {
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
	CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
} CUdevice_attribute;

typedef enum CUmemRangeHandleType_enum {
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
} CUmemRangeHandleType;

typedef enum CUmemRangeFlags_enum {
	CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE = 1,
} CUmemRangeFlags;

enum {
	CU_STREAM_NON_BLOCKING = 1,
	CU_EVENT_DISABLE_TIMING = 2,
};

CUresult cuInit(unsigned int flags);
CUresult cuGetErrorName(CUresult error, const char **pstr);
CUresult cuGetErrorString(CUresult error, const char **pstr);
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
			       CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned int num_attributes,
				CUpointer_attribute *attributes, void **data,
				CUdeviceptr ptr);
CUresult cuPointerSetAttribute(const void *data, CUpointer_attribute attribute,
			       CUdeviceptr ptr);
CUresult cuDeviceCanAccessPeer(int *can_access_peer, CUdevice dev,
			       CUdevice peer);
CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize,
			      CUdeviceptr dptr);
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr,
				       size_t size,
				       CUmemRangeHandleType handle_type,
				       unsigned long long flags);
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
			      CUdevice dev);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree(CUdeviceptr dptr);
CUresult cuStreamCreate(CUstream *phstream, unsigned int flags);
CUresult cuStreamDestroy(CUstream hstream);
CUresult cuStreamSynchronize(CUstream hstream);
CUresult cuEventCreate(CUevent *phevent, unsigned int flags);
CUresult cuEventDestroy(CUevent hevent);
CUresult cuEventRecord(CUevent hevent, CUstream hstream);
CUresult cuEventSynchronize(CUevent hevent);
CUresult cuEventQuery(CUevent hevent);
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t count,
			   CUstream hstream);

#endif
