#include "interpose/cuda_packed_params.h"

#include "interpose/gpu_symbols.h"
#include "support/log.h"

namespace adsm::interpose {

namespace {
constexpr const char *kLibrary = "libcuda.so.1";
using ParamInfo = CUresult (*)(void *f, size_t index, size_t *offset, size_t *size);
}  // namespace

CUresult cuda_extra_buffer(const char *fn, void **params, void **extra, const void **buffer, size_t *size) {
    *buffer = nullptr;
    *size = 0;
    bool sized = false;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            *buffer = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            if (!extra[i + 1]) break;
            *size = *static_cast<const size_t *>(extra[i + 1]);
            sized = true;
        } else {
            log(LogLevel::error, "%s: `extra` holds key %p, which is none of CUDA's", fn, extra[i]);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (params) {
        log(LogLevel::error, "%s: arguments given both in kernelParams and in `extra`", fn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!*buffer || !sized) {
        log(LogLevel::error, "%s: `extra` needs both CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE", fn);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuda_unpack_params(const char *fn, CUfunction f, const void *buffer, size_t size, UnpackedParams *out) {
    static const auto function_info = reinterpret_cast<ParamInfo>(driver_function(kLibrary, "cuFuncGetParamInfo"));
    static const auto kernel_info = reinterpret_cast<ParamInfo>(driver_function(kLibrary, "cuKernelGetParamInfo"));
    if (!function_info) {
        log(LogLevel::error,
            "%s: arguments packed in one buffer need the parameters' offsets, which this driver cannot report "
            "(cuFuncGetParamInfo needs CUDA 12.4 or later); pass kernelParams",
            fn);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    GpuForwarding fw;
    // A CUDA runtime's kernels are library kernels, asked differently.
    ParamInfo info = function_info;
    out->count = 0;
    for (size_t i = 0;; ++i) {
        size_t offset = 0, bytes = 0;
        CUresult r = info(f, i, &offset, &bytes);
        if (r == CUDA_ERROR_INVALID_HANDLE && i == 0 && info == function_info && kernel_info) {
            info = kernel_info;
            --i;
            continue;
        }
        if (r == CUDA_ERROR_INVALID_VALUE) return CUDA_SUCCESS;  // past the last parameter
        if (r != CUDA_SUCCESS) return r;
        if (i == UnpackedParams::kMost) {
            log(LogLevel::error, "%s: the kernel has more than %u parameters", fn, UnpackedParams::kMost);
            return CUDA_ERROR_NOT_SUPPORTED;
        }
        if (offset > size || bytes > size - offset) {
            log(LogLevel::error, "%s: the argument buffer holds %zu bytes; parameter %zu takes bytes %zu to %zu", fn,
                size, i, offset, offset + bytes);
            return CUDA_ERROR_INVALID_VALUE;
        }
        out->at[i] = const_cast<char *>(static_cast<const char *>(buffer)) + offset;
        out->count = static_cast<unsigned>(i + 1);
    }
}

}  // namespace adsm::interpose
