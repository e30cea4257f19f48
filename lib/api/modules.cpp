#include "api/modules.h"

#include <string>
#include <vector>

#include "support/module_file.h"

namespace adsm {

Status load_module_data(Runtime &rt, const void *image, size_t size, adsmModule_t *out) {
    if (!out) return fail(adsmErrorInvalidValue, "no place to return the module");
    *out = nullptr;
    if (!image || size == 0) return fail(adsmErrorInvalidValue, "an empty module image");
    void *module = nullptr;
    if (Status s = rt.device->load_module(image, size, &module); s != adsmSuccess) return s;
    return rt.kernels.add_module(module, out);
}

Status load_module_file(Runtime &rt, const char *path, adsmModule_t *out) {
    if (!out) return fail(adsmErrorInvalidValue, "no place to return the module");
    *out = nullptr;
    if (!path || !*path) return fail(adsmErrorInvalidValue, "no module path");
    std::vector<char> image;
    if (Status s = read_module_file(path, &image); s != adsmSuccess) return s;
    Status s = load_module_data(rt, image.data(), image.size(), out);
    if (s != adsmSuccess) {
        std::string why = last_detail();
        return fail(s, "%s: %s", path, why.c_str());
    }
    return adsmSuccess;
}

Status module_kernel(Runtime &rt, adsmModule_t module, const char *name, const size_t *declared, unsigned count,
                     adsmKernel_t *out) {
    if (!out) return fail(adsmErrorInvalidValue, "no place to return the kernel");
    *out = nullptr;
    if (!name || !*name) return fail(adsmErrorInvalidValue, "a kernel needs a name");
    if (count && !declared)
        return fail(adsmErrorInvalidValue, "kernel '%s': %u parameter sizes declared, none given", name, count);
    void *m = rt.kernels.module(module);
    if (!m) return fail(adsmErrorInvalidValue, "%p is not a module handle from adsmLoadModule", static_cast<void *>(module));
    void *fn = nullptr;
    std::vector<uint32_t> sizes;
    if (Status s = rt.device->module_function(m, name, &fn, &sizes); s != adsmSuccess) return s;
    bool unknown = false;
    for (uint32_t size : sizes) unknown |= size == kUnknownParamSize;
    if (declared) {
        if (count != sizes.size())
            return fail(adsmErrorInvalidValue, "kernel '%s' has %zu parameters, %u declared", name, sizes.size(), count);
        for (unsigned i = 0; i < count; ++i) {
            if (declared[i] == 0 || declared[i] > kMaxArgsBytes)
                return fail(adsmErrorInvalidValue, "kernel '%s': parameter %u declared with %zu bytes", name, i,
                            declared[i]);
            if (sizes[i] != kUnknownParamSize && sizes[i] != declared[i])
                return fail(adsmErrorInvalidValue, "kernel '%s': parameter %u has %u bytes, %zu declared", name, i,
                            sizes[i], declared[i]);
            sizes[i] = static_cast<uint32_t>(declared[i]);
        }
    }
    if (declared && unknown)
        if (Status s = rt.device->declare_params(fn, sizes); s != adsmSuccess) return s;
    for (size_t i = 0; i < sizes.size(); ++i)
        if (sizes[i] == kUnknownParamSize)
            return fail(adsmErrorInvalidValue,
                        "kernel '%s': the %s driver reports how many parameters it has (%zu), not their sizes: get it "
                        "with adsmModuleGetKernelWithParams",
                        name, rt.device->name(), sizes.size());
    return rt.kernels.add_module_function(name, fn, sizes, out);
}

}  // namespace adsm
