/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the NVML header: see cuda.h beside it. The stand-in has no
 * NVML library, so libfabric skips its NVML calls.
 */
#ifndef EFAP2P_CUDA_STANDIN_NVML_H
#define EFAP2P_CUDA_STANDIN_NVML_H

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
} nvmlReturn_t;

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlShutdown(void);

#endif
