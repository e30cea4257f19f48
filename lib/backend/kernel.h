// What the runtime knows about a registered kernel, and one launch of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adsm.h"

namespace adsm {

constexpr unsigned kMaxKernelParams = 64;
constexpr unsigned kMaxArgsBytes = 4096;  // the classic CUDA parameter limit
constexpr unsigned kArgAlign = 16;        // every parameter slot is max_align_t-aligned
// A parameter the driver counts but does not size (Level Zero): the
// program declares it (adsmModuleGetKernelWithParams).
constexpr uint32_t kUnknownParamSize = 0;

struct KernelInfo {
    uint32_t id = 0;                      // dense index, stable for the process
    std::string name;
    adsmKernelFunc fn = nullptr;          // a host function (sim, cpu)...
    void *device_fn = nullptr;            // ...or GPU code from a module (a CUfunction on cuda)
    std::vector<uint32_t> param_sizes;
    std::vector<uint32_t> param_offsets;  // into the argument blob
    uint32_t args_size = 0;               // blob bytes
};

struct LaunchDesc {
    const KernelInfo *kernel = nullptr;
    adsmDim3 grid{1, 1, 1};
    adsmDim3 block{1, 1, 1};
    const void *args = nullptr;           // blob laid out by param_offsets
    uint32_t args_size = 0;
    uint32_t shared_mem = 0;              // dynamic shared memory bytes (GPU code)
    // A routed program's own launch names its stream: the kernel runs there,
    // in order with the program's other work, and the context waits for it.
    bool has_native_stream = false;
    void *native_stream = nullptr;
};

}  // namespace adsm
