#include "backend/cuda/gpu_set.h"

namespace adsm::cuda {

std::shared_ptr<GpuSet> GpuSet::get() {
    // Weak: a runtime started again after every device went gets a new set.
    static std::mutex mu;
    static std::weak_ptr<GpuSet> current;
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<GpuSet> s = current.lock();
    if (!s) {
        s = std::make_shared<GpuSet>();
        current = s;
    }
    return s;
}

size_t GpuSet::join(CudaDevice *d) {
    std::lock_guard<std::mutex> lock(mu_);
    members_.push_back(d);
    return members_.size() - 1;
}

void *GpuSet::add_module(PerGpu modules) {
    void *handle = modules.front();
    std::unique_lock<std::shared_mutex> lock(tables_mu_);
    modules_[handle] = std::make_unique<PerGpu>(std::move(modules));
    return handle;
}

const GpuSet::PerGpu *GpuSet::module(void *handle) const {
    std::shared_lock<std::shared_mutex> lock(tables_mu_);
    auto it = modules_.find(handle);
    return it == modules_.end() ? nullptr : it->second.get();
}

void *GpuSet::add_function(PerGpu functions) {
    void *handle = functions.front();
    std::unique_lock<std::shared_mutex> lock(tables_mu_);
    functions_[handle] = std::make_unique<PerGpu>(std::move(functions));
    return handle;
}

void *GpuSet::function_on(void *handle, size_t index) const {
    std::shared_lock<std::shared_mutex> lock(tables_mu_);
    auto it = functions_.find(handle);
    return it == functions_.end() || index >= it->second->size() ? handle : (*it->second)[index];
}

}  // namespace adsm::cuda
