#include "backend/levelzero/driver.h"

#include <cstdio>

#include <dlfcn.h>

#include "backend/gpu/load_once.h"
#include "os/driver_objects.h"
#include "os/real_libc.h"

namespace adsm::levelzero {
namespace {

constexpr const char *kLibrary = "libze_loader.so.1";

gpu::LoadOnce<Driver> g_driver;

Status load(Driver *d) {
    os::DriverLoading loading;  // (what the driver loads as it starts is its own)
    void *lib = dlopen(kLibrary, RTLD_NOW | RTLD_GLOBAL);
    loading.opened(lib);
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

Status load_driver(const Driver **out) { return g_driver.get(&load, out); }

Status ze_fail(Status code, ze_result_t r, const char *what) {
    return fail(code, "%s: %s (0x%x)", what, Driver::describe(r), static_cast<unsigned>(r));
}

bool device_is_gone(ze_result_t r) {
    return r == ZE_RESULT_ERROR_DEVICE_LOST || r == ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET;
}

Status ze_driver_error(gpu::DeviceLoss *loss, ze_result_t r, const char *what, Status usual) {
    if (!loss || !device_is_gone(r)) return ze_fail(usual, r, what);
    char why[96];
    snprintf(why, sizeof why, "%s (0x%x)", Driver::describe(r), static_cast<unsigned>(r));
    return loss->lose(what, why);
}

ze_result_t make_immediate_list(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                                ze_command_list_handle_t *out) {
    ze_command_queue_desc_t q = {};
    q.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    q.ordinal = ordinal;
    q.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    q.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    return d->zeCommandListCreateImmediate(ctx, dev, &q, out);
}

ze_result_t make_host_events(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t count,
                             ze_event_pool_handle_t *pool, ze_event_handle_t *events) {
    ze_event_pool_desc_t pd = {};
    pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = count;
    *pool = nullptr;
    if (ze_result_t r = d->zeEventPoolCreate(ctx, &pd, 1, &dev, pool); r != ZE_RESULT_SUCCESS) return r;
    for (uint32_t i = 0; i < count; ++i) {
        ze_event_desc_t ed = {};
        ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
        ed.index = i;
        ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
        ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
        if (ze_result_t r = d->zeEventCreate(*pool, &ed, &events[i]); r != ZE_RESULT_SUCCESS) {
            while (i) d->zeEventDestroy(events[--i]);
            d->zeEventPoolDestroy(*pool);
            *pool = nullptr;
            return r;
        }
    }
    return ZE_RESULT_SUCCESS;
}

void destroy_host_events(const Driver *d, uint32_t count, ze_event_pool_handle_t *pool, ze_event_handle_t *events) {
    if (!*pool) return;
    for (uint32_t i = 0; i < count; ++i)
        if (events[i]) d->zeEventDestroy(events[i]), events[i] = nullptr;
    d->zeEventPoolDestroy(*pool);
    *pool = nullptr;
}

}  // namespace adsm::levelzero
