// Kernels by name.  A handle is the kernel's dense id plus one, so a stale
// or made-up handle is caught by a bounds check, never dereferenced.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/kernel.h"
#include "support/status.h"

namespace adsm {

class KernelRegistry {
public:
    Status add(const char *name, adsmKernelFunc fn, unsigned nparams, const size_t *sizes, adsmKernel_t *out);
    // A function of a loaded module.  Its name is registered too unless a
    // kernel already holds it (adsmCallByName finds the first one); the
    // handle names this function either way.
    Status add_module_function(const char *name, void *device_fn, const std::vector<uint32_t> &sizes,
                               adsmKernel_t *out);
    // The kernel already made for a device function, if any.
    bool find_device_function(void *device_fn, adsmKernel_t *out);
    Status find(const char *name, adsmKernel_t *out);
    // nullptr for a handle that names no kernel.  Lock-free: every launch
    // goes through it.
    const KernelInfo *get(adsmKernel_t handle) const;

    static constexpr uint32_t kMaxKernels = 65536;

    // Modules: the device's handle behind an adsmModule_t (a dense index
    // plus one, as for kernels).  Modules stay loaded for the process.
    Status add_module(void *device_module, adsmModule_t *out);
    void *module(adsmModule_t handle);

private:
    Status lay_out(KernelInfo *k, unsigned nparams, const size_t *sizes);
    Status insert(KernelInfo &&k, bool name_may_be_taken, adsmKernel_t *out);

    std::mutex mu_;  // registration only
    std::atomic<KernelInfo *> kernels_[kMaxKernels] = {};
    std::atomic<uint32_t> count_{0};
    std::unordered_map<std::string, uint32_t> by_name_;
    std::vector<void *> modules_;  // under mu_
    std::unordered_map<void *, uint32_t> by_device_fn_;
};

}  // namespace adsm
