// The handles of the workloads' kernels on the runtime's device, for the
// variants that launch through adsm (adsm and explicit): host functions on
// sim and cpu; the module's GPU code of the same name on cuda, and on a
// remote device when a module is given (its server hosts a GPU and loads
// the module there), with parameter sizes checked against the driver's.
#pragma once

#include <unordered_map>

#include "variant.h"

namespace wl {

class DeviceKernels {
public:
    explicit DeviceKernels(const Options &o);  // starts the runtime and its device (untimed)
    adsmKernel_t handle(const KernelDesc &k);

private:
    bool gpu_code_ = false;
    adsmModule_t module_ = nullptr;
    std::unordered_map<const KernelDesc *, adsmKernel_t> handles_;
};

}  // namespace wl
