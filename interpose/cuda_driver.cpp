// The CUDA driver API.  Routed (ADSM_GPU_APIS), managed allocations are
// shared memory, launches release and run the program's kernel
// (cuda_driver_launches.cpp), and every synchronisation (context, stream,
// event, and their queries) waits for those kernels and acquires before it
// asks the driver about its own work.  Emulated kernels run in order on
// one stream, so any synchronisation waits for all of them: more than the
// program asked for, never less.  Copies and fills with shared memory on a
// side go through the protocol (cuda_driver_copies.cpp); hints and queries
// about it are answered here (cuda_driver_hints.cpp).
//
// A statically linked CUDA runtime reaches the driver only through
// cuGetProcAddress; its answers are rewritten to the wrappers of every
// family.  Every wrapper's name is exported too (lib/adsm.map;
// interpose.gpu_symbols).
#include <memory>
#include <mutex>
#include <vector>

#include "interpose/cuda_driver_common.h"
#include "interpose/cuda_graphs.h"
#include "interpose/cuda_host_functions.h"
#include "interpose/range_advice.h"
#include "support/driver_thread.h"
#include "support/inside.h"

using namespace adsm::interpose::cuda_driver;

#define CUDA_DRIVER_SYMBOLS(X)                                                                                   \
    X(cuMemAllocManaged)                                                                                         \
    X(cuMemFree_v2)                                                                                              \
    X(cuCtxSynchronize)                                                                                          \
    X(cuStreamSynchronize)                                                                                       \
    X(cuStreamSynchronize_ptsz)                                                                                  \
    X(cuStreamQuery)                                                                                             \
    X(cuStreamQuery_ptsz)                                                                                        \
    X(cuEventSynchronize)                                                                                        \
    X(cuEventQuery)                                                                                              \
    X(cuGetProcAddress)                                                                                          \
    X(cuGetProcAddress_v2)                                                                                       \
    X(cuLaunchHostFunc)                                                                                          \
    X(cuLaunchHostFunc_ptsz)                                                                                     \
    X(cuStreamAddCallback)                                                                                       \
    X(cuStreamAddCallback_ptsz)                                                                                  

ADSM_GPU_FAMILY(cuda_driver_family, CUDA_DRIVER_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
namespace bridge = adsm::gpu_bridge;

}  // namespace

namespace adsm::interpose::cuda_driver {

CUresult no_driver(const char *fn) {
    log(LogLevel::error, "%s: the CUDA driver (%s) is not loaded", fn, kLibrary);
    return CUDA_ERROR_NOT_INITIALIZED;
}

CUresult to_cu(Status s, const char *fn) {
    if (s == adsmSuccess) return CUDA_SUCCESS;
    log(LogLevel::warn, "%s: %s", fn, last_detail());
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

CUresult driver_stream_synchronize(CUstream s) { return FORWARD(cuStreamSynchronize, s); }

}  // namespace adsm::interpose::cuda_driver

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

// Our kernels first, then whatever the driver has of its own.
#define SYNC_THEN_FORWARD(name, ...)                                          \
    do {                                                                      \
        if (!adsm::interpose::gpu_routed(kApi)) return FORWARD(name, __VA_ARGS__); \
        CUresult ours_ = to_cu(bridge::sync(), #name);                        \
        CUresult theirs_ = FORWARD(name, __VA_ARGS__);                        \
        return ours_ != CUDA_SUCCESS ? ours_ : theirs_;                       \
    } while (0)

// A driver function handed out by cuGetProcAddress becomes our wrapper of
// it when it is one we wrap, in any family, whatever name or version was
// asked for.
void substitute(void **pfn) {
    if (!bridge::routed(kApi)) return;
    if (void *wrapper = adsm::interpose::gpu_wrapper_of(kLibrary, *pfn)) *pfn = wrapper;
}

}  // namespace

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

