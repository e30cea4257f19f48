// The CUDA Driver API as one table of entry points, loaded from
// libcuda.so.1 at run time: the library loads on machines without a
// driver, and the back-end reaches the driver's own functions, never the
// preload's wrappers of them (interpose/cuda_driver*.cpp), whichever way the
// program found the driver.
#pragma once

#include <cuda.h>

#include "support/status.h"

namespace adsm::cuda {

#define ADSM_CUDA_ENTRY_POINTS(X)                                                                            \
    X(cuInit, "cuInit")                                                                                      \
    X(cuDriverGetVersion, "cuDriverGetVersion")                                                              \
    X(cuDeviceGet, "cuDeviceGet")                                                                            \
    X(cuDeviceGetCount, "cuDeviceGetCount")                                                                  \
    X(cuDeviceGetName, "cuDeviceGetName")                                                                    \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                                                  \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")                                             \
    X(cuCtxGetCurrent, "cuCtxGetCurrent")                                                                    \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")                                                               \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")                                                                 \
    X(cuMemGetInfo, "cuMemGetInfo_v2")                                                                       \
    X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")                                        \
    X(cuMemAddressReserve, "cuMemAddressReserve")                                                            \
    X(cuMemAddressFree, "cuMemAddressFree")                                                                  \
    X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer")                                                        \
    X(cuMemcpyPeer, "cuMemcpyPeer")                                                                          \
    X(cuMemCreate, "cuMemCreate")                                                                            \
    X(cuMemRelease, "cuMemRelease")                                                                          \
    X(cuMemMap, "cuMemMap")                                                                                  \
    X(cuMemUnmap, "cuMemUnmap")                                                                              \
    X(cuMemSetAccess, "cuMemSetAccess")                                                                      \
    X(cuMemHostRegister, "cuMemHostRegister_v2")                                                             \
    X(cuMemHostUnregister, "cuMemHostUnregister")                                                            \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                                                             \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                                                             \
    X(cuMemsetD8Async, "cuMemsetD8Async")                                                                    \
    X(cuStreamCreate, "cuStreamCreate")                                                                      \
    X(cuStreamDestroy, "cuStreamDestroy_v2")                                                                 \
    X(cuStreamSynchronize, "cuStreamSynchronize")                                                            \
    X(cuStreamQuery, "cuStreamQuery")                                                                        \
    X(cuStreamWaitEvent, "cuStreamWaitEvent")                                                                \
    X(cuEventCreate, "cuEventCreate")                                                                        \
    X(cuEventRecord, "cuEventRecord")                                                                        \
    X(cuEventDestroy, "cuEventDestroy_v2")                                                                   \
    X(cuLaunchHostFunc, "cuLaunchHostFunc")                                                                  \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx")                                                              \
    X(cuModuleGetFunction, "cuModuleGetFunction")                                                            \
    X(cuLaunchKernel, "cuLaunchKernel")                                                                      \
    X(cuGetErrorName, "cuGetErrorName")                                                                      \
    X(cuGetErrorString, "cuGetErrorString")

// Entry points older drivers lack; null when absent.
#define ADSM_CUDA_OPTIONAL_ENTRY_POINTS(X)           \
    X(cuFuncGetParamInfo, "cuFuncGetParamInfo")      \
    X(cuKernelGetParamInfo, "cuKernelGetParamInfo")

struct Driver {
#define ADSM_CUDA_MEMBER(fn, symbol) decltype(&::fn) fn = nullptr;
    ADSM_CUDA_ENTRY_POINTS(ADSM_CUDA_MEMBER)
    ADSM_CUDA_OPTIONAL_ENTRY_POINTS(ADSM_CUDA_MEMBER)
#undef ADSM_CUDA_MEMBER
    int version = 0;  // cuDriverGetVersion, e.g. 13000

    // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; valid until the next call
    // on this thread.
    const char *describe(CUresult r) const;
};

// Loads libcuda.so.1 once and initialises it (cuInit); the same table for
// every caller, or the same failure.
Status load_driver(const Driver **out);

// Pinned device memory on GPU `dev`, as the window's granules are made.
inline CUmemAllocationProp device_memory_prop(CUdevice dev) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

// Access to mapped memory for GPU `dev` (granted, or taken away).
inline CUmemAccessDesc device_access(CUdevice dev, bool allow) {
    CUmemAccessDesc a = {};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = allow ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return a;
}

// Records a failure of `what` that the driver answered with r.
Status cuda_fail(Status code, CUresult r, const char *what);

// Errors after which the CUDA context can do nothing more (sticky): a
// kernel that faulted, trapped or ran too long.
bool context_is_gone(CUresult r);

}  // namespace adsm::cuda
