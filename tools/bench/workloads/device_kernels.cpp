#include "device_kernels.h"

#include <cstring>
#include <stdexcept>

namespace wl {

DeviceKernels::DeviceKernels(const Options &o) {
    adsm::sync();
    adsmDeviceInfo info{};
    adsm::check(adsmGetDeviceInfo(&info));
    gpu_code_ = !strcmp(info.name, "cuda") || (!strcmp(info.name, "remote") && !o.module_image.empty());
    if (!gpu_code_) return;
    if (o.module_image.empty()) throw std::runtime_error("the cuda device needs the kernels' module (--module)");
    adsm::check(adsmLoadModuleData(o.module_image.data(), o.module_image.size(), &module_));
}

adsmKernel_t DeviceKernels::handle(const KernelDesc &k) {
    auto it = handles_.find(&k);
    if (it != handles_.end()) return it->second;
    adsmKernel_t h = nullptr;
    if (!gpu_code_) h = host_kernel(k);
    else adsm::check(adsmModuleGetKernelWithParams(module_, k.name, k.arity, k.sizes, &h));
    return handles_[&k] = h;
}

}  // namespace wl
