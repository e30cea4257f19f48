#include "backend/levelzero/driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "os/real_libc.h"

namespace adsm::levelzero {
namespace {

constexpr const char *kLibrary = "libze_loader.so.1";

Driver g_driver;
Status g_status = adsmErrorNoDevice;
std::string *g_failure = nullptr;
std::once_flag g_once;

Status load(Driver *d) {
    void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=levelzero: the Level Zero loader %s cannot be loaded (%s); is a Level Zero driver "
                    "(level-zero, intel-level-zero-gpu) installed?",
                    kLibrary, dlerror());
#define ADSM_ZE_RESOLVE(fn)                                                                                        \
    d->fn = reinterpret_cast<decltype(d->fn)>(os::real_dlsym(lib, #fn));                                         \
    if (!d->fn)                                                                                                    \
        return fail(adsmErrorNoDevice, "ADSM_DEVICE=levelzero: the loader in %s lacks %s (loader too old?)", kLibrary, \
                    #fn);
    ADSM_ZE_ENTRY_POINTS(ADSM_ZE_RESOLVE)
#undef ADSM_ZE_RESOLVE
    if (ze_result_t r = d->zeInit(ZE_INIT_FLAG_GPU_ONLY); r != ZE_RESULT_SUCCESS)
        return fail(r == ZE_RESULT_ERROR_UNINITIALIZED ? adsmErrorNoDevice : adsmErrorInitialization,
                    "ADSM_DEVICE=levelzero: zeInit failed: %s (is a GPU driver for Level Zero installed?)",
                    Driver::describe(r));
    return adsmSuccess;
}

}  // namespace

const char *Driver::describe(ze_result_t r) {
    switch (r) {
#define ADSM_ZE_NAME(code) \
    case code:             \
        return #code;
        ADSM_ZE_NAME(ZE_RESULT_SUCCESS)
        ADSM_ZE_NAME(ZE_RESULT_NOT_READY)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_DEVICE_LOST)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_NOT_AVAILABLE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNINITIALIZED)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_ARGUMENT)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_SIZE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_ENUMERATION)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
        ADSM_ZE_NAME(ZE_RESULT_ERROR_UNKNOWN)
#undef ADSM_ZE_NAME
    default:
        return "an unknown ze_result_t";
    }
}

Status load_driver(const Driver **out) {
    std::call_once(g_once, [] {
        g_status = load(&g_driver);
        if (g_status != adsmSuccess) g_failure = new std::string(last_detail());
    });
    if (g_status != adsmSuccess) return fail(g_status, "%s", g_failure->c_str());
    *out = &g_driver;
    return adsmSuccess;
}

Status ze_fail(Status code, ze_result_t r, const char *what) {
    return fail(code, "%s: %s (0x%x)", what, Driver::describe(r), static_cast<unsigned>(r));
}

}  // namespace adsm::levelzero
