// Routed CUDA launches: each releases, then runs the program's kernel (on
// the `cuda` device, the program's own GPU code on its own stream; on
// others, the host function registered under the kernel's name).  Those
// the runtime's own launch would not reproduce go to the driver as made,
// after a release; a graph's launch releases as a kernel launch does.
#include "interpose/cuda_driver_common.h"
#include "interpose/cuda_graphs.h"
#include "interpose/cuda_legacy_launch.h"
#include "interpose/cuda_packed_params.h"
#include "interpose/gpu_kernels.h"
#include "interpose/handle_map.h"

using namespace adsm::interpose::cuda_driver;

#define CUDA_LAUNCH_SYMBOLS(X)                                                                                   \
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
    X(cuGraphLaunch)                                                                                             \
    X(cuGraphLaunch_ptsz)                                                                                        

ADSM_GPU_FAMILY(cuda_launch_family, CUDA_LAUNCH_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
namespace bridge = adsm::gpu_bridge;

adsm::interpose::HandleMap<adsm::interpose::KernelName, 8192> g_functions;
// The deprecated launch's settings per function, where a program made any.
adsm::interpose::HandleMap<adsm::interpose::LegacyLaunchSetup, 1024> g_legacy;

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
    CUresult own;
    Status s = bridge::release_for_driver_launch(fn, stream, CUDA_SUCCESS, own, forward);
    return own != CUDA_SUCCESS ? own : to_cu(s, fn);
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
