// Kernels by name.  A handle is the kernel's dense id plus one, so a stale
// or made-up handle is caught by a bounds check, never dereferenced.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backend/kernel.h"
#include "support/status.h"

namespace adsm {

class KernelRegistry {
public:
    Status add(const char *name, adsmKernelFunc fn, unsigned nparams, const size_t *sizes, adsmKernel_t *out);
    Status find(const char *name, adsmKernel_t *out);
    // nullptr for a handle that names no kernel.  Lock-free: every launch
    // goes through it.
    const KernelInfo *get(adsmKernel_t handle) const;

    static constexpr uint32_t kMaxKernels = 65536;

private:
    std::mutex mu_;  // registration only
    std::atomic<KernelInfo *> kernels_[kMaxKernels] = {};
    std::atomic<uint32_t> count_{0};
    std::unordered_map<std::string, uint32_t> by_name_;
};

}  // namespace adsm
