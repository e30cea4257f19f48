// The CUDA runtime API, for programs that link it dynamically (a static one
// is reached through the driver: see cuda_driver*.cpp).  The runtime's own
// launch path goes through private driver entry points, so the launch and
// synchronisation calls are wrapped here too, with the same meaning as the
// driver's.  Kernel names come from the registrations nvcc's start-up code
// makes (__cudaRegisterFunction), or from cudaFuncGetName.
#include <cuda_runtime_api.h>

#include "interpose/cuda_graphs.h"
#include "interpose/cuda_host_functions.h"
#include "interpose/gpu_copies.h"
#include "interpose/gpu_kernels.h"
#include "interpose/gpu_symbols.h"
#include "interpose/handle_map.h"
#include "interpose/range_advice.h"
#include "support/log.h"

extern "C" {
cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemset_ptds(void *dst, int value, size_t n);
cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void *dst, int value, size_t n, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                             size_t height, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemcpy3D_ptds(const cudaMemcpy3DParms *p);
cudaError_t CUDARTAPI cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms *p, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemset2D_ptds(void *dst, size_t pitch, int value, size_t width, size_t height);
cudaError_t CUDARTAPI cudaMemset2DAsync_ptsz(void *dst, size_t pitch, int value, size_t width, size_t height,
                                             cudaStream_t s);
cudaError_t CUDARTAPI cudaMemset3D_ptds(cudaPitchedPtr p, int value, cudaExtent e);
cudaError_t CUDARTAPI cudaMemset3DAsync_ptsz(cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t n, size_t offset,
                                              cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t n, size_t offset,
                                                cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t n, size_t offset,
                                                   cudaMemcpyKind kind, cudaStream_t s);
cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t n, size_t offset,
                                                     cudaMemcpyKind kind, cudaStream_t s);
void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim,
                                      dim3 *gDim, int *wSize);
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                            size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                       size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t CUDARTAPI cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *data);
cudaError_t CUDARTAPI cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t cb, void *data,
                                                 unsigned int flags);
}

namespace {
constexpr const char *kLibrary = "libcudart.so.13";
constexpr adsm::gpu_bridge::Api kApi = adsm::gpu_bridge::Api::cuda;
}  // namespace

#define CUDA_RUNTIME_SYMBOLS(X)   \
    X(__cudaRegisterFunction)     \
    X(cudaMallocManaged)          \
    X(cudaHostRegister)           \
    X(cudaHostUnregister)         \
    X(cudaHostGetDevicePointer)   \
    X(cudaStreamAttachMemAsync)   \
    X(cudaGraphLaunch)            \
    X(cudaLaunchHostFunc)         \
    X(cudaLaunchHostFunc_ptsz)    \
    X(cudaStreamAddCallback)      \
    X(cudaStreamAddCallback_ptsz) \
    X(cudaFree)                   \
    X(cudaLaunchKernel)           \
    X(cudaLaunchKernel_ptsz)      \
    X(cudaLaunchCooperativeKernel)      \
    X(cudaLaunchCooperativeKernel_ptsz) \
    X(cudaLaunchKernelExC)              \
    X(cudaLaunchKernelExC_ptsz)         \
    X(cudaDeviceSynchronize)      \
    X(cudaStreamSynchronize)      \
    X(cudaStreamSynchronize_ptsz) \
    X(cudaEventSynchronize)       \
    X(cudaGetLastError)           \
    X(cudaPeekAtLastError)        \
    X(cudaMemcpy)                 \
    X(cudaMemcpy_ptds)            \
    X(cudaMemcpyAsync)            \
    X(cudaMemcpyAsync_ptsz)       \
    X(cudaMemset)                 \
    X(cudaMemset_ptds)            \
    X(cudaMemsetAsync)            \
    X(cudaMemsetAsync_ptsz)       \
    X(cudaMemcpy2D)               \
    X(cudaMemcpy2D_ptds)          \
    X(cudaMemcpy2DAsync)          \
    X(cudaMemcpy2DAsync_ptsz)     \
    X(cudaMemcpy3D)               \
    X(cudaMemcpy3D_ptds)          \
    X(cudaMemcpy3DAsync)          \
    X(cudaMemcpy3DAsync_ptsz)     \
    X(cudaMemset2D)               \
    X(cudaMemset2D_ptds)          \
    X(cudaMemset2DAsync)          \
    X(cudaMemset2DAsync_ptsz)     \
    X(cudaMemset3D)               \
    X(cudaMemset3D_ptds)          \
    X(cudaMemset3DAsync)          \
    X(cudaMemset3DAsync_ptsz)     \
    X(cudaMemcpyToSymbol)             \
    X(cudaMemcpyToSymbol_ptds)        \
    X(cudaMemcpyFromSymbol)           \
    X(cudaMemcpyFromSymbol_ptds)      \
    X(cudaMemcpyToSymbolAsync)        \
    X(cudaMemcpyToSymbolAsync_ptsz)   \
    X(cudaMemcpyFromSymbolAsync)      \
    X(cudaMemcpyFromSymbolAsync_ptsz)

ADSM_GPU_FAMILY(cuda_runtime_family, CUDA_RUNTIME_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
using adsm::interpose::gpu_routed;
namespace bridge = adsm::gpu_bridge;

adsm::interpose::HandleMap<adsm::interpose::KernelName, 8192> g_stubs;  // host stub -> device name

// In a _ptsz call stream 0 is the calling thread's default stream, not the
// legacy one: what the runtime waits for before it touches the memory.
cudaStream_t per_thread(cudaStream_t s) { return s ? s : cudaStreamPerThread; }

// Errors of the calls the preload handled itself, for cudaGetLastError as
// the CUDA runtime keeps its own.
__attribute__((tls_model("initial-exec"))) thread_local cudaError_t tls_error = cudaSuccess;

cudaError_t no_runtime(const char *fn) {
    adsm::log(adsm::LogLevel::error, "%s: the CUDA runtime library is not loaded", fn);
    return cudaErrorInitializationError;
}

#define FORWARD(name, ...)                                   \
    ([&]() -> cudaError_t {                                  \
        auto fn_ = GPU_REAL(name);                           \
        if (!fn_) return no_runtime(#name);                  \
        GpuForwarding fw_;                                   \
        return fn_(__VA_ARGS__);                             \
    }())

cudaError_t to_cuda(Status s, const char *fn) {
    if (s == adsmSuccess) return cudaSuccess;
    adsm::log(adsm::LogLevel::warn, "%s: %s", fn, adsm::last_detail());
    cudaError_t e;
    switch (s) {
    case adsmErrorMemoryAllocation: e = cudaErrorMemoryAllocation; break;
    case adsmErrorNotSupported: e = cudaErrorNotSupported; break;
    case adsmErrorKernelNotFound: e = cudaErrorInvalidDeviceFunction; break;
    case adsmErrorInvalidLaunch: e = cudaErrorInvalidConfiguration; break;
    case adsmErrorLaunchFailure: e = cudaErrorLaunchFailure; break;
    case adsmErrorInitialization: e = cudaErrorInitializationError; break;
    case adsmErrorNoDevice: e = cudaErrorNoDevice; break;
    case adsmErrorDeviceLost: e = cudaErrorUnknown; break;
    default: e = cudaErrorInvalidValue; break;
    }
    tls_error = e;
    return e;
}

cudaError_t fail_with(cudaError_t e) {
    tls_error = e;
    return e;
}

const char *runtime_function_name(const void *func) {
    using GetName = cudaError_t (*)(const char **, const void *);
    static const auto get = reinterpret_cast<GetName>(adsm::interpose::driver_function(kLibrary, "cudaFuncGetName"));
    const char *name = nullptr;
    if (!get) return nullptr;
    GpuForwarding fw;
    return get(&name, func) == cudaSuccess ? name : nullptr;
}

// The driver function behind a kernel's host stub (what the GPU runs).
void *driver_function_of(const void *func) {
    using GetFunc = cudaError_t (*)(cudaFunction_t *, const void *);
    static const auto get =
        reinterpret_cast<GetFunc>(adsm::interpose::driver_function(kLibrary, "cudaGetFuncBySymbol"));
    cudaFunction_t f = nullptr;
    if (!get) return nullptr;
    GpuForwarding fw;
    return get(&f, func) == cudaSuccess ? f : nullptr;
}

template <class Forward>
cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream,
                   Forward &&forward) {
    if (!func) return fail_with(cudaErrorInvalidDeviceFunction);
    if (adsm::interpose::cuda_capturing(stream)) {
        if (bridge::runs_program_kernels()) return forward();  // recorded; its graph's launch releases
        adsm::interpose::say_capture_unsupported("cudaLaunchKernel");
        return fail_with(cudaErrorNotSupported);
    }
    adsm::interpose::KernelName *rec = g_stubs.find(func);
    if (bridge::runs_program_kernels()) {
        // The GPU runs the program's own function, on the program's stream.
        void *f = driver_function_of(func);
        if (!f) return fail_with(cudaErrorInvalidDeviceFunction);
        const char *name = rec && rec->named.load(std::memory_order_acquire) ? rec->name : runtime_function_name(func);
        return to_cuda(bridge::launch_program_kernel(f, name, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z},
                                                     static_cast<unsigned>(shared), stream, args),
                       "cudaLaunchKernel");
    }
    adsmKernel_t k;
    Status s = adsm::interpose::registered_kernel(rec, rec ? nullptr : runtime_function_name(func), "cudaLaunchKernel", &k);
    if (s == adsmSuccess) s = bridge::launch(k, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, args);
    return to_cuda(s, "cudaLaunchKernel");
}

#define SYNC_THEN_FORWARD(name, ...)                                   \
    do {                                                               \
        if (!gpu_routed(kApi)) return FORWARD(name, __VA_ARGS__);      \
        cudaError_t ours_ = to_cuda(bridge::sync(), #name);            \
        cudaError_t theirs_ = FORWARD(name, __VA_ARGS__);              \
        return ours_ != cudaSuccess ? ours_ : theirs_;                 \
    } while (0)

}  // namespace

#define CUDART_WRAPPER(ret, name, ...) extern "C" __attribute__((visibility("default"))) ret CUDARTAPI name(__VA_ARGS__)

CUDART_WRAPPER(void, __cudaRegisterFunction, void **handle, const char *hostFun, char *deviceFun,
               const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
    if (bridge::routed(kApi))
        if (auto *rec = g_stubs.obtain(hostFun)) rec->set(deviceFun ? deviceFun : deviceName);
    auto real = GPU_REAL(__cudaRegisterFunction);
    if (!real) {
        no_runtime("__cudaRegisterFunction");
        return;
    }
    GpuForwarding fw;
    real(handle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

CUDART_WRAPPER(cudaError_t, cudaMallocManaged, void **devPtr, size_t size, unsigned int flags) {
    if (!gpu_routed(kApi)) return FORWARD(cudaMallocManaged, devPtr, size, flags);
    if (!devPtr || size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return fail_with(cudaErrorInvalidValue);
    return to_cuda(bridge::alloc(size, 0, devPtr), "cudaMallocManaged");
}

// Host registration of shared memory: as the driver's (cuda_driver_hints.cpp).
CUDART_WRAPPER(cudaError_t, cudaHostRegister, void *p, size_t n, unsigned int flags) {
    if (!gpu_routed(kApi) || !bridge::is_shared(p)) return FORWARD(cudaHostRegister, p, n, flags);
    constexpr unsigned int known =
        cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
    if (flags & ~known) return fail_with(cudaErrorInvalidValue);
    return to_cuda(bridge::accept_host_registration(p, n, flags & cudaHostRegisterIoMemory), "cudaHostRegister");
}
CUDART_WRAPPER(cudaError_t, cudaHostUnregister, void *p) {
    if (!gpu_routed(kApi) || !bridge::is_shared(p)) return FORWARD(cudaHostUnregister, p);
    return cudaSuccess;
}
CUDART_WRAPPER(cudaError_t, cudaHostGetDevicePointer, void **d, void *p, unsigned int flags) {
    if (!gpu_routed(kApi) || !bridge::is_shared(p)) return FORWARD(cudaHostGetDevicePointer, d, p, flags);
    if (!d || flags != 0) return fail_with(cudaErrorInvalidValue);
    *d = p;
    return cudaSuccess;
}

// A stream attachment of shared memory: as the driver's (cuda_driver_hints.cpp).
CUDART_WRAPPER(cudaError_t, cudaStreamAttachMemAsync, cudaStream_t stream, void *p, size_t n, unsigned int flags) {
    if (!gpu_routed(kApi) || !bridge::is_shared(p)) return FORWARD(cudaStreamAttachMemAsync, stream, p, n, flags);
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
        return fail_with(cudaErrorInvalidValue);
    if (flags == cudaMemAttachSingle && (!stream || stream == cudaStreamLegacy)) return fail_with(cudaErrorInvalidValue);
    return to_cuda(bridge::accept_stream_attach(p, n), "cudaStreamAttachMemAsync");
}

CUDART_WRAPPER(cudaError_t, cudaFree, void *p) {
    if (gpu_routed(kApi) && bridge::owns(p)) {
        cudaError_t e = to_cuda(bridge::free(p), "cudaFree");
        if (e == cudaSuccess) adsm::interpose::range_advice::forget(reinterpret_cast<uintptr_t>(p));
        return e;
    }
    return FORWARD(cudaFree, p);
}

CUDART_WRAPPER(cudaError_t, cudaLaunchKernel, const void *func, dim3 grid, dim3 block, void **args, size_t shared,
               cudaStream_t stream) {
    if (!gpu_routed(kApi)) return FORWARD(cudaLaunchKernel, func, grid, block, args, shared, stream);
    return launch(func, grid, block, args, shared, stream,
                  [&] { return FORWARD(cudaLaunchKernel, func, grid, block, args, shared, stream); });
}

CUDART_WRAPPER(cudaError_t, cudaLaunchKernel_ptsz, const void *func, dim3 grid, dim3 block, void **args,
               size_t shared, cudaStream_t stream) {
    if (!gpu_routed(kApi)) return FORWARD(cudaLaunchKernel_ptsz, func, grid, block, args, shared, stream);
    return launch(func, grid, block, args, shared, stream,
                  [&] { return FORWARD(cudaLaunchKernel_ptsz, func, grid, block, args, shared, stream); });
}

// Work the driver launches as the program made it, on the program's
// stream, after a release (as the driver's wrappers do: cuda_driver_launches.cpp).
namespace {
template <class Forward>
cudaError_t driver_launch(const char *fn, cudaStream_t stream, Forward &&forward) {
    cudaError_t own;
    Status st = bridge::release_for_driver_launch(fn, stream, cudaSuccess, own, forward);
    return own != cudaSuccess ? fail_with(own) : to_cuda(st, fn);
}

// A launch the runtime's own would not reproduce (a cooperative one,
// cudaLaunchKernelExC's attributes): on the cuda device as the program made
// it, after a release; on an emulated device as an ordinary launch.
template <class Forward>
cudaError_t launch_as_made(const char *fn, const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                           cudaStream_t stream, Forward &&forward) {
    if (!bridge::runs_program_kernels() || adsm::interpose::cuda_capturing(stream))
        return launch(func, grid, block, args, shared, stream, forward);
    if (!func) return fail_with(cudaErrorInvalidDeviceFunction);
    return driver_launch(fn, stream, forward);
}
}  // namespace

CUDART_WRAPPER(cudaError_t, cudaLaunchCooperativeKernel, const void *func, dim3 grid, dim3 block, void **args,
               size_t shared, cudaStream_t stream) {
    auto forward = [&] { return FORWARD(cudaLaunchCooperativeKernel, func, grid, block, args, shared, stream); };
    if (!gpu_routed(kApi)) return forward();
    return launch_as_made("cudaLaunchCooperativeKernel", func, grid, block, args, shared, stream, forward);
}
CUDART_WRAPPER(cudaError_t, cudaLaunchCooperativeKernel_ptsz, const void *func, dim3 grid, dim3 block, void **args,
               size_t shared, cudaStream_t stream) {
    auto forward = [&] { return FORWARD(cudaLaunchCooperativeKernel_ptsz, func, grid, block, args, shared, stream); };
    if (!gpu_routed(kApi)) return forward();
    return launch_as_made("cudaLaunchCooperativeKernel", func, grid, block, args, shared, per_thread(stream), forward);
}
CUDART_WRAPPER(cudaError_t, cudaLaunchKernelExC, const cudaLaunchConfig_t *config, const void *func, void **args) {
    auto forward = [&] { return FORWARD(cudaLaunchKernelExC, config, func, args); };
    if (!gpu_routed(kApi) || !config) return forward();
    return launch_as_made("cudaLaunchKernelExC", func, config->gridDim, config->blockDim, args,
                          config->dynamicSmemBytes, config->stream, forward);
}
CUDART_WRAPPER(cudaError_t, cudaLaunchKernelExC_ptsz, const cudaLaunchConfig_t *config, const void *func,
               void **args) {
    auto forward = [&] { return FORWARD(cudaLaunchKernelExC_ptsz, config, func, args); };
    if (!gpu_routed(kApi) || !config) return forward();
    return launch_as_made("cudaLaunchKernelExC", func, config->gridDim, config->blockDim, args,
                          config->dynamicSmemBytes, per_thread(config->stream), forward);
}

// A graph launch releases first (cuda_graphs.h).
CUDART_WRAPPER(cudaError_t, cudaGraphLaunch, cudaGraphExec_t e, cudaStream_t s) {
    if (!gpu_routed(kApi) || !bridge::runs_program_kernels()) return FORWARD(cudaGraphLaunch, e, s);
    return driver_launch("cudaGraphLaunch", s, [&] { return FORWARD(cudaGraphLaunch, e, s); });
}

// A host function on a routed stream runs here and now, as the driver's
// (cuda_host_functions.h).
namespace {
template <class StreamSync, class Call>
cudaError_t run_host_function(const char *fn, StreamSync &&stream_sync, Call &&call) {
    return adsm::interpose::run_host_function_now(
        cudaSuccess, [&] { return to_cuda(bridge::sync(), fn); }, stream_sync, call);
}
}  // namespace
CUDART_WRAPPER(cudaError_t, cudaLaunchHostFunc, cudaStream_t s, cudaHostFn_t f, void *data) {
    if (f && adsm::interpose::cuda_host_function_captured(s)) {
        auto node = adsm::interpose::cuda_host_node(f, data);
        return FORWARD(cudaLaunchHostFunc, s, node.fn, node.data);
    }
    if (!f || !adsm::interpose::cuda_host_function_runs_here(s)) return FORWARD(cudaLaunchHostFunc, s, f, data);
    return run_host_function(
        "cudaLaunchHostFunc", [&] { return FORWARD(cudaStreamSynchronize, s); },
        [&] { f(data); });
}
CUDART_WRAPPER(cudaError_t, cudaLaunchHostFunc_ptsz, cudaStream_t s, cudaHostFn_t f, void *data) {
    if (f && adsm::interpose::cuda_host_function_captured(per_thread(s))) {
        auto node = adsm::interpose::cuda_host_node(f, data);
        return FORWARD(cudaLaunchHostFunc_ptsz, s, node.fn, node.data);
    }
    if (!f || !adsm::interpose::cuda_host_function_runs_here(per_thread(s)))
        return FORWARD(cudaLaunchHostFunc_ptsz, s, f, data);
    return run_host_function(
        "cudaLaunchHostFunc", [&] { return FORWARD(cudaStreamSynchronize_ptsz, s); },
        [&] { f(data); });
}
CUDART_WRAPPER(cudaError_t, cudaStreamAddCallback, cudaStream_t s, cudaStreamCallback_t cb, void *data,
               unsigned int flags) {
    if (!cb || flags != 0 || !adsm::interpose::cuda_host_function_runs_here(s))
        return FORWARD(cudaStreamAddCallback, s, cb, data, flags);
    return run_host_function(
        "cudaStreamAddCallback", [&] { return FORWARD(cudaStreamSynchronize, s); },
        [&] { cb(s, cudaSuccess, data); });
}
CUDART_WRAPPER(cudaError_t, cudaStreamAddCallback_ptsz, cudaStream_t s, cudaStreamCallback_t cb, void *data,
               unsigned int flags) {
    if (!cb || flags != 0 || !adsm::interpose::cuda_host_function_runs_here(per_thread(s)))
        return FORWARD(cudaStreamAddCallback_ptsz, s, cb, data, flags);
    return run_host_function(
        "cudaStreamAddCallback", [&] { return FORWARD(cudaStreamSynchronize_ptsz, s); },
        [&] { cb(s, cudaSuccess, data); });
}

CUDART_WRAPPER(cudaError_t, cudaDeviceSynchronize, void) { SYNC_THEN_FORWARD(cudaDeviceSynchronize); }
CUDART_WRAPPER(cudaError_t, cudaStreamSynchronize, cudaStream_t s) { SYNC_THEN_FORWARD(cudaStreamSynchronize, s); }
CUDART_WRAPPER(cudaError_t, cudaStreamSynchronize_ptsz, cudaStream_t s) {
    SYNC_THEN_FORWARD(cudaStreamSynchronize_ptsz, s);
}
CUDART_WRAPPER(cudaError_t, cudaEventSynchronize, cudaEvent_t e) { SYNC_THEN_FORWARD(cudaEventSynchronize, e); }

CUDART_WRAPPER(cudaError_t, cudaGetLastError, void) {
    cudaError_t ours = tls_error;
    tls_error = cudaSuccess;
    cudaError_t theirs = FORWARD(cudaGetLastError);
    return ours != cudaSuccess ? ours : theirs;
}

CUDART_WRAPPER(cudaError_t, cudaPeekAtLastError, void) {
    cudaError_t theirs = FORWARD(cudaPeekAtLastError);
    return tls_error != cudaSuccess ? tls_error : theirs;
}

// ---- copies and fills that touch shared memory (gpu_copies.h)

namespace {

using adsm::interpose::Side;

Status runtime_to_device(void *dev, const void *host, size_t n) {
    cudaError_t e = FORWARD(cudaMemcpy, dev, host, n, cudaMemcpyHostToDevice);
    return e == cudaSuccess ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cudaMemcpy: CUDA error %d", e);
}

Status runtime_to_host(void *host, const void *dev, size_t n) {
    cudaError_t e = FORWARD(cudaMemcpy, host, dev, n, cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "cudaMemcpy: CUDA error %d", e);
}

const adsm::interpose::DriverCopies kRuntimeCopies = {runtime_to_device, runtime_to_host};

// What the CUDA runtime says a pointer is (not shared memory: that is asked first).
Side side_of(const void *p) {
    using GetAttributes = cudaError_t (*)(cudaPointerAttributes *, const void *);
    static const auto get =
        reinterpret_cast<GetAttributes>(adsm::interpose::driver_function(kLibrary, "cudaPointerGetAttributes"));
    cudaPointerAttributes a{};
    if (!get) return Side::host;
    GpuForwarding fw;
    if (get(&a, p) != cudaSuccess) {
        FORWARD(cudaGetLastError);  // not the program's error
        return Side::host;
    }
    return a.type == cudaMemoryTypeDevice ? Side::device : Side::host;
}

// The sides a copy kind names (cudaMemcpyDefault: as the pointers say).
void sides(cudaMemcpyKind kind, const void *dst, const void *src, Side *ds, Side *ss) {
    switch (kind) {
    case cudaMemcpyHostToDevice: *ds = Side::device, *ss = Side::host; break;
    case cudaMemcpyDeviceToHost: *ds = Side::host, *ss = Side::device; break;
    case cudaMemcpyDeviceToDevice: *ds = Side::device, *ss = Side::device; break;
    case cudaMemcpyHostToHost: *ds = Side::host, *ss = Side::host; break;
    default:
        *ds = side_of(dst);
        *ss = side_of(src);
        break;
    }
}

// A copy as the program asked for it, or through the protocol when a side
// is shared memory, after the work queued before it on `stream`.
// Copies and fills of shared memory on a stream that is capturing are the
// graph's nodes (cuda_graphs.h): a copy's kind becomes cudaMemcpyDefault,
// so that unified addressing names a shared side device memory, whatever
// the program named it.  `forward(kind)` makes the program's call with that
// kind.  A refused capture is cudaErrorNotSupported; none: false.
bool captured(const char *fn, cudaStream_t stream, cudaMemcpyKind *kind, cudaError_t *e) {
    switch (adsm::interpose::captured_work(stream, fn)) {
    case adsm::interpose::Captured::no: return false;
    case adsm::interpose::Captured::refuse: *e = fail_with(cudaErrorNotSupported); return true;
    case adsm::interpose::Captured::record: *kind = cudaMemcpyDefault; return true;
    }
    return false;
}

template <class Forward>
cudaError_t copy(const char *fn, cudaStream_t stream, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                 Forward &&forward) {
    if (!gpu_routed(kApi) || (!bridge::is_shared(dst) && !bridge::is_shared(src))) return forward(kind);
    if (cudaError_t e = cudaSuccess; captured(fn, stream, &kind, &e)) return e == cudaSuccess ? forward(kind) : e;
    if (cudaError_t e = FORWARD(cudaStreamSynchronize, stream); e != cudaSuccess) return fail_with(e);
    Side ds, ss;
    sides(kind, dst, src, &ds, &ss);
    Status s = adsmSuccess;
    adsm::interpose::copy_with_shared(dst, ds, src, ss, n, kRuntimeCopies, &s);
    return to_cuda(s, fn);
}

using adsm::interpose::Plane;

// A 2D or 3D copy with shared memory on a side: row by row, after the work
// queued before it on `stream`; rows of the runtime's own memory by its
// own copy of the same kind.
template <class Forward>
cudaError_t copy_rows(const char *fn, cudaStream_t stream, Plane dst, Plane src, size_t width, size_t height,
                      size_t depth, cudaMemcpyKind kind, Forward &&forward) {
    bool shared = (dst.at && bridge::is_shared(dst.at)) || (src.at && bridge::is_shared(src.at));
    if (!gpu_routed(kApi) || !shared) return forward(kind);
    if (cudaError_t e = cudaSuccess; captured(fn, stream, &kind, &e)) return e == cudaSuccess ? forward(kind) : e;
    if (!dst.at || !src.at)
        return to_cuda(adsm::fail(adsmErrorNotSupported, "%s between a CUDA array and shared memory", fn), fn);
    if (height > 1 && (width > dst.pitch || width > src.pitch)) return fail_with(cudaErrorInvalidPitchValue);
    if (cudaError_t e = FORWARD(cudaStreamSynchronize, stream); e != cudaSuccess) return fail_with(e);
    sides(kind, dst.at, src.at, &dst.side, &src.side);
    cudaError_t own = cudaSuccess;  // the runtime's own error, passed on as it is
    Status s = adsm::interpose::copy_box(dst, src, width, height, depth, kRuntimeCopies,
                                         [&](void *d, const void *from, size_t n) -> Status {
        own = FORWARD(cudaMemcpy, d, from, n, kind);
        return own == cudaSuccess ? adsmSuccess : adsm::fail(adsmErrorInvalidValue, "%s", fn);
    });
    if (own != cudaSuccess) return fail_with(own);
    return to_cuda(s, fn);
}

// A copy between a variable of the program's module (__device__,
// __constant__) and shared memory: the variable's device address from the
// runtime, then as any copy with shared memory on a side.  The runtime's own
// way to the driver may take the shared address for host memory, where the
// driver copies nothing.
template <class Forward>
cudaError_t symbol_copy(const char *fn, cudaStream_t stream, const void *symbol, size_t offset, void *dst,
                        const void *src, size_t n, bool to_symbol, cudaMemcpyKind kind, Forward &&forward) {
    if (!gpu_routed(kApi) || !bridge::is_shared(to_symbol ? src : dst)) return forward();
    using GetAddress = cudaError_t (*)(void **, const void *);
    using GetSize = cudaError_t (*)(size_t *, const void *);
    static const auto address =
        reinterpret_cast<GetAddress>(adsm::interpose::driver_function(kLibrary, "cudaGetSymbolAddress"));
    static const auto size = reinterpret_cast<GetSize>(adsm::interpose::driver_function(kLibrary, "cudaGetSymbolSize"));
    if (!address || !size) return no_runtime(fn);
    void *at = nullptr;
    size_t bytes = 0;
    {
        GpuForwarding fw;
        if (cudaError_t e = address(&at, symbol); e != cudaSuccess) return fail_with(e);
        if (cudaError_t e = size(&bytes, symbol); e != cudaSuccess) return fail_with(e);
    }
    if (offset > bytes || n > bytes - offset) {
        adsm::log(adsm::LogLevel::warn, "%s: %zu bytes at offset %zu of a %zu-byte variable", fn, n, offset, bytes);
        return fail_with(cudaErrorInvalidValue);
    }
    char *var = static_cast<char *>(at) + offset;
    if (to_symbol)
        return copy(fn, stream, var, src, n, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyHostToDevice,
                    [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpyAsync, var, src, n, k, stream); });
    return copy(fn, stream, dst, var, n, kind == cudaMemcpyDeviceToDevice ? kind : cudaMemcpyDeviceToHost,
                [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpyAsync, dst, var, n, k, stream); });
}

Plane rows(void *p, size_t pitch) {
    Plane pl;
    pl.at = static_cast<char *>(p);
    pl.pitch = pitch;
    return pl;
}

// One side of a 3D copy (an array has no first byte).
Plane box(cudaArray_t array, const cudaPitchedPtr &ptr, const cudaPos &pos) {
    Plane pl;
    if (array || !ptr.ptr) return pl;
    pl.pitch = ptr.pitch;
    pl.slice = ptr.pitch * ptr.ysize;
    pl.at = static_cast<char *>(ptr.ptr) + pos.z * pl.slice + pos.y * ptr.pitch + pos.x;
    return pl;
}

template <class Forward>
cudaError_t copy3d(const char *fn, cudaStream_t stream, const cudaMemcpy3DParms *p, Forward &&forward) {
    if (!p) return forward(p);
    return copy_rows(fn, stream, box(p->dstArray, p->dstPtr, p->dstPos), box(p->srcArray, p->srcPtr, p->srcPos),
                     p->extent.width, p->extent.height, p->extent.depth, p->kind, [&](cudaMemcpyKind kind) {
                         cudaMemcpy3DParms q = *p;
                         q.kind = kind;
                         return forward(&q);
                     });
}

template <class Forward>
cudaError_t fill(const char *fn, cudaStream_t stream, void *dst, int value, size_t n, Forward &&forward) {
    if (!gpu_routed(kApi) || !bridge::is_shared(dst)) return forward();
    cudaMemcpyKind unused = cudaMemcpyDefault;
    if (cudaError_t e = cudaSuccess; captured(fn, stream, &unused, &e)) return e == cudaSuccess ? forward() : e;
    if (cudaError_t e = FORWARD(cudaStreamSynchronize, stream); e != cudaSuccess) return fail_with(e);
    return to_cuda(bridge::fill_shared(dst, value, n), fn);
}

// A 2D or 3D fill of shared memory, row by row.
template <class Forward>
cudaError_t fill_box(const char *fn, cudaStream_t stream, cudaPitchedPtr p, int value, cudaExtent e,
                     Forward &&forward) {
    if (!gpu_routed(kApi) || !bridge::is_shared(p.ptr)) return forward();
    if (e.height > 1 && e.width > p.pitch) return fail_with(cudaErrorInvalidPitchValue);
    cudaMemcpyKind unused = cudaMemcpyDefault;
    if (cudaError_t r = cudaSuccess; captured(fn, stream, &unused, &r)) return r == cudaSuccess ? forward() : r;
    if (cudaError_t r = FORWARD(cudaStreamSynchronize, stream); r != cudaSuccess) return fail_with(r);
    for (size_t z = 0; z < e.depth; ++z)
        for (size_t row = 0; row < e.height; ++row) {
            void *at = static_cast<char *>(p.ptr) + (z * p.ysize + row) * p.pitch;
            if (Status s = bridge::fill_shared(at, value, e.width); s != adsmSuccess) return to_cuda(s, fn);
        }
    return cudaSuccess;
}

cudaPitchedPtr plane_of(void *p, size_t pitch, size_t height) { return cudaPitchedPtr{p, pitch, pitch, height}; }
cudaExtent rect(size_t width, size_t height) { return cudaExtent{width, height, 1}; }

}  // namespace

CUDART_WRAPPER(cudaError_t, cudaMemcpy, void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    return copy("cudaMemcpy", nullptr, dst, src, n, kind,
                [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpy, dst, src, n, k); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy_ptds, void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    return copy("cudaMemcpy", cudaStreamPerThread, dst, src, n, kind,
                [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpy_ptds, dst, src, n, k); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyAsync, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
               cudaStream_t s) {
    return copy("cudaMemcpyAsync", s, dst, src, n, kind,
                [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpyAsync, dst, src, n, k, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyAsync_ptsz, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
               cudaStream_t s) {
    s = per_thread(s);
    return copy("cudaMemcpyAsync", s, dst, src, n, kind,
                [&](cudaMemcpyKind k) { return FORWARD(cudaMemcpyAsync_ptsz, dst, src, n, k, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset, void *dst, int value, size_t n) {
    return fill("cudaMemset", nullptr, dst, value, n, [&] { return FORWARD(cudaMemset, dst, value, n); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset_ptds, void *dst, int value, size_t n) {
    return fill("cudaMemset", cudaStreamPerThread, dst, value, n,
                [&] { return FORWARD(cudaMemset_ptds, dst, value, n); });
}
CUDART_WRAPPER(cudaError_t, cudaMemsetAsync, void *dst, int value, size_t n, cudaStream_t s) {
    return fill("cudaMemsetAsync", s, dst, value, n, [&] { return FORWARD(cudaMemsetAsync, dst, value, n, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemsetAsync_ptsz, void *dst, int value, size_t n, cudaStream_t s) {
    s = per_thread(s);
    return fill("cudaMemsetAsync", s, dst, value, n, [&] { return FORWARD(cudaMemsetAsync_ptsz, dst, value, n, s); });
}

CUDART_WRAPPER(cudaError_t, cudaMemcpyToSymbol, const void *symbol, const void *src, size_t n, size_t offset,
               cudaMemcpyKind kind) {
    return symbol_copy("cudaMemcpyToSymbol", nullptr, symbol, offset, nullptr, src, n, true, kind,
                       [&] { return FORWARD(cudaMemcpyToSymbol, symbol, src, n, offset, kind); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyToSymbol_ptds, const void *symbol, const void *src, size_t n, size_t offset,
               cudaMemcpyKind kind) {
    return symbol_copy("cudaMemcpyToSymbol", cudaStreamPerThread, symbol, offset, nullptr, src, n, true, kind,
                       [&] { return FORWARD(cudaMemcpyToSymbol_ptds, symbol, src, n, offset, kind); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyFromSymbol, void *dst, const void *symbol, size_t n, size_t offset,
               cudaMemcpyKind kind) {
    return symbol_copy("cudaMemcpyFromSymbol", nullptr, symbol, offset, dst, nullptr, n, false, kind,
                       [&] { return FORWARD(cudaMemcpyFromSymbol, dst, symbol, n, offset, kind); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyFromSymbol_ptds, void *dst, const void *symbol, size_t n, size_t offset,
               cudaMemcpyKind kind) {
    return symbol_copy("cudaMemcpyFromSymbol", cudaStreamPerThread, symbol, offset, dst, nullptr, n, false, kind,
                       [&] { return FORWARD(cudaMemcpyFromSymbol_ptds, dst, symbol, n, offset, kind); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyToSymbolAsync, const void *symbol, const void *src, size_t n, size_t offset,
               cudaMemcpyKind kind, cudaStream_t s) {
    return symbol_copy("cudaMemcpyToSymbolAsync", s, symbol, offset, nullptr, src, n, true, kind,
                       [&] { return FORWARD(cudaMemcpyToSymbolAsync, symbol, src, n, offset, kind, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyToSymbolAsync_ptsz, const void *symbol, const void *src, size_t n,
               size_t offset, cudaMemcpyKind kind, cudaStream_t s) {
    cudaStream_t own = per_thread(s);
    return symbol_copy("cudaMemcpyToSymbolAsync", own, symbol, offset, nullptr, src, n, true, kind,
                       [&] { return FORWARD(cudaMemcpyToSymbolAsync_ptsz, symbol, src, n, offset, kind, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyFromSymbolAsync, void *dst, const void *symbol, size_t n, size_t offset,
               cudaMemcpyKind kind, cudaStream_t s) {
    return symbol_copy("cudaMemcpyFromSymbolAsync", s, symbol, offset, dst, nullptr, n, false, kind,
                       [&] { return FORWARD(cudaMemcpyFromSymbolAsync, dst, symbol, n, offset, kind, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpyFromSymbolAsync_ptsz, void *dst, const void *symbol, size_t n, size_t offset,
               cudaMemcpyKind kind, cudaStream_t s) {
    cudaStream_t own = per_thread(s);
    return symbol_copy("cudaMemcpyFromSymbolAsync", own, symbol, offset, dst, nullptr, n, false, kind,
                       [&] { return FORWARD(cudaMemcpyFromSymbolAsync_ptsz, dst, symbol, n, offset, kind, s); });
}

CUDART_WRAPPER(cudaError_t, cudaMemcpy2D, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
               size_t height, cudaMemcpyKind kind) {
    return copy_rows("cudaMemcpy2D", nullptr, rows(dst, dpitch), rows(const_cast<void *>(src), spitch), width, height,
                     1, kind, [&](cudaMemcpyKind k) {
                         return FORWARD(cudaMemcpy2D, dst, dpitch, src, spitch, width, height, k);
                     });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy2D_ptds, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t height, cudaMemcpyKind kind) {
    return copy_rows("cudaMemcpy2D", cudaStreamPerThread, rows(dst, dpitch), rows(const_cast<void *>(src), spitch),
                     width, height, 1, kind, [&](cudaMemcpyKind k) {
                         return FORWARD(cudaMemcpy2D_ptds, dst, dpitch, src, spitch, width, height, k);
                     });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy2DAsync, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
    return copy_rows("cudaMemcpy2DAsync", s, rows(dst, dpitch), rows(const_cast<void *>(src), spitch), width, height,
                     1, kind, [&](cudaMemcpyKind k) {
                         return FORWARD(cudaMemcpy2DAsync, dst, dpitch, src, spitch, width, height, k, s);
                     });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy2DAsync_ptsz, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
    s = per_thread(s);
    return copy_rows("cudaMemcpy2DAsync", s, rows(dst, dpitch), rows(const_cast<void *>(src), spitch), width, height,
                     1, kind, [&](cudaMemcpyKind k) {
                         return FORWARD(cudaMemcpy2DAsync_ptsz, dst, dpitch, src, spitch, width, height, k, s);
                     });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy3D, const cudaMemcpy3DParms *p) {
    return copy3d("cudaMemcpy3D", nullptr, p, [&](const cudaMemcpy3DParms *q) { return FORWARD(cudaMemcpy3D, q); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy3D_ptds, const cudaMemcpy3DParms *p) {
    return copy3d("cudaMemcpy3D", cudaStreamPerThread, p,
                  [&](const cudaMemcpy3DParms *q) { return FORWARD(cudaMemcpy3D_ptds, q); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy3DAsync, const cudaMemcpy3DParms *p, cudaStream_t s) {
    return copy3d("cudaMemcpy3DAsync", s, p,
                  [&](const cudaMemcpy3DParms *q) { return FORWARD(cudaMemcpy3DAsync, q, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemcpy3DAsync_ptsz, const cudaMemcpy3DParms *p, cudaStream_t s) {
    s = per_thread(s);
    return copy3d("cudaMemcpy3DAsync", s, p,
                  [&](const cudaMemcpy3DParms *q) { return FORWARD(cudaMemcpy3DAsync_ptsz, q, s); });
}

CUDART_WRAPPER(cudaError_t, cudaMemset2D, void *dst, size_t pitch, int value, size_t width, size_t height) {
    return fill_box("cudaMemset2D", nullptr, plane_of(dst, pitch, height), value, rect(width, height),
                    [&] { return FORWARD(cudaMemset2D, dst, pitch, value, width, height); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset2D_ptds, void *dst, size_t pitch, int value, size_t width, size_t height) {
    return fill_box("cudaMemset2D", cudaStreamPerThread, plane_of(dst, pitch, height), value, rect(width, height),
                    [&] { return FORWARD(cudaMemset2D_ptds, dst, pitch, value, width, height); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset2DAsync, void *dst, size_t pitch, int value, size_t width, size_t height,
               cudaStream_t s) {
    return fill_box("cudaMemset2DAsync", s, plane_of(dst, pitch, height), value, rect(width, height),
                    [&] { return FORWARD(cudaMemset2DAsync, dst, pitch, value, width, height, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset2DAsync_ptsz, void *dst, size_t pitch, int value, size_t width, size_t height,
               cudaStream_t s) {
    s = per_thread(s);
    return fill_box("cudaMemset2DAsync", s, plane_of(dst, pitch, height), value, rect(width, height),
                    [&] { return FORWARD(cudaMemset2DAsync_ptsz, dst, pitch, value, width, height, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset3D, cudaPitchedPtr p, int value, cudaExtent e) {
    return fill_box("cudaMemset3D", nullptr, p, value, e, [&] { return FORWARD(cudaMemset3D, p, value, e); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset3D_ptds, cudaPitchedPtr p, int value, cudaExtent e) {
    return fill_box("cudaMemset3D", cudaStreamPerThread, p, value, e,
                    [&] { return FORWARD(cudaMemset3D_ptds, p, value, e); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset3DAsync, cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s) {
    return fill_box("cudaMemset3DAsync", s, p, value, e, [&] { return FORWARD(cudaMemset3DAsync, p, value, e, s); });
}
CUDART_WRAPPER(cudaError_t, cudaMemset3DAsync_ptsz, cudaPitchedPtr p, int value, cudaExtent e, cudaStream_t s) {
    s = per_thread(s);
    return fill_box("cudaMemset3DAsync", s, p, value, e,
                    [&] { return FORWARD(cudaMemset3DAsync_ptsz, p, value, e, s); });
}
