#include "api/kernel_registry.h"

#include <cstring>
#include <new>

namespace adsm {
namespace {
adsmKernel_t to_handle(uint32_t id) { return reinterpret_cast<adsmKernel_t>(static_cast<uintptr_t>(id) + 1); }
}  // namespace

Status KernelRegistry::add(const char *name, adsmKernelFunc fn, unsigned nparams, const size_t *sizes,
                           adsmKernel_t *out) {
    if (!name || !*name) return fail(adsmErrorInvalidValue, "a kernel needs a name");
    if (!fn) return fail(adsmErrorInvalidValue, "kernel '%s' has no function", name);
    if (!out) return fail(adsmErrorInvalidValue, "kernel '%s': no place to return the handle", name);
    if (nparams > kMaxKernelParams) return fail(adsmErrorInvalidValue, "kernel '%s' has %u parameters; at most %u", name, nparams, kMaxKernelParams);
    if (nparams && !sizes) return fail(adsmErrorInvalidValue, "kernel '%s': param_sizes is NULL", name);
    KernelInfo k;
    k.name = name;
    k.fn = fn;
    uint64_t off = 0;
    for (unsigned i = 0; i < nparams; ++i) {
        if (sizes[i] == 0 || sizes[i] > kMaxArgsBytes)
            return fail(adsmErrorInvalidValue, "kernel '%s': parameter %u has size %zu", name, i, sizes[i]);
        off = (off + kArgAlign - 1) / kArgAlign * kArgAlign;
        k.param_offsets.push_back(static_cast<uint32_t>(off));
        k.param_sizes.push_back(static_cast<uint32_t>(sizes[i]));
        off += sizes[i];
        if (off > kMaxArgsBytes)
            return fail(adsmErrorInvalidValue, "kernel '%s': parameters take more than %u bytes", name, kMaxArgsBytes);
    }
    k.args_size = static_cast<uint32_t>(off);

    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(name);
    if (it != by_name_.end()) {
        const KernelInfo &old = *kernels_[it->second].load();
        if (old.fn == fn && old.param_sizes == k.param_sizes) {
            *out = to_handle(it->second);
            return adsmSuccess;
        }
        return fail(adsmErrorKernelExists, "a different kernel is already registered as '%s'", name);
    }
    uint32_t id = count_.load(std::memory_order_relaxed);
    if (id == kMaxKernels) return fail(adsmErrorMemoryAllocation, "more than %u kernels registered", kMaxKernels);
    k.id = id;
    auto *info = new (std::nothrow) KernelInfo(std::move(k));  // lives as long as the process
    if (!info) return fail(adsmErrorMemoryAllocation, "out of memory registering '%s'", name);
    kernels_[id].store(info, std::memory_order_release);
    count_.store(id + 1, std::memory_order_release);
    by_name_.emplace(name, id);
    *out = to_handle(id);
    return adsmSuccess;
}

Status KernelRegistry::find(const char *name, adsmKernel_t *out) {
    if (!name || !out) return fail(adsmErrorInvalidValue, "NULL kernel name or handle");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return fail(adsmErrorKernelNotFound, "no kernel is registered as '%s'", name);
    *out = to_handle(it->second);
    return adsmSuccess;
}

const KernelInfo *KernelRegistry::get(adsmKernel_t handle) const {
    uintptr_t v = reinterpret_cast<uintptr_t>(handle);
    if (v == 0 || v > count_.load(std::memory_order_acquire)) return nullptr;
    return kernels_[v - 1].load(std::memory_order_acquire);
}

}  // namespace adsm
