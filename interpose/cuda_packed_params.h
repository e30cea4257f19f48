// Kernel arguments packed into one buffer: cuLaunchKernel's `extra`
// (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE, as PyCUDA passes them), and
// the deprecated cuParamSet* calls that fill a function's buffer.  A routed
// launch takes one pointer per parameter (kernelParams), so it points into
// the buffer at the offsets the driver reports for the kernel.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace adsm::interpose {

struct UnpackedParams {
    static constexpr unsigned kMost = 64;  // the runtime's limit on a kernel's parameters
    void *at[kMost];
    unsigned count = 0;
};

// Whether `extra` holds anything but its end marker.
inline bool cuda_extra_given(void **extra) { return extra && extra[0] != CU_LAUNCH_PARAM_END; }

// Reads `extra` (pairs of a key and a value up to CU_LAUNCH_PARAM_END):
// the buffer and its size.  CUDA_ERROR_INVALID_VALUE, said in the log, for
// an unknown key, a buffer without its size, or kernelParams given too, as
// the driver refuses them.
CUresult cuda_extra_buffer(const char *fn, void **params, void **extra, const void **buffer, size_t *size);

// The parameters of `f` (a CUfunction, or a CUkernel a CUDA runtime hands
// over) in `buffer`, at the driver's offsets.  A buffer too short for
// them, or a driver that cannot say the offsets (before CUDA 12.4), is an
// error with a message.
CUresult cuda_unpack_params(const char *fn, CUfunction f, const void *buffer, size_t size, UnpackedParams *out);

}  // namespace adsm::interpose
