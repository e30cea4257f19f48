// The CUDA driver API.  Routed (ADSM_GPU_APIS), managed allocations are
// shared memory, launches release and run the program's kernel (on the
// `cuda` device, the program's own GPU code on its own stream; on others,
// the host function registered under the kernel's name), and every
// synchronisation (context, stream, event, and their queries) waits for
// those kernels and acquires before it asks the driver about its own work.
// Emulated kernels run in order on one stream, so any synchronisation waits
// for all of them: more than the program asked for, never less.  Copies and
// fills with shared memory on a side go through the protocol.
//
// A statically linked CUDA runtime reaches the driver only through
// cuGetProcAddress; its answers are rewritten to the wrappers here.  Every
// wrapper's name is exported too (lib/adsm.map; interpose.gpu_symbols).
// The deprecated launch's entry points are wrapped as any other (cuda_legacy_launch.h).
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "interpose/cuda_graphs.h"
#include "interpose/cuda_host_functions.h"
#include "interpose/cuda_legacy_launch.h"
#include "interpose/cuda_packed_params.h"
#include "interpose/gpu_copies.h"
#include "interpose/gpu_kernels.h"
#include "interpose/gpu_symbols.h"
#include "interpose/handle_map.h"
#include "interpose/range_advice.h"
#include "support/driver_thread.h"
#include "support/inside.h"
#include "support/log.h"

// Entry points the header hides behind its version macros.
#undef cuGetProcAddress
#undef cuMemPrefetchAsync
#undef cuMemAdvise
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#undef cuMemHostRegister
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
}

namespace {
constexpr const char *kLibrary = "libcuda.so.1";
constexpr adsm::gpu_bridge::Api kApi = adsm::gpu_bridge::Api::cuda;
}  // namespace

#define CUDA_DRIVER_SYMBOLS(X)                                                                                   \
    X(cuMemAllocManaged)                                                                                         \
    X(cuMemFree_v2)                                                                                              \
    X(cuModuleGetFunction)                                                                                       \
    X(cuLaunchKernel)                                                                                            \
    X(cuLaunchKernel_ptsz)                                                                                       \
    X(cuLaunchKernelEx)                                                                                          \
    X(cuLaunchKernelEx_ptsz)                                                                                     \
    X(cuLaunchCooperativeKernel)                                                                                 \
    X(cuLaunchCooperativeKernel_ptsz)                                                                            \
    X(cuLaunchCooperativeKernelMultiDevice)                                                                      \
    X(cuFuncSetBlockShape)                                                                                       \
    X(cuFuncSetSharedSize)                                                                                       \
    X(cuParamSetSize)                                                                                            \
    X(cuParamSeti)                                                                                               \
    X(cuParamSetf)                                                                                               \
    X(cuParamSetv)                                                                                               \
    X(cuLaunch)                                                                                                  \
    X(cuLaunchGrid)                                                                                              \
    X(cuLaunchGridAsync)                                                                                         \
    X(cuCtxSynchronize)                                                                                          \
    X(cuStreamSynchronize)                                                                                       \
    X(cuStreamSynchronize_ptsz)                                                                                  \
    X(cuStreamQuery)                                                                                             \
    X(cuStreamQuery_ptsz)                                                                                        \
    X(cuEventSynchronize)                                                                                        \
    X(cuEventQuery)                                                                                              \
    X(cuGetProcAddress)                                                                                          \
    X(cuGetProcAddress_v2)                                                                                       \
    X(cuMemcpyHtoD_v2)                                                                                           \
    X(cuMemcpyHtoD_v2_ptds)                                                                                      \
    X(cuMemcpyDtoH_v2)                                                                                           \
    X(cuMemcpyDtoH_v2_ptds)                                                                                      \
    X(cuMemcpyDtoD_v2)                                                                                           \
    X(cuMemcpyDtoD_v2_ptds)                                                                                      \
    X(cuMemcpy)                                                                                                  \
    X(cuMemcpy_ptds)                                                                                             \
    X(cuMemcpyHtoDAsync_v2)                                                                                      \
    X(cuMemcpyHtoDAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyDtoHAsync_v2)                                                                                      \
    X(cuMemcpyDtoHAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyDtoDAsync_v2)                                                                                      \
    X(cuMemcpyDtoDAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyAsync)                                                                                             \
    X(cuMemcpyAsync_ptsz)                                                                                        \
    X(cuMemcpyHtoA_v2)                                                                                           \
    X(cuMemcpyHtoA_v2_ptds)                                                                                      \
    X(cuMemcpyAtoH_v2)                                                                                           \
    X(cuMemcpyAtoH_v2_ptds)                                                                                      \
    X(cuMemcpyDtoA_v2)                                                                                           \
    X(cuMemcpyDtoA_v2_ptds)                                                                                      \
    X(cuMemcpyAtoD_v2)                                                                                           \
    X(cuMemcpyAtoD_v2_ptds)                                                                                      \
    X(cuMemcpyHtoAAsync_v2)                                                                                      \
    X(cuMemcpyHtoAAsync_v2_ptsz)                                                                                 \
    X(cuMemcpyAtoHAsync_v2)                                                                                      \
    X(cuMemcpyAtoHAsync_v2_ptsz)                                                                                 \
    X(cuMemsetD8_v2)                                                                                             \
    X(cuMemsetD8_v2_ptds)                                                                                        \
    X(cuMemsetD8Async)                                                                                           \
    X(cuMemsetD8Async_ptsz)                                                                                      \
    X(cuMemcpy2D_v2)                                                                                             \
    X(cuMemcpy2D_v2_ptds)                                                                                        \
    X(cuMemcpy2DUnaligned_v2)                                                                                    \
    X(cuMemcpy2DUnaligned_v2_ptds)                                                                               \
    X(cuMemcpy2DAsync_v2)                                                                                        \
    X(cuMemcpy2DAsync_v2_ptsz)                                                                                   \
    X(cuMemcpyPeer)                                                                                              \
    X(cuMemcpyPeer_ptds)                                                                                         \
    X(cuMemcpyPeerAsync)                                                                                         \
    X(cuMemcpyPeerAsync_ptsz)                                                                                    \
    X(cuMemcpy3D_v2)                                                                                             \
    X(cuMemcpy3D_v2_ptds)                                                                                        \
    X(cuMemcpy3DAsync_v2)                                                                                        \
    X(cuMemcpy3DAsync_v2_ptsz)                                                                                   \
    X(cuMemcpy3DPeer)                                                                                            \
    X(cuMemcpy3DPeer_ptds)                                                                                       \
    X(cuMemcpy3DPeerAsync)                                                                                       \
    X(cuMemcpy3DPeerAsync_ptsz)                                                                                  \
    X(cuMemsetD16_v2)                                                                                            \
    X(cuMemsetD16_v2_ptds)                                                                                       \
    X(cuMemsetD16Async)                                                                                          \
    X(cuMemsetD16Async_ptsz)                                                                                     \
    X(cuMemsetD32_v2)                                                                                            \
    X(cuMemsetD32_v2_ptds)                                                                                       \
    X(cuMemsetD32Async)                                                                                          \
    X(cuMemsetD32Async_ptsz)                                                                                     \
    X(cuMemsetD2D8_v2)                                                                                           \
    X(cuMemsetD2D8_v2_ptds)                                                                                      \
    X(cuMemsetD2D8Async)                                                                                         \
    X(cuMemsetD2D8Async_ptsz)                                                                                    \
    X(cuMemsetD2D16_v2)                                                                                          \
    X(cuMemsetD2D16_v2_ptds)                                                                                     \
    X(cuMemsetD2D16Async)                                                                                        \
    X(cuMemsetD2D16Async_ptsz)                                                                                   \
    X(cuMemsetD2D32_v2)                                                                                          \
    X(cuMemsetD2D32_v2_ptds)                                                                                     \
    X(cuMemsetD2D32Async)                                                                                        \
    X(cuMemsetD2D32Async_ptsz)                                                                                   \
    X(cuMemcpyBatchAsync)                                                                                        \
    X(cuMemcpyBatchAsync_ptsz)                                                                                   \
    X(cuMemcpyBatchAsync_v2)                                                                                     \
    X(cuMemcpyBatchAsync_v2_ptsz)                                                                                \
    X(cuMemcpy3DBatchAsync)                                                                                      \
    X(cuMemcpy3DBatchAsync_ptsz)                                                                                 \
    X(cuMemcpy3DBatchAsync_v2)                                                                                   \
    X(cuMemcpy3DBatchAsync_v2_ptsz)                                                                              \
    X(cuMemPrefetchAsync)                                                                                        \
    X(cuMemPrefetchAsync_v2)                                                                                     \
    X(cuMemPrefetchAsync_v2_ptsz)                                                                                \
    X(cuMemAdvise)                                                                                               \
    X(cuMemAdvise_v2)                                                                                            \
    X(cuMemRangeGetAttribute)                                                                                    \
    X(cuMemRangeGetAttributes)                                                                                   \
    X(cuMemGetAddressRange_v2)                                                                                   \
    X(cuMemHostRegister)                                                                                         \
    X(cuMemHostRegister_v2)                                                                                      \
    X(cuMemHostUnregister)                                                                                       \
    X(cuMemHostGetDevicePointer_v2)                                                                              \
    X(cuStreamAttachMemAsync)                                                                                    \
    X(cuStreamAttachMemAsync_ptsz)                                                                               \
    X(cuGraphLaunch)                                                                                             \
    X(cuGraphLaunch_ptsz)                                                                                        \
    X(cuLaunchHostFunc)                                                                                          \
    X(cuLaunchHostFunc_ptsz)                                                                                     \
    X(cuStreamAddCallback)                                                                                       \
    X(cuStreamAddCallback_ptsz)                                                                                  \
    X(cuPointerGetAttribute)                                                                                     \
    X(cuPointerGetAttributes)                                                                                     

ADSM_GPU_FAMILY(cuda_driver_family, CUDA_DRIVER_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
namespace bridge = adsm::gpu_bridge;

adsm::interpose::HandleMap<adsm::interpose::KernelName, 8192> g_functions;
// The deprecated launch's settings per function, where a program made any.
adsm::interpose::HandleMap<adsm::interpose::LegacyLaunchSetup, 1024> g_legacy;

// In a _ptsz call stream 0 is the calling thread's default stream, not the
// legacy one: what the runtime waits for before it touches the memory.
CUstream per_thread(CUstream s) { return s ? s : CU_STREAM_PER_THREAD; }

// The driver's answer to a call the preload passes on.
#define FORWARD(name, ...)                                                              \
    ([&]() -> CUresult {                                                                \
        auto fn_ = GPU_REAL(name);                                                      \
        if (!fn_) return no_driver(#name);                                              \
        GpuForwarding fw_;                                                              \
        return fn_(__VA_ARGS__);                                                        \
    }())

CUresult no_driver(const char *fn) {
    adsm::log(adsm::LogLevel::error, "%s: the CUDA driver (%s) is not loaded", fn, kLibrary);
    return CUDA_ERROR_NOT_INITIALIZED;
}

CUresult to_cu(Status s, const char *fn) {
    if (s == adsmSuccess) return CUDA_SUCCESS;
    adsm::log(adsm::LogLevel::warn, "%s: %s", fn, adsm::last_detail());
    switch (s) {
    case adsmErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case adsmErrorNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
    case adsmErrorKernelNotFound: return CUDA_ERROR_NOT_FOUND;
    case adsmErrorLaunchFailure: return CUDA_ERROR_LAUNCH_FAILED;
    case adsmErrorInitialization: return CUDA_ERROR_NOT_INITIALIZED;
    case adsmErrorNoDevice: return CUDA_ERROR_NO_DEVICE;
    case adsmErrorDeviceLost: return CUDA_ERROR_UNKNOWN;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

// The name the driver knows a function by, when the program did not get the
// handle through cuModuleGetFunction (cuLibraryGetKernel, say).
const char *driver_function_name(CUfunction f) {
    using GetName = CUresult (*)(const char **, CUfunction);
    static const auto get = reinterpret_cast<GetName>(adsm::interpose::driver_function(kLibrary, "cuFuncGetName"));
    const char *name = nullptr;
    if (!get) return nullptr;
    GpuForwarding fw;
    return get(&name, f) == CUDA_SUCCESS ? name : nullptr;
}

template <class Forward>
CUresult launch(const char *fn, CUfunction f, adsmDim3 grid, adsmDim3 block, unsigned shared, CUstream stream,
                void **params, void **extra, Forward &&forward, bool from_legacy = false) {
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    // (Any launch but the deprecated one ends the function's deprecated settings.)
    if (auto *legacy = g_legacy.find(f); legacy && !from_legacy) legacy->reset();
    if (adsm::interpose::cuda_capturing(stream)) {
        if (bridge::runs_program_kernels()) return forward();  // recorded; its graph's launch releases
        adsm::interpose::say_capture_unsupported(fn);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    adsm::interpose::UnpackedParams unpacked;  // (arguments packed in `extra`: pointers into its buffer)
    if (adsm::interpose::cuda_extra_given(extra)) {
        const void *buffer = nullptr;
        size_t size = 0;
        if (CUresult r = adsm::interpose::cuda_extra_buffer(fn, params, extra, &buffer, &size); r != CUDA_SUCCESS)
            return r;
        if (CUresult r = adsm::interpose::cuda_unpack_params(fn, f, buffer, size, &unpacked); r != CUDA_SUCCESS)
            return r;
        params = unpacked.at;
    }
    adsm::interpose::KernelName *rec = g_functions.find(f);
    if (bridge::runs_program_kernels()) {
        // The GPU runs the program's own function, on the program's stream.
        const char *name = rec && rec->named.load(std::memory_order_acquire) ? rec->name : driver_function_name(f);
        return to_cu(bridge::launch_program_kernel(f, name, grid, block, shared, stream, params), fn);
    }
    adsmKernel_t k;
    Status s = adsm::interpose::registered_kernel(rec, rec ? nullptr : driver_function_name(f), fn, &k);
    if (s == adsmSuccess) s = bridge::launch(k, grid, block, params);
    return to_cu(s, fn);
}

template <class Forward>
CUresult launch_ex(const char *fn, const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                   Forward &&forward) {
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    return launch(fn, f, {c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ},
                  c->sharedMemBytes, c->hStream, params, extra, forward);
}

}  // namespace

namespace adsm::interpose {

bool cuda_capturing(void *stream) {
    using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus *);
    static const auto is =
        reinterpret_cast<IsCapturing>(adsm::interpose::driver_function(kLibrary, "cuStreamIsCapturing"));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!is) return false;
    GpuForwarding fw;
    return is(static_cast<CUstream>(stream), &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool cuda_host_function_runs_here(void *stream) {
    return gpu_routed(kApi) && bridge::started() && !cuda_capturing(stream);
}

Captured captured_work(void *stream, const char *fn) {
    if (!cuda_capturing(stream)) return Captured::no;
    if (bridge::runs_program_kernels()) return Captured::record;
    say_capture_unsupported(fn);
    return Captured::refuse;
}

void say_capture_unsupported(const char *fn) {
    adsm::log(adsm::LogLevel::error,
              "%s: work on shared memory captured into a CUDA graph runs only on the cuda device, where the program's "
              "own GPU code runs; on this one the runtime runs kernels as host functions and moves shared memory "
              "itself, and neither can wait for the graph's launch",
              fn);
}

}  // namespace adsm::interpose

namespace {

// ---- copies and fills that touch shared memory (gpu_copies.h)

using adsm::interpose::Captured;
using adsm::interpose::Side;

Status driver_to_device(void *dev, const void *host, size_t n) {
    CUresult r = FORWARD(cuMemcpyHtoD_v2, reinterpret_cast<CUdeviceptr>(dev), host, n);
    return r == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cuMemcpyHtoD: CUDA error %d", r);
}

Status driver_to_host(void *host, const void *dev, size_t n) {
    CUresult r = FORWARD(cuMemcpyDtoH_v2, host, reinterpret_cast<CUdeviceptr>(dev), n);
    return r == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cuMemcpyDtoH: CUDA error %d", r);
}

const adsm::interpose::DriverCopies kDriverCopies = {driver_to_device, driver_to_host};

// Which memory a pointer the program gave cuMemcpy is, as the driver sees it.
Side side_of(CUdeviceptr p) {
    using GetAttr = CUresult (*)(void *, CUpointer_attribute, CUdeviceptr);
    static const auto get =
        reinterpret_cast<GetAttr>(adsm::interpose::driver_function(kLibrary, "cuPointerGetAttribute"));
    unsigned type = 0;
    if (!get) return Side::host;
    GpuForwarding fw;
    if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS) return Side::host;  // unregistered: host
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY ? Side::device : Side::host;
}

void *ptr(CUdeviceptr p) { return reinterpret_cast<void *>(p); }
CUdeviceptr device_ptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

// A copy as the program asked for it, or through the protocol when a side
// is shared memory, after the work queued before it on `stream`.
// Captured, it is the graph's node (cuda_graphs.h), by unified addressing
// where a shared side is named as host memory.
template <class Forward>
CUresult copy(const char *fn, CUstream stream, void *dst, Side ds, const void *src, Side ss, size_t n,
              Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || (!bridge::is_shared(dst) && !bridge::is_shared(src))) return forward();
    switch (adsm::interpose::captured_work(stream, fn)) {
    case Captured::record:
        if ((ds == Side::host && bridge::is_shared(dst)) || (ss == Side::host && bridge::is_shared(src)))
            return FORWARD(cuMemcpyAsync, device_ptr(dst), device_ptr(src), n, stream);
        return forward();
    case Captured::refuse: return CUDA_ERROR_NOT_SUPPORTED;
    case Captured::no: break;
    }
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    Status s = adsmSuccess;
    adsm::interpose::copy_with_shared(dst, ds, src, ss, n, kDriverCopies, &s);
    return to_cu(s, fn);
}

// A copy between a CUDA array and shared memory: through an ordinary
// buffer (the driver would take the shared address for device memory),
// the driver's own host copy of the array on the other side, after the
// work queued before it on `stream`.  `piece(offset, buffer, len)` is that
// copy for the piece at `offset`.
template <class Forward, class Piece>
CUresult array_copy(const char *fn, CUstream stream, const void *shared, size_t n, bool into_shared,
                    Forward &&forward, Piece &&piece) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(shared)) return forward();
    if (adsm::interpose::cuda_capturing(stream)) {
        adsm::log(adsm::LogLevel::error,
                  "%s: a copy between a CUDA array and shared memory cannot be captured into a graph; "
                  "cuMemcpy3DAsync between them can",
                  fn);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    CUresult own = CUDA_SUCCESS;  // the driver's own error, passed on as it is
    Status s = adsm::interpose::bounce_shared(
        const_cast<void *>(shared), n, into_shared, [&](size_t off, unsigned char *buf, size_t len) -> Status {
            own = piece(off, buf, len);
            return own == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "%s: CUDA error %d", fn, own);
        });
    if (own != CUDA_SUCCESS) return own;
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

using adsm::interpose::Plane;

Plane plane(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t z, size_t pitch,
            size_t height) {
    Plane p;
    if (type == CU_MEMORYTYPE_HOST) p.at = static_cast<char *>(const_cast<void *>(host));
    else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) p.at = static_cast<char *>(ptr(dev));
    if (!p.at) return p;
    p.side = type == CU_MEMORYTYPE_HOST ? Side::host : type == CU_MEMORYTYPE_DEVICE ? Side::device : side_of(dev);
    p.pitch = pitch;
    p.slice = pitch * height;
    p.at += z * p.slice + y * pitch + x;
    return p;
}

// A 2D or 3D copy with shared memory on a side goes row by row through the
// protocol (rows of shared memory are not contiguous for the driver).
template <class Forward>
CUresult copy_rows(const char *fn, CUstream stream, const Plane &src, const Plane &dst, size_t width, size_t height,
                   size_t depth, Forward &&forward) {
    bool shared = (src.at && bridge::is_shared(src.at)) || (dst.at && bridge::is_shared(dst.at));
    if (!shared) return forward();
    if (!src.at || !dst.at)
        return to_cu(adsm::fail(adsmErrorNotSupported, "%s between a CUDA array and shared memory", fn), fn);
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    CUresult own = CUDA_SUCCESS;  // the driver's own error, passed on as it is
    Status s = adsm::interpose::copy_box(dst, src, width, height, depth, kDriverCopies,
                                         [&](void *d, const void *from, size_t n) -> Status {
        if (dst.side == Side::device && src.side == Side::device) {
            own = FORWARD(cuMemcpyDtoD_v2, reinterpret_cast<CUdeviceptr>(d), reinterpret_cast<CUdeviceptr>(from), n);
            return own == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "%s", fn);
        }
        if (dst.side == Side::device) return driver_to_device(d, from, n);
        if (src.side == Side::device) return driver_to_host(d, from, n);
        memmove(d, from, n);
        return adsmSuccess;
    });
    if (own != CUDA_SUCCESS) return own;
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

// A 2D or 3D copy between a CUDA array and shared memory: rows of the
// shared side packed into an ordinary buffer, a box of them at a time, and
// the driver's own 3D copy between that buffer (as host memory) and the
// array, after the work queued before it on `stream`.
CUresult array_box(const char *fn, CUstream stream, const CUDA_MEMCPY3D &c, const Plane &shared, bool into_shared) {
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    const size_t width = c.WidthInBytes;
    if (width == 0 || c.Height == 0 || c.Depth == 0) return CUDA_SUCCESS;
    constexpr size_t kBuffer = 4 << 20;
    const size_t rows = std::min<size_t>(std::max<size_t>(1, kBuffer / width), c.Height);
    adsm::Inside private_allocations;  // the buffer must be ordinary memory
    std::unique_ptr<unsigned char[]> buf(new (std::nothrow) unsigned char[rows * width]);
    if (!buf) return to_cu(adsm::fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte copy buffer", rows * width), fn);
    for (size_t z = 0; z < c.Depth; ++z)
        for (size_t y = 0; y < c.Height; y += rows) {
            const size_t k = std::min(rows, c.Height - y);
            char *first = shared.at + z * shared.slice + y * shared.pitch;
            for (size_t i = 0; i < k && !into_shared; ++i)
                if (Status s = bridge::read_shared(first + i * shared.pitch, buf.get() + i * width, width); s != adsmSuccess)
                    return to_cu(s, fn);
            CUDA_MEMCPY3D piece = c;
            piece.Height = k;
            piece.Depth = 1;
            // The array's side moves on by the rows done; the shared side is the buffer.
            auto buffer_side = [&](CUmemorytype &type, auto &host, CUdeviceptr &dev, CUarray &array, size_t &x,
                                   size_t &at_y, size_t &at_z, size_t &lod, size_t &pitch, size_t &height) {
                type = CU_MEMORYTYPE_HOST;
                host = buf.get();
                dev = 0;
                array = nullptr;
                x = at_y = at_z = lod = 0;
                pitch = width;
                height = k;
            };
            if (into_shared) {
                piece.srcY += y, piece.srcZ += z;
                buffer_side(piece.dstMemoryType, piece.dstHost, piece.dstDevice, piece.dstArray, piece.dstXInBytes,
                            piece.dstY, piece.dstZ, piece.dstLOD, piece.dstPitch, piece.dstHeight);
            } else {
                piece.dstY += y, piece.dstZ += z;
                buffer_side(piece.srcMemoryType, piece.srcHost, piece.srcDevice, piece.srcArray, piece.srcXInBytes,
                            piece.srcY, piece.srcZ, piece.srcLOD, piece.srcPitch, piece.srcHeight);
            }
            if (CUresult r = FORWARD(cuMemcpy3D_v2, &piece); r != CUDA_SUCCESS) return r;
            for (size_t i = 0; i < k && into_shared; ++i)
                if (Status s = bridge::write_shared(first + i * shared.pitch, buf.get() + i * width, width); s != adsmSuccess)
                    return to_cu(s, fn);
        }
    return CUDA_SUCCESS;
}

// The copy's other side when one is a CUDA array and the other shared
// memory: array_box's work; nullptr otherwise.
const Plane *array_and_shared(const CUDA_MEMCPY3D &c, const Plane &src, const Plane &dst) {
    if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY && dst.at && bridge::is_shared(dst.at)) return &dst;
    if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY && src.at && bridge::is_shared(src.at)) return &src;
    return nullptr;
}

CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY2D &c) {
    CUDA_MEMCPY3D d = {};
    d.srcXInBytes = c.srcXInBytes, d.srcY = c.srcY, d.srcMemoryType = c.srcMemoryType, d.srcHost = c.srcHost;
    d.srcDevice = c.srcDevice, d.srcArray = c.srcArray, d.srcPitch = c.srcPitch, d.srcHeight = c.Height;
    d.dstXInBytes = c.dstXInBytes, d.dstY = c.dstY, d.dstMemoryType = c.dstMemoryType, d.dstHost = c.dstHost;
    d.dstDevice = c.dstDevice, d.dstArray = c.dstArray, d.dstPitch = c.dstPitch, d.dstHeight = c.Height;
    d.WidthInBytes = c.WidthInBytes, d.Height = c.Height, d.Depth = 1;
    return d;
}

bool shared_plane(const Plane &src, const Plane &dst) {
    return (src.at && bridge::is_shared(src.at)) || (dst.at && bridge::is_shared(dst.at));
}

// A 2D or 3D copy of shared memory on a stream that is capturing: the
// graph's node, a shared side named as host memory named as device memory
// (cuda_graphs.h).  False when the copy is not captured or has no shared side.
bool captured_box(const char *fn, CUstream stream, CUDA_MEMCPY3D c, const Plane &src, const Plane &dst, CUresult *r) {
    if (!shared_plane(src, dst)) return false;
    switch (adsm::interpose::captured_work(stream, fn)) {
    case Captured::no: return false;
    case Captured::refuse: *r = CUDA_ERROR_NOT_SUPPORTED; return true;
    case Captured::record: break;
    }
    if (c.srcMemoryType == CU_MEMORYTYPE_HOST && bridge::is_shared(c.srcHost))
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = device_ptr(c.srcHost), c.srcHost = nullptr;
    if (c.dstMemoryType == CU_MEMORYTYPE_HOST && bridge::is_shared(c.dstHost))
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE, c.dstDevice = device_ptr(c.dstHost), c.dstHost = nullptr;
    *r = FORWARD(cuMemcpy3DAsync_v2, &c, stream);
    return true;
}

template <class Forward>
CUresult copy2d(CUstream stream, const CUDA_MEMCPY2D *c, Forward &&forward) {
    if (!c || !adsm::interpose::gpu_routed(kApi)) return forward();
    Plane src = plane(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0, c->srcPitch, 0);
    Plane dst = plane(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0, c->dstPitch, 0);
    const CUDA_MEMCPY3D box = as_3d(*c);
    if (CUresult r; captured_box("cuMemcpy2D", stream, box, src, dst, &r)) return r;
    if (const Plane *shared = array_and_shared(box, src, dst))
        return array_box("cuMemcpy2D", stream, box, *shared, shared == &dst);
    return copy_rows("cuMemcpy2D", stream, src, dst, c->WidthInBytes, c->Height, 1, forward);
}

// A 3D copy within a context or between two (CUDA_MEMCPY3D_PEER: the same
// fields, and contexts that one device's shared memory does not need; one
// between a CUDA array and shared memory is refused there).
template <class Memcpy3D, class Forward>
CUresult copy3d(CUstream stream, const Memcpy3D *c, Forward &&forward) {
    if (!c || !adsm::interpose::gpu_routed(kApi)) return forward();
    Plane src = plane(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
                      c->srcHeight);
    Plane dst = plane(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
                      c->dstHeight);
    if constexpr (std::is_same_v<Memcpy3D, CUDA_MEMCPY3D>) {
        if (CUresult r; captured_box("cuMemcpy3D", stream, *c, src, dst, &r)) return r;
    } else if (shared_plane(src, dst) && adsm::interpose::cuda_capturing(stream)) {
        adsm::log(adsm::LogLevel::error, "cuMemcpy3DPeer: a copy of shared memory between contexts cannot be captured");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if constexpr (std::is_same_v<Memcpy3D, CUDA_MEMCPY3D>)
        if (const Plane *shared = array_and_shared(*c, src, dst))
            return array_box("cuMemcpy3D", stream, *c, *shared, shared == &dst);
    return copy_rows("cuMemcpy3D", stream, src, dst, c->WidthInBytes, c->Height, c->Depth, forward);
}

// A batch of 1D copies (CUDA 12.8) with shared memory on a side of any of
// them: each goes on its own, after the work queued before it on `stream`,
// the shared ones through the protocol.
template <class Forward>
CUresult copy_batch(CUstream stream, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                    size_t *fail_idx, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !dsts || !srcs || !sizes) return forward();
    bool any = false;
    for (size_t i = 0; i < count && !any; ++i) any = bridge::is_shared(ptr(dsts[i])) || bridge::is_shared(ptr(srcs[i]));
    if (!any) return forward();
    for (size_t i = 0; i < count; ++i) {
        CUresult r = copy("cuMemcpyBatchAsync", stream, ptr(dsts[i]), side_of(dsts[i]), ptr(srcs[i]), side_of(srcs[i]),
                          sizes[i], [&] { return FORWARD(cuMemcpyAsync, dsts[i], srcs[i], sizes[i], stream); });
        if (r != CUDA_SUCCESS) {
            if (fail_idx) *fail_idx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

// A batch of 3D copies with shared memory on a side of any of them: each
// goes on its own (a batch's copies are unordered, so any order is one the
// program allowed), a shared one row by row through the protocol as a
// cuMemcpy3D is, the others passed on as batches of one.  Pointer operands
// count in bytes; a row length or layer height of 0 is the extent's.
template <class Forward, class ForwardOne>
CUresult copy_3d_batch(CUstream stream, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
                       Forward &&forward, ForwardOne &&forward_one) {
    if (!adsm::interpose::gpu_routed(kApi) || !ops) return forward();
    auto shared = [](const CUmemcpy3DOperand &o) {
        return o.type == CU_MEMCPY_OPERAND_TYPE_POINTER && bridge::is_shared(ptr(o.op.ptr.ptr));
    };
    bool any = false;
    for (size_t i = 0; i < nops && !any; ++i) any = shared(ops[i].src) || shared(ops[i].dst);
    if (!any) return forward();
    // A pointer operand's rows and layers: the extent's where 0, and never
    // shorter than it.  (A CUDA array has no first byte: copy_rows refuses
    // it beside shared memory.)
    auto fits = [](const CUmemcpy3DOperand &o, const CUextent3D &e) {
        return o.type != CU_MEMCPY_OPERAND_TYPE_POINTER ||
               ((!o.op.ptr.rowLength || o.op.ptr.rowLength >= e.width) &&
                (!o.op.ptr.layerHeight || o.op.ptr.layerHeight >= e.height));
    };
    auto operand = [](const CUmemcpy3DOperand &o, const CUextent3D &e) {
        if (o.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return Plane{};
        const size_t row = o.op.ptr.rowLength ? o.op.ptr.rowLength : e.width;
        const size_t rows = o.op.ptr.layerHeight ? o.op.ptr.layerHeight : e.height;
        return plane(CU_MEMORYTYPE_UNIFIED, nullptr, o.op.ptr.ptr, 0, 0, 0, row, rows);
    };
    for (size_t i = 0; i < nops; ++i) {
        CUDA_MEMCPY3D_BATCH_OP &op = ops[i];
        const CUextent3D &e = op.extent;
        CUresult r = CUDA_SUCCESS;
        if (!shared(op.src) && !shared(op.dst))
            r = forward_one(&op);
        else if (!e.width || !e.height || !e.depth || !fits(op.src, e) || !fits(op.dst, e))
            r = CUDA_ERROR_INVALID_VALUE;
        else
            r = copy_rows("cuMemcpy3DBatchAsync", stream, operand(op.src, e), operand(op.dst, e), e.width, e.height,
                          e.depth, [&] { return forward_one(&op); });
        if (r != CUDA_SUCCESS) {
            if (fail_idx) *fail_idx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

// A fill of n elements of the value's width.
template <class T, class Forward>
CUresult fill(const char *fn, CUstream stream, CUdeviceptr dst, T value, size_t n, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(ptr(dst))) return forward();
    if (Captured c = adsm::interpose::captured_work(stream, fn); c != Captured::no)
        return c == Captured::record ? forward() : CUDA_ERROR_NOT_SUPPORTED;  // the graph's node (cuda_graphs.h)
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    return to_cu(adsm::interpose::fill_shared_pattern(ptr(dst), &value, sizeof value, n), fn);
}

// A fill of `height` rows of `width` elements of the value's width, rows
// `pitch` bytes apart (the statically linked CUDA runtime's cudaMemset2D
// and cudaMemset3D come here).
template <class T, class Forward>
CUresult fill2d(const char *fn, CUstream stream, CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height,
                Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::is_shared(ptr(dst))) return forward();
    if (height > 1 && width > pitch / sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
    if (Captured c = adsm::interpose::captured_work(stream, fn); c != Captured::no)
        return c == Captured::record ? forward() : CUDA_ERROR_NOT_SUPPORTED;  // the graph's node (cuda_graphs.h)
    if (CUresult r = FORWARD(cuStreamSynchronize, stream); r != CUDA_SUCCESS) return r;
    if (pitch == width * sizeof(T)) width *= height, height = 1;  // rows back to back: one fill
    for (size_t row = 0; row < height; ++row)
        if (Status s = adsm::interpose::fill_shared_pattern(static_cast<char *>(ptr(dst)) + row * pitch, &value,
                                                            sizeof value, width);
            s != adsmSuccess)
            return to_cu(s, fn);
    return CUDA_SUCCESS;
}

// Our kernels first, then whatever the driver has of its own.
#define SYNC_THEN_FORWARD(name, ...)                                          \
    do {                                                                      \
        if (!adsm::interpose::gpu_routed(kApi)) return FORWARD(name, __VA_ARGS__); \
        CUresult ours_ = to_cu(bridge::sync(), #name);                        \
        CUresult theirs_ = FORWARD(name, __VA_ARGS__);                        \
        return ours_ != CUDA_SUCCESS ? ours_ : theirs_;                       \
    } while (0)

// A driver function handed out by cuGetProcAddress becomes our wrapper of
// it when it is one we wrap, whatever name or version was asked for.
void substitute(void **pfn) {
    if (!bridge::routed(kApi)) return;
    for (auto &s : g_gpu_symbols)
        if (adsm::interpose::gpu_real(s) == *pfn) {
            *pfn = s.wrapper;
            return;
        }
}

}  // namespace

#define CUDA_WRAPPER(name, ...) extern "C" __attribute__((visibility("default"))) CUresult CUDAAPI name(__VA_ARGS__)

CUDA_WRAPPER(cuMemAllocManaged, CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    if (!adsm::interpose::gpu_routed(kApi)) return FORWARD(cuMemAllocManaged, dptr, bytesize, flags);
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    void *p = nullptr;
    if (CUresult r = to_cu(bridge::alloc(bytesize, 0, &p), "cuMemAllocManaged"); r != CUDA_SUCCESS) return r;
    *dptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemFree_v2, CUdeviceptr dptr) {
    void *p = reinterpret_cast<void *>(dptr);
    if (adsm::interpose::gpu_routed(kApi) && bridge::owns(p)) {
        CUresult r = to_cu(bridge::free(p), "cuMemFree");
        if (r == CUDA_SUCCESS) adsm::interpose::range_advice::forget(dptr);
        return r;
    }
    return FORWARD(cuMemFree_v2, dptr);
}

CUDA_WRAPPER(cuModuleGetFunction, CUfunction *hfunc, CUmodule hmod, const char *name) {
    CUresult r = FORWARD(cuModuleGetFunction, hfunc, hmod, name);
    if (r == CUDA_SUCCESS && hfunc && name && bridge::routed(kApi))
        if (auto *rec = g_functions.obtain(*hfunc)) rec->set(name);
    if (r == CUDA_SUCCESS && hfunc)
        if (auto *legacy = g_legacy.find(*hfunc)) legacy->reset();  // a handle given out again
    return r;
}

// Work the driver launches as the program made it, on the program's
// stream, after a release: the next synchronisation, of whichever stream,
// waits for it and acquires (gpu_bridge::release_for_driver_launch).
namespace {
template <class Forward>
CUresult driver_launch(const char *fn, CUstream stream, Forward &&forward) {
    CUresult own = CUDA_SUCCESS;  // the driver's own error, passed on as it is
    Status s = bridge::release_for_driver_launch(stream, [&] {
        own = forward();
        return own == CUDA_SUCCESS ? adsmSuccess : adsm::fail(adsmErrorLaunchFailure, "%s: CUDA error %d", fn, own);
    });
    if (own != CUDA_SUCCESS) return own;
    return to_cu(s, fn);
}

// A launch the runtime's own would not reproduce: cuLaunchKernelEx's
// attributes (cooperative, clusters, priority, ...) and a cooperative
// launch.  On the cuda device it goes to the driver as the program made it
// (after a release, as a graph's launch); on an emulated device, whose
// kernels are host functions, as an ordinary launch (`ordinary`), which
// also records one on a capturing stream.
template <class Ordinary, class Forward>
CUresult launch_as_made(const char *fn, CUstream stream, Ordinary &&ordinary, Forward &&forward) {
    if (!bridge::runs_program_kernels() || adsm::interpose::cuda_capturing(stream)) return ordinary();
    return driver_launch(fn, stream, forward);
}
}  // namespace

CUDA_WRAPPER(cuLaunchKernel, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
             unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra) {
    if (!adsm::interpose::gpu_routed(kApi)) return FORWARD(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
    return launch("cuLaunchKernel", f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, extra,
                  [&] { return FORWARD(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shared, s, params, extra); });
}

CUDA_WRAPPER(cuLaunchKernel_ptsz, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
             unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra) {
    if (!adsm::interpose::gpu_routed(kApi))
        return FORWARD(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
    return launch("cuLaunchKernel", f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, extra,
                  [&] { return FORWARD(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, s, params, extra); });
}

// With attributes, a launch the runtime's own would not reproduce (launch_as_made).
CUDA_WRAPPER(cuLaunchKernelEx, const CUlaunchConfig *config, CUfunction f, void **params, void **extra) {
    auto forward = [&] { return FORWARD(cuLaunchKernelEx, config, f, params, extra); };
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    auto ordinary = [&] { return launch_ex("cuLaunchKernelEx", config, f, params, extra, forward); };
    if (!config || config->numAttrs == 0 || !f) return ordinary();
    return launch_as_made("cuLaunchKernelEx", config->hStream, ordinary, forward);
}

CUDA_WRAPPER(cuLaunchKernelEx_ptsz, const CUlaunchConfig *config, CUfunction f, void **params, void **extra) {
    auto forward = [&] { return FORWARD(cuLaunchKernelEx_ptsz, config, f, params, extra); };
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    auto ordinary = [&] { return launch_ex("cuLaunchKernelEx", config, f, params, extra, forward); };
    if (!config || config->numAttrs == 0 || !f) return ordinary();
    return launch_as_made("cuLaunchKernelEx", per_thread(config->hStream), ordinary, forward);
}

CUDA_WRAPPER(cuLaunchCooperativeKernel, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params) {
    auto forward = [&] { return FORWARD(cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shared, s, params); };
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    return launch_as_made(
        "cuLaunchCooperativeKernel", s,
        [&] { return launch("cuLaunchCooperativeKernel", f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, nullptr, forward); },
        forward);
}
CUDA_WRAPPER(cuLaunchCooperativeKernel_ptsz, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params) {
    auto forward = [&] {
        return FORWARD(cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, s, params);
    };
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    return launch_as_made(
        "cuLaunchCooperativeKernel", per_thread(s),
        [&] { return launch("cuLaunchCooperativeKernel", f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, nullptr, forward); },
        forward);
}

// A cooperative launch on several devices: on the cuda device the driver's
// as made (its streams' contexts follow the first's); on an emulated device
// each an ordinary launch, in order.
CUDA_WRAPPER(cuLaunchCooperativeKernelMultiDevice, CUDA_LAUNCH_PARAMS *list, unsigned int count, unsigned int flags) {
    auto forward = [&] { return FORWARD(cuLaunchCooperativeKernelMultiDevice, list, count, flags); };
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    if (!list || count == 0) return CUDA_ERROR_INVALID_VALUE;
    auto ordinary = [&] {
        for (unsigned i = 0; i < count; ++i) {
            const CUDA_LAUNCH_PARAMS &l = list[i];
            auto forward_one = [&] {  // (recorded into a graph: each as a cooperative launch)
                return FORWARD(cuLaunchCooperativeKernel, l.function, l.gridDimX, l.gridDimY, l.gridDimZ, l.blockDimX,
                               l.blockDimY, l.blockDimZ, l.sharedMemBytes, l.hStream, l.kernelParams);
            };
            if (CUresult r = launch("cuLaunchCooperativeKernelMultiDevice", l.function, {l.gridDimX, l.gridDimY, l.gridDimZ},
                                    {l.blockDimX, l.blockDimY, l.blockDimZ}, l.sharedMemBytes, l.hStream, l.kernelParams,
                                    nullptr, forward_one);
                r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    };
    return launch_as_made("cuLaunchCooperativeKernelMultiDevice", list[0].hStream, ordinary, forward);
}

// The deprecated launch (cuda_legacy_launch.h): each setting goes to the
// driver, and is kept once the driver took it.
namespace {
template <class Forward, class Keep>
CUresult legacy_setting(const char *fn, CUfunction f, Forward &&forward, Keep &&keep) {
    CUresult r = forward();
    if (r != CUDA_SUCCESS || !adsm::interpose::gpu_routed(kApi)) return r;
    adsm::interpose::LegacyLaunchSetup *setup = g_legacy.obtain(f);
    if (!setup) {
        adsm::log(adsm::LogLevel::error, "%s: no room to keep the settings of another function", fn);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!keep(*setup)) {
        adsm::log(adsm::LogLevel::error, "%s: a kernel's arguments take at most %zu bytes", fn,
                  adsm::interpose::LegacyLaunchSetup::kMostBytes);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

template <class Forward>
CUresult legacy_launch(const char *fn, CUfunction f, int width, int height, CUstream stream, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi)) return forward();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (width <= 0 || height <= 0) return CUDA_ERROR_INVALID_VALUE;
    adsm::interpose::LegacyLaunchSetup::Launch l;
    const adsm::interpose::LegacyLaunchSetup *setup = g_legacy.find(f);
    if (!setup || !setup->take(&l)) {
        adsm::log(adsm::LogLevel::error, "%s: the function has no block shape (cuFuncSetBlockShape comes first)", fn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t size = l.params.size();
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, l.params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    return launch(fn, f, {static_cast<unsigned>(width), static_cast<unsigned>(height), 1},
                  {l.block[0], l.block[1], l.block[2]}, l.shared, stream, nullptr, size ? extra : nullptr, forward,
                  true);
}
}  // namespace

CUDA_WRAPPER(cuFuncSetBlockShape, CUfunction f, int x, int y, int z) {
    return legacy_setting(
        "cuFuncSetBlockShape", f, [&] { return FORWARD(cuFuncSetBlockShape, f, x, y, z); },
        [&](adsm::interpose::LegacyLaunchSetup &l) {
            l.set_block(static_cast<unsigned>(x), static_cast<unsigned>(y), static_cast<unsigned>(z));
            return true;
        });
}
CUDA_WRAPPER(cuFuncSetSharedSize, CUfunction f, unsigned int bytes) {
    return legacy_setting(
        "cuFuncSetSharedSize", f, [&] { return FORWARD(cuFuncSetSharedSize, f, bytes); },
        [&](adsm::interpose::LegacyLaunchSetup &l) {
            l.set_shared(bytes);
            return true;
        });
}
CUDA_WRAPPER(cuParamSetSize, CUfunction f, unsigned int bytes) {
    return legacy_setting(
        "cuParamSetSize", f, [&] { return FORWARD(cuParamSetSize, f, bytes); },
        [&](adsm::interpose::LegacyLaunchSetup &l) { return l.set_size(bytes); });
}
CUDA_WRAPPER(cuParamSeti, CUfunction f, int offset, unsigned int value) {
    return legacy_setting(
        "cuParamSeti", f, [&] { return FORWARD(cuParamSeti, f, offset, value); },
        [&](adsm::interpose::LegacyLaunchSetup &l) { return offset >= 0 && l.set(offset, &value, sizeof value); });
}
CUDA_WRAPPER(cuParamSetf, CUfunction f, int offset, float value) {
    return legacy_setting(
        "cuParamSetf", f, [&] { return FORWARD(cuParamSetf, f, offset, value); },
        [&](adsm::interpose::LegacyLaunchSetup &l) { return offset >= 0 && l.set(offset, &value, sizeof value); });
}
CUDA_WRAPPER(cuParamSetv, CUfunction f, int offset, void *value, unsigned int bytes) {
    return legacy_setting(
        "cuParamSetv", f, [&] { return FORWARD(cuParamSetv, f, offset, value, bytes); },
        [&](adsm::interpose::LegacyLaunchSetup &l) { return offset >= 0 && (value || !bytes) && l.set(offset, value, bytes); });
}
CUDA_WRAPPER(cuLaunch, CUfunction f) {
    return legacy_launch("cuLaunch", f, 1, 1, nullptr, [&] { return FORWARD(cuLaunch, f); });
}
CUDA_WRAPPER(cuLaunchGrid, CUfunction f, int width, int height) {
    return legacy_launch("cuLaunchGrid", f, width, height, nullptr,
                         [&] { return FORWARD(cuLaunchGrid, f, width, height); });
}
CUDA_WRAPPER(cuLaunchGridAsync, CUfunction f, int width, int height, CUstream s) {
    return legacy_launch("cuLaunchGridAsync", f, width, height, s,
                         [&] { return FORWARD(cuLaunchGridAsync, f, width, height, s); });
}

// A graph's kernels may use shared memory (on the cuda device, launches
// captured into it went to the driver as they were): its launch releases
// as a kernel launch does, and the next synchronisation acquires.
template <class Forward>
CUresult graph_launch(CUstream stream, Forward &&forward) {
    if (!adsm::interpose::gpu_routed(kApi) || !bridge::runs_program_kernels()) return forward();
    return driver_launch("cuGraphLaunch", stream, forward);
}
CUDA_WRAPPER(cuGraphLaunch, CUgraphExec e, CUstream s) {
    return graph_launch(s, [&] { return FORWARD(cuGraphLaunch, e, s); });
}
CUDA_WRAPPER(cuGraphLaunch_ptsz, CUgraphExec e, CUstream s) {
    return graph_launch(per_thread(s), [&] { return FORWARD(cuGraphLaunch_ptsz, e, s); });
}

// A host function on a routed stream runs here and now (cuda_host_functions.h).
namespace {
template <class StreamSync, class Call>
CUresult run_host_function(const char *fn, StreamSync &&stream_sync, Call &&call) {
    return adsm::interpose::run_host_function_now(
        CUDA_SUCCESS, [&] { return to_cu(bridge::sync(), fn); }, stream_sync, call);
}
}  // namespace
namespace {
struct HostNode {
    adsm::interpose::HostFn fn;
    void *data;
};
std::mutex g_host_nodes_mu;
std::vector<std::unique_ptr<HostNode>> g_host_nodes;

void CUDA_CB run_host_node(void *arg) {
    const HostNode *node = static_cast<const HostNode *>(arg);
    adsm::OnDriverThread marked;
    node->fn(node->data);
}
}  // namespace

namespace adsm::interpose {

bool cuda_host_function_captured(void *stream) {
    return gpu_routed(kApi) && bridge::started() && cuda_capturing(stream);
}

CapturedHostFn cuda_host_node(HostFn fn, void *data) {
    adsm::Inside private_allocations;
    std::lock_guard<std::mutex> lock(g_host_nodes_mu);
    for (auto &n : g_host_nodes)
        if (n->fn == fn && n->data == data) return {run_host_node, n.get()};
    g_host_nodes.push_back(std::unique_ptr<HostNode>(new HostNode{fn, data}));
    return {run_host_node, g_host_nodes.back().get()};
}

}  // namespace adsm::interpose

CUDA_WRAPPER(cuLaunchHostFunc, CUstream s, CUhostFn f, void *data) {
    if (f && adsm::interpose::cuda_host_function_captured(s)) {
        auto node = adsm::interpose::cuda_host_node(f, data);
        return FORWARD(cuLaunchHostFunc, s, node.fn, node.data);
    }
    if (!f || !adsm::interpose::cuda_host_function_runs_here(s)) return FORWARD(cuLaunchHostFunc, s, f, data);
    return run_host_function(
        "cuLaunchHostFunc", [&] { return FORWARD(cuStreamSynchronize, s); },
        [&] { f(data); });
}
CUDA_WRAPPER(cuLaunchHostFunc_ptsz, CUstream s, CUhostFn f, void *data) {
    if (f && adsm::interpose::cuda_host_function_captured(per_thread(s))) {
        auto node = adsm::interpose::cuda_host_node(f, data);
        return FORWARD(cuLaunchHostFunc_ptsz, s, node.fn, node.data);
    }
    if (!f || !adsm::interpose::cuda_host_function_runs_here(per_thread(s)))
        return FORWARD(cuLaunchHostFunc_ptsz, s, f, data);
    return run_host_function(
        "cuLaunchHostFunc", [&] { return FORWARD(cuStreamSynchronize_ptsz, s); },
        [&] { f(data); });
}
CUDA_WRAPPER(cuStreamAddCallback, CUstream s, CUstreamCallback cb, void *data, unsigned int flags) {
    if (!cb || flags != 0 || !adsm::interpose::cuda_host_function_runs_here(s))
        return FORWARD(cuStreamAddCallback, s, cb, data, flags);
    return run_host_function(
        "cuStreamAddCallback", [&] { return FORWARD(cuStreamSynchronize, s); }, [&] { cb(s, CUDA_SUCCESS, data); });
}
CUDA_WRAPPER(cuStreamAddCallback_ptsz, CUstream s, CUstreamCallback cb, void *data, unsigned int flags) {
    if (!cb || flags != 0 || !adsm::interpose::cuda_host_function_runs_here(per_thread(s)))
        return FORWARD(cuStreamAddCallback_ptsz, s, cb, data, flags);
    return run_host_function(
        "cuStreamAddCallback", [&] { return FORWARD(cuStreamSynchronize_ptsz, s); },
        [&] { cb(s, CUDA_SUCCESS, data); });
}

CUDA_WRAPPER(cuCtxSynchronize, void) { SYNC_THEN_FORWARD(cuCtxSynchronize); }
CUDA_WRAPPER(cuStreamSynchronize, CUstream s) { SYNC_THEN_FORWARD(cuStreamSynchronize, s); }
CUDA_WRAPPER(cuStreamSynchronize_ptsz, CUstream s) { SYNC_THEN_FORWARD(cuStreamSynchronize_ptsz, s); }
CUDA_WRAPPER(cuStreamQuery, CUstream s) { SYNC_THEN_FORWARD(cuStreamQuery, s); }
CUDA_WRAPPER(cuStreamQuery_ptsz, CUstream s) { SYNC_THEN_FORWARD(cuStreamQuery_ptsz, s); }
CUDA_WRAPPER(cuEventSynchronize, CUevent e) { SYNC_THEN_FORWARD(cuEventSynchronize, e); }
CUDA_WRAPPER(cuEventQuery, CUevent e) { SYNC_THEN_FORWARD(cuEventQuery, e); }

CUDA_WRAPPER(cuGetProcAddress, const char *symbol, void **pfn, int version, cuuint64_t flags) {
    ADSM_LOG(debug, "cuGetProcAddress(%s, version %d, flags %llu)", symbol ? symbol : "(null)", version,
             static_cast<unsigned long long>(flags));
    CUresult r = FORWARD(cuGetProcAddress, symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && pfn && *pfn) substitute(pfn);
    return r;
}

CUDA_WRAPPER(cuGetProcAddress_v2, const char *symbol, void **pfn, int version, cuuint64_t flags,
             CUdriverProcAddressQueryResult *status) {
    ADSM_LOG(debug, "cuGetProcAddress(%s, version %d, flags %llu)", symbol ? symbol : "(null)", version,
             static_cast<unsigned long long>(flags));
    CUresult r = FORWARD(cuGetProcAddress_v2, symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && pfn && *pfn) substitute(pfn);
    return r;
}


// Copies and fills.  A host-side pointer is host memory and a device-side
// one the driver's, unless it is shared memory; cuMemcpy asks the driver.
// The synchronous forms wait for the legacy (or per-thread) default stream.
#define HTOD(name, stream, ...)                                                                                    \
    copy("cuMemcpyHtoD", stream, ptr(dst), Side::device, src, Side::host, n, [&] { return FORWARD(name, __VA_ARGS__); })
#define DTOH(name, stream, ...)                                                                                    \
    copy("cuMemcpyDtoH", stream, dst, Side::host, ptr(src), Side::device, n, [&] { return FORWARD(name, __VA_ARGS__); })
#define DTOD(name, stream, ...)                                                                                    \
    copy("cuMemcpyDtoD", stream, ptr(dst), Side::device, ptr(src), Side::device, n,                                \
         [&] { return FORWARD(name, __VA_ARGS__); })
#define UNIFIED(name, stream, ...)                                                                                 \
    copy("cuMemcpy", stream, ptr(dst), side_of(dst), ptr(src), side_of(src), n, [&] { return FORWARD(name, __VA_ARGS__); })
#define FILL(fn, value, name, stream, ...) fill(fn, stream, dst, value, n, [&] { return FORWARD(name, __VA_ARGS__); })

CUDA_WRAPPER(cuMemcpyHtoD_v2, CUdeviceptr dst, const void *src, size_t n) {
    return HTOD(cuMemcpyHtoD_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoD_v2_ptds, CUdeviceptr dst, const void *src, size_t n) {
    return HTOD(cuMemcpyHtoD_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoDAsync_v2, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    return HTOD(cuMemcpyHtoDAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    s = per_thread(s);
    return HTOD(cuMemcpyHtoDAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoH_v2, void *dst, CUdeviceptr src, size_t n) {
    return DTOH(cuMemcpyDtoH_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoH_v2_ptds, void *dst, CUdeviceptr src, size_t n) {
    return DTOH(cuMemcpyDtoH_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoHAsync_v2, void *dst, CUdeviceptr src, size_t n, CUstream s) {
    return DTOH(cuMemcpyDtoHAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoHAsync_v2_ptsz, void *dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return DTOH(cuMemcpyDtoHAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoD_v2, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return DTOD(cuMemcpyDtoD_v2, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoD_v2_ptds, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return DTOD(cuMemcpyDtoD_v2_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoDAsync_v2, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return DTOD(cuMemcpyDtoDAsync_v2, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return DTOD(cuMemcpyDtoDAsync_v2_ptsz, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpy, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return UNIFIED(cuMemcpy, CU_STREAM_LEGACY, dst, src, n);
}
CUDA_WRAPPER(cuMemcpy_ptds, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return UNIFIED(cuMemcpy_ptds, CU_STREAM_PER_THREAD, dst, src, n);
}
// Between contexts: shared memory is one address space whichever context
// names it.
CUDA_WRAPPER(cuMemcpyPeer, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
    return UNIFIED(cuMemcpyPeer, CU_STREAM_LEGACY, dst, dc, src, sc, n);
}
CUDA_WRAPPER(cuMemcpyPeer_ptds, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
    return UNIFIED(cuMemcpyPeer_ptds, CU_STREAM_PER_THREAD, dst, dc, src, sc, n);
}
CUDA_WRAPPER(cuMemcpyPeerAsync, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s) {
    return UNIFIED(cuMemcpyPeerAsync, s, dst, dc, src, sc, n, s);
}
CUDA_WRAPPER(cuMemcpyPeerAsync_ptsz, CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
             CUstream s) {
    s = per_thread(s);
    return UNIFIED(cuMemcpyPeerAsync_ptsz, s, dst, dc, src, sc, n, s);
}
CUDA_WRAPPER(cuMemcpyAsync, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return UNIFIED(cuMemcpyAsync, s, dst, src, n, s);
}
CUDA_WRAPPER(cuMemcpyAsync_ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    s = per_thread(s);
    return UNIFIED(cuMemcpyAsync_ptsz, s, dst, src, n, s);
}
// Copies with a CUDA array on one side (shared memory on the other: through
// the protocol, the array side by the driver's host copies).
#define TO_ARRAY(fn, name, stream, from, ...)                                          \
    array_copy(                                                                        \
        fn, stream, from, n, false, [&] { return FORWARD(name, __VA_ARGS__); },        \
        [&](size_t off, unsigned char *buf, size_t len) {                              \
            return FORWARD(cuMemcpyHtoA_v2, dst, offset + off, buf, len);              \
        })
#define FROM_ARRAY(fn, name, stream, to, ...)                                          \
    array_copy(                                                                        \
        fn, stream, to, n, true, [&] { return FORWARD(name, __VA_ARGS__); },           \
        [&](size_t off, unsigned char *buf, size_t len) {                              \
            return FORWARD(cuMemcpyAtoH_v2, buf, src, offset + off, len);              \
        })

CUDA_WRAPPER(cuMemcpyHtoA_v2, CUarray dst, size_t offset, const void *src, size_t n) {
    return TO_ARRAY("cuMemcpyHtoA", cuMemcpyHtoA_v2, CU_STREAM_LEGACY, src, dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoA_v2_ptds, CUarray dst, size_t offset, const void *src, size_t n) {
    return TO_ARRAY("cuMemcpyHtoA", cuMemcpyHtoA_v2_ptds, CU_STREAM_PER_THREAD, src, dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyHtoAAsync_v2, CUarray dst, size_t offset, const void *src, size_t n, CUstream s) {
    return TO_ARRAY("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync_v2, s, src, dst, offset, src, n, s);
}
CUDA_WRAPPER(cuMemcpyHtoAAsync_v2_ptsz, CUarray dst, size_t offset, const void *src, size_t n, CUstream s) {
    s = per_thread(s);
    return TO_ARRAY("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync_v2_ptsz, s, src, dst, offset, src, n, s);
}
CUDA_WRAPPER(cuMemcpyDtoA_v2, CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
    return TO_ARRAY("cuMemcpyDtoA", cuMemcpyDtoA_v2, CU_STREAM_LEGACY, ptr(src), dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyDtoA_v2_ptds, CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
    return TO_ARRAY("cuMemcpyDtoA", cuMemcpyDtoA_v2_ptds, CU_STREAM_PER_THREAD, ptr(src), dst, offset, src, n);
}
CUDA_WRAPPER(cuMemcpyAtoH_v2, void *dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoH", cuMemcpyAtoH_v2, CU_STREAM_LEGACY, dst, dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoH_v2_ptds, void *dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoH", cuMemcpyAtoH_v2_ptds, CU_STREAM_PER_THREAD, dst, dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoHAsync_v2, void *dst, CUarray src, size_t offset, size_t n, CUstream s) {
    return FROM_ARRAY("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync_v2, s, dst, dst, src, offset, n, s);
}
CUDA_WRAPPER(cuMemcpyAtoHAsync_v2_ptsz, void *dst, CUarray src, size_t offset, size_t n, CUstream s) {
    s = per_thread(s);
    return FROM_ARRAY("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync_v2_ptsz, s, dst, dst, src, offset, n, s);
}
CUDA_WRAPPER(cuMemcpyAtoD_v2, CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoD", cuMemcpyAtoD_v2, CU_STREAM_LEGACY, ptr(dst), dst, src, offset, n);
}
CUDA_WRAPPER(cuMemcpyAtoD_v2_ptds, CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
    return FROM_ARRAY("cuMemcpyAtoD", cuMemcpyAtoD_v2_ptds, CU_STREAM_PER_THREAD, ptr(dst), dst, src, offset, n);
}

// Each fill width comes in four entry points: synchronous and asynchronous,
// each also with the per-thread default stream.
#define ADSM_FILL_WRAPPERS(bits, type, value)                                                               \
    CUDA_WRAPPER(cuMemsetD##bits##_v2, CUdeviceptr dst, type value, size_t n) {                            \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##_v2, CU_STREAM_LEGACY, dst, value, n);     \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##_v2_ptds, CUdeviceptr dst, type value, size_t n) {                       \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##_v2_ptds, CU_STREAM_PER_THREAD, dst, value, n); \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##Async, CUdeviceptr dst, type value, size_t n, CUstream s) {              \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##Async, s, dst, value, n, s);             \
    }                                                                                                       \
    CUDA_WRAPPER(cuMemsetD##bits##Async_ptsz, CUdeviceptr dst, type value, size_t n, CUstream s) {         \
        return FILL(ADSM_FILL_NAME(bits), value, cuMemsetD##bits##Async_ptsz, per_thread(s), dst, value, n, s); \
    }
#define ADSM_FILL_NAME(bits) "cuMemsetD" #bits

ADSM_FILL_WRAPPERS(8, unsigned char, uc)
ADSM_FILL_WRAPPERS(16, unsigned short, us)
ADSM_FILL_WRAPPERS(32, unsigned int, ui)

#define FILL2D(fn, value, name, stream, ...) \
    fill2d(fn, stream, dst, pitch, value, width, height, [&] { return FORWARD(name, __VA_ARGS__); })
#define ADSM_FILL_2D_WRAPPERS(bits, type, value)                                                               \
    CUDA_WRAPPER(cuMemsetD2D##bits##_v2, CUdeviceptr dst, size_t pitch, type value, size_t width, size_t height) { \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##_v2, CU_STREAM_LEGACY, dst, pitch, value, \
                      width, height);                                                                          \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##_v2_ptds, CUdeviceptr dst, size_t pitch, type value, size_t width,         \
                 size_t height) {                                                                              \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##_v2_ptds, CU_STREAM_PER_THREAD, dst,   \
                      pitch, value, width, height);                                                            \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##Async, CUdeviceptr dst, size_t pitch, type value, size_t width, size_t height, \
                 CUstream s) {                                                                                 \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##Async, s, dst, pitch, value, width,     \
                      height, s);                                                                              \
    }                                                                                                          \
    CUDA_WRAPPER(cuMemsetD2D##bits##Async_ptsz, CUdeviceptr dst, size_t pitch, type value, size_t width,       \
                 size_t height, CUstream s) {                                                                  \
        return FILL2D(ADSM_FILL_2D_NAME(bits), value, cuMemsetD2D##bits##Async_ptsz, per_thread(s), dst, pitch, \
                      value, width, height, s);                                                                \
    }
#define ADSM_FILL_2D_NAME(bits) "cuMemsetD2D" #bits

ADSM_FILL_2D_WRAPPERS(8, unsigned char, uc)
ADSM_FILL_2D_WRAPPERS(16, unsigned short, us)
ADSM_FILL_2D_WRAPPERS(32, unsigned int, ui)

#define BATCH(name, stream, fail_idx, ...) \
    copy_batch(stream, dsts, srcs, sizes, count, fail_idx, [&] { return FORWARD(name, __VA_ARGS__); })
CUDA_WRAPPER(cuMemcpyBatchAsync, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx, CUstream s) {
    return BATCH(cuMemcpyBatchAsync, s, fail_idx, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, fail_idx, s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, size_t *fail_idx, CUstream s) {
    s = per_thread(s);
    return BATCH(cuMemcpyBatchAsync_ptsz, s, fail_idx, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, fail_idx,
                 s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_v2, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, CUstream s) {
    return BATCH(cuMemcpyBatchAsync_v2, s, nullptr, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, s);
}
CUDA_WRAPPER(cuMemcpyBatchAsync_v2_ptsz, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
             CUmemcpyAttributes *attrs, size_t *attrs_idxs, size_t nattrs, CUstream s) {
    s = per_thread(s);
    return BATCH(cuMemcpyBatchAsync_v2_ptsz, s, nullptr, dsts, srcs, sizes, count, attrs, attrs_idxs, nattrs, s);
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
             unsigned long long flags, CUstream s) {
    size_t one_failed = 0;
    return copy_3d_batch(
        s, nops, ops, fail_idx, [&] { return FORWARD(cuMemcpy3DBatchAsync, nops, ops, fail_idx, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync, 1, op, &one_failed, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_ptsz, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
             unsigned long long flags, CUstream s) {
    s = per_thread(s);
    size_t one_failed = 0;
    return copy_3d_batch(
        s, nops, ops, fail_idx, [&] { return FORWARD(cuMemcpy3DBatchAsync_ptsz, nops, ops, fail_idx, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_ptsz, 1, op, &one_failed, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_v2, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s) {
    return copy_3d_batch(
        s, nops, ops, nullptr, [&] { return FORWARD(cuMemcpy3DBatchAsync_v2, nops, ops, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_v2, 1, op, flags, s); });
}
CUDA_WRAPPER(cuMemcpy3DBatchAsync_v2_ptsz, size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
             CUstream s) {
    s = per_thread(s);
    return copy_3d_batch(
        s, nops, ops, nullptr, [&] { return FORWARD(cuMemcpy3DBatchAsync_v2_ptsz, nops, ops, flags, s); },
        [&](CUDA_MEMCPY3D_BATCH_OP *op) { return FORWARD(cuMemcpy3DBatchAsync_v2_ptsz, 1, op, flags, s); });
}

// ---- hints and queries about shared memory

namespace {

namespace advice = adsm::interpose::range_advice;

// A hint on shared memory: where it lives is the protocol's business, so
// it is checked and taken as done.
CUresult hint(const char *fn, CUdeviceptr p, size_t n) {
    Status s = bridge::check_hint_range(ptr(p), n);
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

// The shared allocation [p, p+n) lies in, for the record of advice.
CUresult allocation_of(const char *fn, CUdeviceptr p, size_t n, advice::Allocation *a) {
    if (CUresult r = hint(fn, p, n); r != CUDA_SUCCESS) return r;
    void *base;
    if (Status s = bridge::shared_range(ptr(p), &base, &a->size, &a->identity); s != adsmSuccess) return to_cu(s, fn);
    a->base = reinterpret_cast<uintptr_t>(base);
    return CUDA_SUCCESS;
}

// Where the legacy calls name a device (cuMemAdvise, cuMemPrefetchAsync):
// an ordinal or the CPU.
advice::Location location_of(CUdevice dev) {
    if (dev == CU_DEVICE_CPU) return {advice::Where::host, 0};
    return {advice::Where::device, dev};
}
advice::Location location_of(const CUmemLocation &where) {
    // (4 is CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, which older headers lack.)
    switch (static_cast<int>(where.type)) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return {advice::Where::device, where.id};
    case CU_MEM_LOCATION_TYPE_HOST:
    case 4: return {advice::Where::host, 0};
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return {advice::Where::host_numa, where.id};
    default: return {};
    }
}
bool on_host(advice::Location at) { return at.where == advice::Where::host || at.where == advice::Where::host_numa; }

// A location a prefetch or advice names: the host, or one of the driver's
// devices, as the driver checks it.
CUresult check_location(advice::Location at) {
    if (on_host(at)) return CUDA_SUCCESS;
    if (at.where != advice::Where::device) return CUDA_ERROR_INVALID_DEVICE;
    using GetCount = CUresult (*)(int *);
    static const auto count = reinterpret_cast<GetCount>(adsm::interpose::driver_function(kLibrary, "cuDeviceGetCount"));
    int n = 0;
    if (count) {
        GpuForwarding fw;
        if (CUresult r = count(&n); r != CUDA_SUCCESS) return r;
    }
    return at.id >= 0 && at.id < n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// A prefetch of shared memory moves it (gpu_bridge::prefetch); the
// device it names is the program's one device.  Where it was asked to go
// is recorded for the range queries.
CUresult prefetch(const char *fn, CUdeviceptr p, size_t n, advice::Location to) {
    advice::Allocation a;
    if (CUresult r = allocation_of(fn, p, n, &a); r != CUDA_SUCCESS) return r;
    if (CUresult r = check_location(to); r != CUDA_SUCCESS) return r;
    if (Status s = bridge::prefetch(ptr(p), n, on_host(to)); s != adsmSuccess) return to_cu(s, fn);
    advice::prefetched(a, p, n, to);
    return CUDA_SUCCESS;
}

// A preferred location on the host makes the object the first to go when
// device memory runs short; the rest is a hint (gpu_bridge::prefer_host),
// recorded for the range queries.
CUresult advise(const char *fn, CUdeviceptr p, size_t n, CUmem_advise kind, advice::Location at) {
    advice::Allocation a;
    if (CUresult r = allocation_of(fn, p, n, &a); r != CUDA_SUCCESS) return r;
    if (kind < CU_MEM_ADVISE_SET_READ_MOSTLY || kind > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    bool located = kind == CU_MEM_ADVISE_SET_PREFERRED_LOCATION || kind == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                   kind == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
    if (located)
        if (CUresult r = check_location(at); r != CUDA_SUCCESS) return r;
    Status s = adsmSuccess;
    if (kind == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) s = bridge::prefer_host(ptr(p), n, on_host(at));
    else if (kind == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) s = bridge::prefer_host(ptr(p), n, false);
    if (s != adsmSuccess) return to_cu(s, fn);
    if (!advice::advise(a, p, n, static_cast<advice::Advice>(kind), at)) {
        adsm::log(adsm::LogLevel::warn, "%s: device %d is past the %d devices accessed-by advice records", fn, at.id,
                  advice::kMaxDevices);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

// One range attribute of shared memory, from the advice on it, in the
// driver's form: an int, a location type, or (accessed-by) an array of
// device ordinals with CU_DEVICE_CPU for the host, CU_DEVICE_INVALID after.
CUresult range_attribute(void *data, size_t size, CUmem_range_attribute attr, const advice::Summary &s) {
    auto legacy = [](advice::Location at) -> int {
        if (at.where == advice::Where::device) return at.id;
        return on_host(at) ? CU_DEVICE_CPU : CU_DEVICE_INVALID;
    };
    auto id = [](advice::Location at) -> int {
        return at.where == advice::Where::device || at.where == advice::Where::host_numa ? at.id : CU_DEVICE_INVALID;
    };
    auto scalar = [&](int v) {
        if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
        std::memcpy(data, &v, sizeof v);
        return CUDA_SUCCESS;
    };
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: return scalar(s.read_mostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: return scalar(legacy(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: return scalar(legacy(s.last_prefetch));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: return scalar(static_cast<int>(s.preferred.where));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: return scalar(id(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: return scalar(static_cast<int>(s.last_prefetch.where));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: return scalar(id(s.last_prefetch));
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
        if (size == 0 || size % sizeof(int) != 0) return CUDA_ERROR_INVALID_VALUE;
        int *out = static_cast<int *>(data);
        size_t slots = size / sizeof(int), k = 0;
        if ((s.accessed_by & 1u) && k < slots) out[k++] = CU_DEVICE_CPU;
        for (int d = 0; d < advice::kMaxDevices && k < slots; ++d)
            if (s.accessed_by & (2u << d)) out[k++] = d;
        while (k < slots) out[k++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

bool routed_shared(CUdeviceptr p) { return adsm::interpose::gpu_routed(kApi) && bridge::is_shared(ptr(p)); }

// The attributes the runtime answers for shared memory (the driver would
// describe the device mapping behind it); false for the others.  It is
// managed memory, as the program's cuMemAllocManaged asked for: the driver
// says DEVICE and managed of its own.  (IS_MANAGED's width is not
// documented; programs pass an unsigned int, as MEMORY_TYPE's must be.)
bool shared_attribute(void *data, CUpointer_attribute attr, CUdeviceptr p, CUresult *r) {
    void *base;
    size_t size;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned int *>(data) = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *static_cast<void **>(data) = ptr(p); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr *>(data) = p; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (Status s = bridge::shared_range(ptr(p), &base, &size); s != adsmSuccess) {
            *r = to_cu(s, "cuPointerGetAttribute");
            return true;
        }
        if (attr == CU_POINTER_ATTRIBUTE_RANGE_SIZE) *static_cast<size_t *>(data) = size;
        else *static_cast<CUdeviceptr *>(data) = reinterpret_cast<CUdeviceptr>(base);
        break;
    default: return false;
    }
    *r = CUDA_SUCCESS;
    return true;
}

// Host registration (cudaHostRegister) of shared memory: checked and taken
// as done (gpu_bridge::accept_host_registration); the driver would refuse
// it, the window being its own device range on the cuda device.  Its
// device pointer is the pointer.
CUresult register_shared(CUdeviceptr p, size_t n, unsigned int flags) {
    constexpr unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(bridge::accept_host_registration(ptr(p), n, flags & CU_MEMHOSTREGISTER_IOMEMORY),
                 "cuMemHostRegister");
}

// A stream attachment of shared memory: checked as CUDA checks managed
// memory's, and a hint (gpu_bridge::accept_stream_attach).
CUresult attach_shared(CUstream stream, CUdeviceptr p, size_t n, unsigned int flags) {
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    // (The null stream is every stream: no single one.)
    if (flags == CU_MEM_ATTACH_SINGLE && (!stream || stream == CU_STREAM_LEGACY)) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(bridge::accept_stream_attach(ptr(p), n), "cuStreamAttachMemAsync");
}

}  // namespace

CUDA_WRAPPER(cuMemPrefetchAsync, CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync, p, n, dst, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(dst));
}
CUDA_WRAPPER(cuMemPrefetchAsync_v2, CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags, CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync_v2, p, n, where, flags, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(where));
}
CUDA_WRAPPER(cuMemPrefetchAsync_v2_ptsz, CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags,
             CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync_v2_ptsz, p, n, where, flags, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(where));
}
CUDA_WRAPPER(cuMemAdvise, CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev) {
    if (!routed_shared(p)) return FORWARD(cuMemAdvise, p, n, advice, dev);
    return advise("cuMemAdvise", p, n, advice, location_of(dev));
}
CUDA_WRAPPER(cuMemAdvise_v2, CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation where) {
    if (!routed_shared(p)) return FORWARD(cuMemAdvise_v2, p, n, advice, where);
    return advise("cuMemAdvise", p, n, advice, location_of(where));
}

// The range queries on shared memory answer from the record of advice
// (range_advice.h); the driver does not know the memory as managed.
CUDA_WRAPPER(cuMemRangeGetAttribute, void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
             size_t count) {
    if (!routed_shared(p)) return FORWARD(cuMemRangeGetAttribute, data, size, attr, p, count);
    if (!data || count == 0) return CUDA_ERROR_INVALID_VALUE;
    advice::Allocation a;
    if (CUresult r = allocation_of("cuMemRangeGetAttribute", p, count, &a); r != CUDA_SUCCESS) return r;
    return range_attribute(data, size, attr, advice::summary(a, p, count));
}
CUDA_WRAPPER(cuMemRangeGetAttributes, void **data, size_t *sizes, CUmem_range_attribute *attrs, size_t num,
             CUdeviceptr p, size_t count) {
    if (!routed_shared(p)) return FORWARD(cuMemRangeGetAttributes, data, sizes, attrs, num, p, count);
    if (!data || !sizes || !attrs || num == 0 || count == 0) return CUDA_ERROR_INVALID_VALUE;
    advice::Allocation a;
    if (CUresult r = allocation_of("cuMemRangeGetAttributes", p, count, &a); r != CUDA_SUCCESS) return r;
    advice::Summary s = advice::summary(a, p, count);
    for (size_t i = 0; i < num; ++i) {
        if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
        if (CUresult r = range_attribute(data[i], sizes[i], attrs[i], s); r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemGetAddressRange_v2, CUdeviceptr *pbase, size_t *psize, CUdeviceptr p) {
    if (!routed_shared(p)) return FORWARD(cuMemGetAddressRange_v2, pbase, psize, p);
    void *base;
    size_t size;
    if (Status s = bridge::shared_range(ptr(p), &base, &size); s != adsmSuccess)
        return to_cu(s, "cuMemGetAddressRange");
    if (pbase) *pbase = reinterpret_cast<CUdeviceptr>(base);
    if (psize) *psize = size;
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemHostRegister_v2, void *p, size_t n, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostRegister_v2, p, n, flags);
    return register_shared(device_ptr(p), n, flags);
}
CUDA_WRAPPER(cuMemHostRegister, void *p, size_t n, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostRegister, p, n, flags);
    return register_shared(device_ptr(p), n, flags);
}
CUDA_WRAPPER(cuMemHostUnregister, void *p) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostUnregister, p);
    return CUDA_SUCCESS;
}
CUDA_WRAPPER(cuMemHostGetDevicePointer_v2, CUdeviceptr *d, void *p, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostGetDevicePointer_v2, d, p, flags);
    if (!d || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    *d = device_ptr(p);
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuStreamAttachMemAsync, CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
    if (!routed_shared(p)) return FORWARD(cuStreamAttachMemAsync, s, p, n, flags);
    return attach_shared(s, p, n, flags);
}
CUDA_WRAPPER(cuStreamAttachMemAsync_ptsz, CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
    if (!routed_shared(p)) return FORWARD(cuStreamAttachMemAsync_ptsz, s, p, n, flags);
    return attach_shared(per_thread(s), p, n, flags);
}

CUDA_WRAPPER(cuPointerGetAttribute, void *data, CUpointer_attribute attr, CUdeviceptr p) {
    CUresult r;
    if (data && routed_shared(p) && shared_attribute(data, attr, p, &r)) return r;
    return FORWARD(cuPointerGetAttribute, data, attr, p);
}

CUDA_WRAPPER(cuPointerGetAttributes, unsigned int count, CUpointer_attribute *attrs, void **data, CUdeviceptr p) {
    CUresult r = FORWARD(cuPointerGetAttributes, count, attrs, data, p);
    if (r != CUDA_SUCCESS || !attrs || !data || !routed_shared(p)) return r;
    for (unsigned int i = 0; i < count; ++i)
        if (data[i] && shared_attribute(data[i], attrs[i], p, &r) && r != CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemcpy2D_v2, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy2D_v2, c); });
}
CUDA_WRAPPER(cuMemcpy2D_v2_ptds, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy2D_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy2DUnaligned_v2, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy2DUnaligned_v2, c); });
}
CUDA_WRAPPER(cuMemcpy2DUnaligned_v2_ptds, const CUDA_MEMCPY2D *c) {
    return copy2d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy2DUnaligned_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy2DAsync_v2, const CUDA_MEMCPY2D *c, CUstream s) {
    return copy2d(s, c, [&] { return FORWARD(cuMemcpy2DAsync_v2, c, s); });
}
CUDA_WRAPPER(cuMemcpy2DAsync_v2_ptsz, const CUDA_MEMCPY2D *c, CUstream s) {
    s = per_thread(s);
    return copy2d(s, c, [&] { return FORWARD(cuMemcpy2DAsync_v2_ptsz, c, s); });
}
CUDA_WRAPPER(cuMemcpy3D_v2, const CUDA_MEMCPY3D *c) {
    return copy3d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy3D_v2, c); });
}
CUDA_WRAPPER(cuMemcpy3D_v2_ptds, const CUDA_MEMCPY3D *c) {
    return copy3d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy3D_v2_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy3DAsync_v2, const CUDA_MEMCPY3D *c, CUstream s) {
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DAsync_v2, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DAsync_v2_ptsz, const CUDA_MEMCPY3D *c, CUstream s) {
    s = per_thread(s);
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DAsync_v2_ptsz, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DPeer, const CUDA_MEMCPY3D_PEER *c) {
    return copy3d(CU_STREAM_LEGACY, c, [&] { return FORWARD(cuMemcpy3DPeer, c); });
}
CUDA_WRAPPER(cuMemcpy3DPeer_ptds, const CUDA_MEMCPY3D_PEER *c) {
    return copy3d(CU_STREAM_PER_THREAD, c, [&] { return FORWARD(cuMemcpy3DPeer_ptds, c); });
}
CUDA_WRAPPER(cuMemcpy3DPeerAsync, const CUDA_MEMCPY3D_PEER *c, CUstream s) {
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DPeerAsync, c, s); });
}
CUDA_WRAPPER(cuMemcpy3DPeerAsync_ptsz, const CUDA_MEMCPY3D_PEER *c, CUstream s) {
    s = per_thread(s);
    return copy3d(s, c, [&] { return FORWARD(cuMemcpy3DPeerAsync_ptsz, c, s); });
}
