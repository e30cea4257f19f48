// What the CUDA driver API's wrappers share (cuda_driver*.cpp, one family
// of entry points each: the core's allocations, synchronisations and
// lookups, launches, copies and fills, hints and queries).  Each family
// file lists its wrappers (ADSM_GPU_FAMILY) and reaches the driver's own
// functions of that list by FORWARD.
#pragma once

// The deprecated launch's entry points are wrapped as any other (cuda_legacy_launch.h).
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>

#include "api/gpu_bridge.h"
#include "interpose/gpu_symbols.h"
#include "support/log.h"

// Entry points the header hides behind its version macros.
#undef cuGetProcAddress
#undef cuMemPrefetchAsync
#undef cuMemAdvise
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#undef cuMemHostRegister
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphAddNode
extern "C" {
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t n, unsigned int flags);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec e, CUstream s);
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data);
CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *data, unsigned int flags);
CUresult CUDAAPI cuMemcpyHtoA_v2_ptds(CUarray dst, size_t offset, const void *src, size_t n);
CUresult CUDAAPI cuMemcpyAtoH_v2_ptds(void *dst, CUarray src, size_t offset, size_t n);
CUresult CUDAAPI cuMemcpyDtoA_v2_ptds(CUarray dst, size_t offset, CUdeviceptr src, size_t n);
CUresult CUDAAPI cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, CUarray src, size_t offset, size_t n);
CUresult CUDAAPI cuMemcpyHtoAAsync_v2_ptsz(CUarray dst, size_t offset, const void *src, size_t n, CUstream s);
CUresult CUDAAPI cuMemcpyAtoHAsync_v2_ptsz(void *dst, CUarray src, size_t offset, size_t n, CUstream s);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                                void **kernelParams);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char uc, size_t n);
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s);
CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short us, size_t n);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int ui, size_t n);
CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short us, size_t n, CUstream s);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s);
CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width, size_t height);
CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width, size_t height,
                                        CUstream s);
CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width, size_t height);
CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width, size_t height,
                                        CUstream s);
CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width, size_t height);
CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width, size_t height,
                                        CUstream s);
CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c);
CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *c);
CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s);
CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *c);
CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n);
CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                                        CUstream s);
CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s);
CUresult CUDAAPI cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *c);
CUresult CUDAAPI cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *c, CUstream s);
CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx,
                                    CUstream s);
CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx,
                                         CUstream s);
CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                            CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, CUstream s);
CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
                                      unsigned long long flags, CUstream s);
CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
                                           unsigned long long flags, CUstream s);
CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                              CUstream s);
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dst, CUstream s);
CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags,
                                            CUstream s);
CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev);
// The graph API's first versions, which older programs still call.
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                      const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                         const CUDA_KERNEL_NODE_PARAMS *p);
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                CUgraphNodeParams *p);
CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                                   size_t ndeps, CUgraphNodeParams *p);
}

namespace adsm::interpose::cuda_driver {

inline constexpr const char *kLibrary = "libcuda.so.1";
inline constexpr gpu_bridge::Api kApi = gpu_bridge::Api::cuda;

// In a _ptsz call stream 0 is the calling thread's default stream, not the
// legacy one: what the runtime waits for before it touches the memory.
inline CUstream per_thread(CUstream s) { return s ? s : CU_STREAM_PER_THREAD; }

inline void *ptr(CUdeviceptr p) { return reinterpret_cast<void *>(p); }
inline CUdeviceptr device_ptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

// The answer to a call the preload would pass on to a driver not loaded.
CUresult no_driver(const char *fn);
// A runtime status as the driver's error, said in the log.
CUresult to_cu(Status s, const char *fn);
// The driver's own stream synchronisation: copies and fills wait for the
// work queued before them on their stream.
CUresult driver_stream_synchronize(CUstream s);

// Whether a 2D or 3D copy has shared memory on a side.
inline bool copies_shared(const CUDA_MEMCPY3D &c) {
    auto side = [](CUmemorytype type, const void *host, CUdeviceptr dev) {
        if (type == CU_MEMORYTYPE_HOST) return gpu_bridge::is_shared(host);
        return (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) && gpu_bridge::is_shared(ptr(dev));
    };
    return side(c.srcMemoryType, c.srcHost, c.srcDevice) || side(c.dstMemoryType, c.dstHost, c.dstDevice);
}

// A copy the driver makes later, as a graph's node, works on the device
// copy at the shared address: a shared side it names as host memory is
// named as device memory, or the driver would take the address for host
// memory and copy nothing there.
inline void name_shared_as_device(CUDA_MEMCPY3D *c) {
    if (c->srcMemoryType == CU_MEMORYTYPE_HOST && gpu_bridge::is_shared(c->srcHost))
        c->srcMemoryType = CU_MEMORYTYPE_DEVICE, c->srcDevice = device_ptr(c->srcHost), c->srcHost = nullptr;
    if (c->dstMemoryType == CU_MEMORYTYPE_HOST && gpu_bridge::is_shared(c->dstHost))
        c->dstMemoryType = CU_MEMORYTYPE_DEVICE, c->dstDevice = device_ptr(c->dstHost), c->dstHost = nullptr;
}

}  // namespace adsm::interpose::cuda_driver

// The driver's answer to a call the preload passes on.
#define FORWARD(name, ...)                                                              \
    ([&]() -> CUresult {                                                                \
        auto fn_ = GPU_REAL(name);                                                      \
        if (!fn_) return ::adsm::interpose::cuda_driver::no_driver(#name);              \
        ::adsm::interpose::GpuForwarding fw_;                                           \
        return fn_(__VA_ARGS__);                                                        \
    }())

#define CUDA_WRAPPER(name, ...) extern "C" __attribute__((visibility("default"))) CUresult CUDAAPI name(__VA_ARGS__)
