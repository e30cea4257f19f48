#include "interpose/gpu_kernels.h"

#include <cstring>

#include "api/gpu_bridge.h"

namespace adsm::interpose {

void KernelName::set(const char *n) {
    named.store(false, std::memory_order_relaxed);
    kernel.store(nullptr, std::memory_order_relaxed);
    strncpy(name, n ? n : "", sizeof name - 1);
    name[sizeof name - 1] = '\0';
    named.store(true, std::memory_order_release);
}

Status registered_kernel(KernelName *rec, const char *name, const char *api_call, adsmKernel_t *out) {
    if (rec) {
        if (adsmKernel_t k = rec->kernel.load(std::memory_order_acquire)) {
            *out = k;
            return adsmSuccess;
        }
        if (rec->named.load(std::memory_order_acquire)) name = rec->name;
    }
    if (!name || !*name)
        return fail(adsmErrorKernelNotFound, "%s: the driver did not say which kernel this handle names", api_call);
    if (gpu_bridge::find_kernel(name, out) != adsmSuccess)
        return fail(adsmErrorKernelNotFound,
                    "%s: no kernel is registered as '%s' to run on the runtime's accelerator (register one with "
                    "adsmRegisterKernel, for instance from a library preloaded after libadsm.so)",
                    api_call, name);
    if (rec) rec->kernel.store(*out, std::memory_order_release);
    return adsmSuccess;
}

}  // namespace adsm::interpose
