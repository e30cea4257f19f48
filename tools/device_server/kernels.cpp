#include "device_server/kernels.h"

#include <dlfcn.h>

namespace adsm::server {

KernelRegistry &kernels() {
    static KernelRegistry registry;
    return registry;
}

bool load_kernel_libraries(const std::vector<std::string> &paths, std::string *error) {
    for (const std::string &p : paths) {
        // Kept loaded for the server's life: the device processes find the
        // kernels in the same files.
        if (!dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            *error = std::string("--kernels ") + p + ": " + dlerror();
            return false;
        }
    }
    return true;
}

Status check_arguments(const KernelInfo &k, const remote::LaunchBody &l) {
    if (l.args_size == k.args_size) return adsmSuccess;
    return fail(adsmErrorInvalidLaunch, "kernel '%s' takes %u argument bytes, not %u", l.kernel, k.args_size, l.args_size);
}

Status registered_kernel(const remote::LaunchBody &l, const KernelInfo **out) {
    adsmKernel_t handle;
    if (kernels().find(l.kernel, &handle) != adsmSuccess)
        return fail(adsmErrorKernelNotFound, "no kernel '%s' on the device server (its --kernels libraries)", l.kernel);
    *out = kernels().get(handle);
    return check_arguments(**out, l);
}

}  // namespace adsm::server

// What a kernel library calls from its constructors.
extern "C" ADSM_API adsmError_t adsmRegisterKernel(const char *name, adsmKernelFunc func, unsigned int num_params,
                                                   const size_t *param_sizes, adsmKernel_t *kernel) {
    adsmKernel_t unused;
    return adsm::server::kernels().add(name, func, num_params, param_sizes, kernel ? kernel : &unused);
}

// What adsm.hpp's helpers call when a registration fails.
extern "C" ADSM_API const char *adsmGetLastErrorDetail(void) { return adsm::last_detail(); }
extern "C" ADSM_API const char *adsmGetErrorString(adsmError_t error) {
    return error == adsmSuccess ? "no error" : "registration refused by the device server";
}
extern "C" ADSM_API adsmError_t adsmGetLastError(void) { return adsmSuccess; }
