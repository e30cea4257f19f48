#include "backend/cuda/driver.h"

#include <dlfcn.h>

#include <cstdio>

#include "backend/gpu/load_once.h"
#include "os/driver_objects.h"
#include "os/real_libc.h"
#include "support/log.h"

namespace adsm::cuda {
namespace {

constexpr const char *kLibrary = "libcuda.so.1";

gpu::LoadOnce<Driver> g_driver;

Status load(Driver *d) {
    // RTLD_GLOBAL: a CUDA runtime the program loads later finds the same
    // driver, so the program and the runtime share its primary context.
    os::DriverLoading loading;  // (what the driver loads as it starts is its own)
    void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_GLOBAL);
    loading.opened(lib);
    if (!lib)
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=cuda: the NVIDIA driver library %s cannot be loaded (%s); is an NVIDIA driver installed "
                    "and on the loader's path?",
                    kLibrary, dlerror());
#define ADSM_CUDA_RESOLVE(fn, symbol)                                                                          \
    d->fn = reinterpret_cast<decltype(d->fn)>(os::real_dlsym(lib, symbol));                                \
    if (!d->fn)                                                                                                \
        return fail(adsmErrorNoDevice, "ADSM_DEVICE=cuda: the driver in %s lacks %s (driver too old?)", kLibrary, \
                    symbol);
    ADSM_CUDA_ENTRY_POINTS(ADSM_CUDA_RESOLVE)
#undef ADSM_CUDA_RESOLVE
#define ADSM_CUDA_RESOLVE_OPTIONAL(fn, symbol) \
    d->fn = reinterpret_cast<decltype(d->fn)>(os::real_dlsym(lib, symbol));
    ADSM_CUDA_OPTIONAL_ENTRY_POINTS(ADSM_CUDA_RESOLVE_OPTIONAL)
#undef ADSM_CUDA_RESOLVE_OPTIONAL
    if (CUresult r = d->cuInit(0); r != CUDA_SUCCESS) {
        Status code = r == CUDA_ERROR_NO_DEVICE ? adsmErrorNoDevice : adsmErrorInitialization;
        return fail(code, "ADSM_DEVICE=cuda: cuInit failed: %s", d->describe(r));
    }
    if (CUresult r = d->cuDriverGetVersion(&d->version); r != CUDA_SUCCESS)
        ADSM_LOG(warn, "cuda: the driver does not say its version (%s)", d->describe(r));  // (left 0: unknown)
    return adsmSuccess;
}

}  // namespace

const char *Driver::describe(CUresult r) const {
    thread_local char text[256];
    const char *name = nullptr, *what = nullptr;
    if (!cuGetErrorName || cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
    if (!cuGetErrorString || cuGetErrorString(r, &what) != CUDA_SUCCESS) what = nullptr;
    if (name && what) snprintf(text, sizeof text, "%s (%s)", name, what);
    else snprintf(text, sizeof text, "CUDA error %d", static_cast<int>(r));
    return text;
}

Status load_driver(const Driver **out) { return g_driver.get(&load, out); }

Status cuda_fail(Status code, CUresult r, const char *what) {
    return fail(code, "%s: %s", what, g_driver.table().describe(r));
}

bool context_is_gone(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
        return true;
    default:
        return false;
    }
}

}  // namespace adsm::cuda
