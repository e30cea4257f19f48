#include "api/kernel_registry.h"

#include <cstring>
#include <new>

namespace adsm {
namespace {
adsmKernel_t to_handle(uint32_t id) { return reinterpret_cast<adsmKernel_t>(static_cast<uintptr_t>(id) + 1); }
}  // namespace

// Each parameter gets a kArgAlign-aligned slot in the launch's argument blob.
Status KernelRegistry::lay_out(KernelInfo *k, unsigned nparams, const size_t *sizes) {
    const char *name = k->name.c_str();
    if (nparams > kMaxKernelParams)
        return fail(adsmErrorInvalidValue, "kernel '%s' has %u parameters; at most %u", name, nparams, kMaxKernelParams);
    if (nparams && !sizes) return fail(adsmErrorInvalidValue, "kernel '%s': param_sizes is NULL", name);
    uint64_t off = 0;
    for (unsigned i = 0; i < nparams; ++i) {
        if (sizes[i] == 0 || sizes[i] > kMaxArgsBytes)
            return fail(adsmErrorInvalidValue, "kernel '%s': parameter %u has size %zu", name, i, sizes[i]);
        off = (off + kArgAlign - 1) / kArgAlign * kArgAlign;
        k->param_offsets.push_back(static_cast<uint32_t>(off));
        k->param_sizes.push_back(static_cast<uint32_t>(sizes[i]));
        off += sizes[i];
        if (off > kMaxArgsBytes)
            return fail(adsmErrorInvalidValue, "kernel '%s': parameters take more than %u bytes", name, kMaxArgsBytes);
    }
    k->args_size = static_cast<uint32_t>(off);
    return adsmSuccess;
}

Status KernelRegistry::add(const char *name, adsmKernelFunc fn, unsigned nparams, const size_t *sizes,
                           adsmKernel_t *out) {
    if (!name || !*name) return fail(adsmErrorInvalidValue, "a kernel needs a name");
    if (!fn) return fail(adsmErrorInvalidValue, "kernel '%s' has no function", name);
    if (!out) return fail(adsmErrorInvalidValue, "kernel '%s': no place to return the handle", name);
    KernelInfo k;
    k.name = name;
    k.fn = fn;
    if (Status s = lay_out(&k, nparams, sizes); s != adsmSuccess) return s;
    return insert(std::move(k), false, out);
}

Status KernelRegistry::add_module_function(const char *name, void *device_fn, const std::vector<uint32_t> &sizes,
                                           adsmKernel_t *out) {
    KernelInfo k;
    k.name = name;
    k.device_fn = device_fn;
    std::vector<size_t> wide(sizes.begin(), sizes.end());
    if (Status s = lay_out(&k, static_cast<unsigned>(wide.size()), wide.data()); s != adsmSuccess) return s;
    return insert(std::move(k), true, out);
}

Status KernelRegistry::insert(KernelInfo &&k, bool name_may_be_taken, adsmKernel_t *out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(k.name);
    bool named = it == by_name_.end();
    if (!named) {
        const KernelInfo &old = *kernels_[it->second].load();
        if (old.fn == k.fn && old.device_fn == k.device_fn && old.param_sizes == k.param_sizes) {
            *out = to_handle(it->second);
            return adsmSuccess;
        }
        if (!name_may_be_taken)
            return fail(adsmErrorKernelExists, "a different kernel is already registered as '%s'", k.name.c_str());
    }
    uint32_t id = count_.load(std::memory_order_relaxed);
    if (id == kMaxKernels) return fail(adsmErrorMemoryAllocation, "more than %u kernels registered", kMaxKernels);
    k.id = id;
    auto *info = new (std::nothrow) KernelInfo(std::move(k));  // lives as long as the process
    if (!info) return fail(adsmErrorMemoryAllocation, "out of memory registering a kernel");
    kernels_[id].store(info, std::memory_order_release);
    count_.store(id + 1, std::memory_order_release);
    if (named) by_name_.emplace(info->name, id);
    if (info->device_fn) by_device_fn_.emplace(info->device_fn, id);
    *out = to_handle(id);
    return adsmSuccess;
}

bool KernelRegistry::find_device_function(void *device_fn, adsmKernel_t *out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_device_fn_.find(device_fn);
    if (it == by_device_fn_.end()) return false;
    *out = to_handle(it->second);
    return true;
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

Status KernelRegistry::add_module(void *device_module, adsmModule_t *out) {
    std::lock_guard<std::mutex> lock(mu_);
    modules_.push_back(device_module);
    *out = reinterpret_cast<adsmModule_t>(static_cast<uintptr_t>(modules_.size()));
    return adsmSuccess;
}

void *KernelRegistry::module(adsmModule_t handle) {
    uintptr_t v = reinterpret_cast<uintptr_t>(handle);
    std::lock_guard<std::mutex> lock(mu_);
    return v == 0 || v > modules_.size() ? nullptr : modules_[v - 1];
}

}  // namespace adsm
