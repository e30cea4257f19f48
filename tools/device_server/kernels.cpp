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
