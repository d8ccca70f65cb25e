/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the CUDA runtime API header: see cuda.h beside it. Only
 * what libfabric's CUDA support names.
 */
#ifndef EFAP2P_CUDA_STANDIN_CUDA_RUNTIME_H
#define EFAP2P_CUDA_STANDIN_CUDA_RUNTIME_H

#include <stddef.h>

#include "cuda.h"

typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorAlreadyMapped = 208,
	cudaErrorNotSupported = 801,
} cudaError_t;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4,
};

typedef struct CUstream_st *cudaStream_t;

typedef struct cudaIpcMemHandle_st {
	char reserved[64];
} cudaIpcMemHandle_t;

#define cudaIpcMemLazyEnablePeerAccess 0x01
#define cudaHostRegisterDefault 0x00

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
		       enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
			    enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMalloc(void **ptr, size_t size);
const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaIpcOpenMemHandle(void **devptr, cudaIpcMemHandle_t handle,
				 unsigned int flags);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devptr);
cudaError_t cudaIpcCloseMemHandle(void *devptr);
cudaError_t cudaHostAlloc(void **phost, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);

#endif
