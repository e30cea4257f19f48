// The C API: argument checks, error bookkeeping, and a call into the
// memory manager.  Nothing here knows about protocols or devices.
#include <cstdio>
#include <cstring>
#include <vector>

#include "adsm.h"
#include "api/entry.h"
#include "api/launch.h"
#include "api/modules.h"
#include "api/runtime.h"
#include "support/inside.h"
#include "support/log.h"

using namespace adsm;


namespace adsm {
__attribute__((tls_model("initial-exec"))) thread_local adsmError_t tls_last_error = adsmSuccess;
__attribute__((tls_model("initial-exec"))) thread_local char tls_error_detail[512];
}  // namespace adsm

extern "C" {

adsmError_t adsmGetLastError(void) {
    adsmError_t e = tls_last_error;
    tls_last_error = adsmSuccess;
    return e;
}

adsmError_t adsmPeekAtLastError(void) { return tls_last_error; }

const char *adsmGetLastErrorDetail(void) { return tls_error_detail; }

const char *adsmGetErrorString(adsmError_t error) {
    switch (error) {
    case adsmSuccess: return "no error";
    case adsmErrorInvalidValue: return "invalid argument";
    case adsmErrorInvalidPointer: return "invalid pointer";
    case adsmErrorMemoryAllocation: return "out of memory";
    case adsmErrorSizeOverflow: return "size overflow";
    case adsmErrorInitialization: return "runtime initialization failed";
    case adsmErrorNoDevice: return "no such device";
    case adsmErrorKernelNotFound: return "kernel not found";
    case adsmErrorKernelExists: return "kernel name already registered";
    case adsmErrorInvalidLaunch: return "invalid kernel launch";
    case adsmErrorLaunchFailure: return "kernel failed on the device";
    case adsmErrorDeviceLost: return "device lost";
    case adsmErrorBusy: return "memory in use by a kernel";
    case adsmErrorNotSupported: return "operation not supported";
    case adsmErrorInvalidContext: return "invalid context";
    case adsmErrorInvalidDevice: return "invalid device";
    }
    return "unknown error";
}

void *adsmAllocEx(size_t size, const adsmAllocAttr *attr) {
    ADSM_RUNTIME_PTR(rt);
    Placement place;
    place.spill = rt->manager->default_spill();
    bool zero = false;
    if (attr) {
        switch (attr->spill) {
        case ADSM_SPILL_DEFAULT: break;
        case ADSM_SPILL_HOST: place.spill = Spill::host; break;
        case ADSM_SPILL_EVICT: place.spill = Spill::evict; break;
        case ADSM_SPILL_FAIL: place.spill = Spill::fail; break;
        case ADSM_SPILL_NEXT: place.spill = Spill::next; break;
        case ADSM_SPILL_SPLIT: place.spill = Spill::split; break;
        default:
            return record_ptr(fail(adsmErrorInvalidValue, "spill %d is not an adsmSpill", attr->spill), nullptr);
        }
        switch (attr->place) {
        case ADSM_PLACE_DEVICE: place.home = Home::device; break;
        case ADSM_PLACE_HOST: place.home = Home::host; break;
        case ADSM_PLACE_EVERY_DEVICE: place.home = Home::every_device; break;
        case ADSM_PLACE_PREFERRED_DEVICE:
            place.preferred = rt->manager->device_at(attr->device);
            if (!place.preferred)
                return record_ptr(fail(adsmErrorInvalidDevice, "device %d does not exist: this process has %d (ADSM_DEVICE)",
                                       attr->device, static_cast<int>(rt->manager->device_count())),
                                  nullptr);
            break;
        default:
            return record_ptr(fail(adsmErrorInvalidValue, "place %d is not an adsmPlace", attr->place), nullptr);
        }
        place.priority = attr->priority;
        zero = attr->zero != 0;
    }
    void *p = nullptr;
    Status s = rt->manager->alloc(size, zero, &p, nullptr, RegionOrigin::api, 0, &place);
    return record_ptr(s, p);
}

void *adsmAlloc(size_t size) {
    ADSM_RUNTIME_PTR(rt);
    void *p = nullptr;
    Status s = rt->manager->alloc(size, false, &p);
    return record_ptr(s, p);
}

void *adsmCalloc(size_t nmemb, size_t size) {
    ADSM_RUNTIME_PTR(rt);
    if (size != 0 && nmemb > SIZE_MAX / size)
        return record_ptr(fail(adsmErrorSizeOverflow, "%zu elements of %zu bytes overflow", nmemb, size), nullptr);
    void *p = nullptr;
    Status s = rt->manager->alloc(nmemb * size, true, &p);
    return record_ptr(s, p);
}

adsmError_t adsmFree(void *ptr) {
    if (!ptr) return adsmSuccess;
    ADSM_RUNTIME(rt);
    return record(rt->manager->free(ptr));
}

void *adsmSafeAlloc(size_t size) {
    ADSM_RUNTIME_PTR(rt);
    void *p = nullptr;
    Status s = rt->manager->safe_alloc(size, &p);
    return record_ptr(s, p);
}

void *adsmSafe(const void *cpu_addr) {
    ADSM_RUNTIME_PTR(rt);
    void *d = nullptr;
    Status s = rt->manager->safe(cpu_addr, &d);
    return record_ptr(s, d);
}

size_t adsmGetSize(const void *ptr) {
    adsm::Inside scope_;
    Runtime *rt = nullptr;
    if (!ptr || runtime(&rt) != adsmSuccess) return 0;
    return rt->manager->size_of(ptr);
}

adsmError_t adsmMemset(void *ptr, int value, size_t count) {
    ADSM_RUNTIME(rt);
    if (!ptr && count) return record(fail(adsmErrorInvalidValue, "NULL pointer"));
    return record(rt->manager->memset(ptr, value, count));
}

adsmError_t adsmMemcpy(void *dst, const void *src, size_t count) {
    ADSM_RUNTIME(rt);
    return record(rt->manager->memcpy(dst, src, count));
}

adsmError_t adsmRegisterKernel(const char *name, adsmKernelFunc func, unsigned int num_params,
                               const size_t *param_sizes, adsmKernel_t *kernel) {
    ADSM_RUNTIME(rt);
    return record(rt->kernels.add(name, func, num_params, param_sizes, kernel));
}

adsmError_t adsmGetKernel(const char *name, adsmKernel_t *kernel) {
    ADSM_RUNTIME(rt);
    return record(rt->kernels.find(name, kernel));
}

const char *adsmGetKernelName(adsmKernel_t kernel) {
    adsm::Inside scope_;
    Runtime *rt = nullptr;
    if (runtime(&rt) != adsmSuccess) return nullptr;
    const KernelInfo *k = rt->kernels.get(kernel);
    return k ? k->name.c_str() : nullptr;
}

adsmError_t adsmGetKernelParams(adsmKernel_t kernel, unsigned int *num_params, size_t *param_sizes,
                                unsigned int capacity) {
    ADSM_RUNTIME(rt);
    const KernelInfo *k = rt->kernels.get(kernel);
    if (!k) return record(fail(adsmErrorInvalidValue, "%p is not a kernel handle", static_cast<void *>(kernel)));
    if (!num_params || (capacity && !param_sizes))
        return record(fail(adsmErrorInvalidValue, "NULL num_params or param_sizes"));
    *num_params = static_cast<unsigned int>(k->param_sizes.size());
    for (unsigned int i = 0; i < capacity && i < k->param_sizes.size(); ++i) param_sizes[i] = k->param_sizes[i];
    return adsmSuccess;
}

adsmError_t adsmLoadModule(const char *path, adsmModule_t *module) {
    ADSM_RUNTIME(rt);
    return record(load_module_file(*rt, path, module));
}

adsmError_t adsmLoadModuleData(const void *image, size_t size, adsmModule_t *module) {
    ADSM_RUNTIME(rt);
    return record(load_module_data(*rt, image, size, module));
}

adsmError_t adsmModuleGetKernel(adsmModule_t module, const char *name, adsmKernel_t *kernel) {
    ADSM_RUNTIME(rt);
    return record(module_kernel(*rt, module, name, nullptr, 0, kernel));
}

adsmError_t adsmModuleGetKernelWithParams(adsmModule_t module, const char *name, unsigned int num_params,
                                          const size_t *param_sizes, adsmKernel_t *kernel) {
    ADSM_RUNTIME(rt);
    return record(module_kernel(*rt, module, name, param_sizes, num_params, kernel));
}

adsmError_t adsmCall(adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args) {
    ADSM_RUNTIME(rt);
    return record(launch_kernel(*rt, kernel, grid, block, args));
}

adsmError_t adsmCallByName(const char *name, adsmDim3 grid, adsmDim3 block, void **args) {
    ADSM_RUNTIME(rt);
    adsmKernel_t k;
    if (Status s = rt->kernels.find(name, &k); s != adsmSuccess) return record(s);
    return adsmCall(k, grid, block, args);
}

adsmError_t adsmCallWith(adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args,
                         const adsmObjectUse *objects, unsigned int count) {
    ADSM_RUNTIME(rt);
    if (count && !objects) return record(fail(adsmErrorInvalidValue, "objects is NULL but count is %u", count));
    std::vector<ObjectUse> uses(count);
    for (unsigned i = 0; i < count; ++i) uses[i] = {objects[i].ptr, objects[i].read_only != 0};
    // An empty list still names its objects: none.
    static const ObjectUse none{nullptr, false};
    return record(launch_kernel(*rt, kernel, grid, block, args, nullptr, NativeLaunch{}, count ? uses.data() : &none,
                                count));
}

adsmError_t adsmSync(void) {
    ADSM_RUNTIME(rt);
    return record(rt->manager->sync());
}

adsmContext_t adsmGetContext(void) {
    adsm::Inside scope_;
    Runtime *rt = nullptr;
    if (Status s = runtime(&rt); s != adsmSuccess) {
        record(s);
        return nullptr;
    }
    Context *c = rt->manager->current();
    if (!c) {
        record(fail(adsmErrorMemoryAllocation, "cannot create a context"));
        return nullptr;
    }
    return rt->manager->handle(c);
}

adsmError_t adsmSetContext(adsmContext_t ctx) {
    ADSM_RUNTIME(rt);
    Status s = rt->manager->bind(ctx);
    // The thread's collected-object pages belong to the context it leaves.
    if (s == adsmSuccess)
        if (gc::Collector *c = rt->collector.load(std::memory_order_acquire)) c->context_switched();
    return record(s);
}

adsmError_t adsmDeviceAlloc(void **dev_ptr, size_t size) {
    ADSM_RUNTIME(rt);
    if (!dev_ptr) return record(fail(adsmErrorInvalidValue, "dev_ptr is NULL"));
    return record(rt->manager->device_alloc(size, dev_ptr));
}

adsmError_t adsmDeviceFree(void *dev_ptr) {
    if (!dev_ptr) return adsmSuccess;
    ADSM_RUNTIME(rt);
    return record(rt->manager->device_free(dev_ptr));
}

adsmError_t adsmCopyToDevice(void *dev_dst, const void *host_src, size_t count) {
    ADSM_RUNTIME(rt);
    return record(rt->manager->copy_to_device(dev_dst, host_src, count));
}

adsmError_t adsmCopyToHost(void *host_dst, const void *dev_src, size_t count) {
    ADSM_RUNTIME(rt);
    return record(rt->manager->copy_to_host(host_dst, dev_src, count));
}

adsmError_t adsmDeviceMemset(void *dev_ptr, int value, size_t count) {
    ADSM_RUNTIME(rt);
    if (!dev_ptr && count) return record(fail(adsmErrorInvalidValue, "NULL pointer"));
    return record(rt->manager->device_memset(dev_ptr, value, count));
}

adsmError_t adsmGetDeviceProperties(int device, adsmDeviceInfo *info) {
    ADSM_RUNTIME(rt);
    if (!info) return record(fail(adsmErrorInvalidValue, "info is NULL"));
    if (device < 0 || static_cast<size_t>(device) >= rt->devices.size())
        return record(fail(adsmErrorInvalidDevice, "device %d does not exist: this process has %zu (ADSM_DEVICE)", device,
                           rt->devices.size()));
    const Device &d = *rt->devices[device];
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", d.name());
    info->integrated = d.integrated() ? 1 : 0;
    info->memory_bytes = d.capacity();
    info->memory_used = d.used();
    snprintf(info->protocol, sizeof info->protocol, "%s", rt->protocol->name());
    info->block_size = rt->config.block_size;
    snprintf(info->dirty_tracking, sizeof info->dirty_tracking, "%s", dirty_tracking_name(*rt));
    return adsmSuccess;
}

adsmError_t adsmGetDevice(int *device) {
    ADSM_RUNTIME(rt);
    if (!device) return record(fail(adsmErrorInvalidValue, "device is NULL"));
    Context *c = rt->manager->current();
    if (!c) return record(fail(adsmErrorMemoryAllocation, "cannot create a context"));
    *device = static_cast<int>(rt->manager->device_index(c));
    return adsmSuccess;
}

adsmError_t adsmGetDeviceInfo(adsmDeviceInfo *info) {
    int device;
    if (adsmError_t e = adsmGetDevice(&device); e != adsmSuccess) return e;
    return adsmGetDeviceProperties(device, info);
}

adsmError_t adsmGetDeviceCount(int *count) {
    ADSM_RUNTIME(rt);
    if (!count) return record(fail(adsmErrorInvalidValue, "count is NULL"));
    *count = static_cast<int>(rt->devices.size());
    return adsmSuccess;
}

adsmError_t adsmSetDevice(int device) {
    ADSM_RUNTIME(rt);
    if (device < 0) return record(fail(adsmErrorInvalidDevice, "device %d does not exist", device));
    return record(rt->manager->move_context(static_cast<size_t>(device)));
}

adsmError_t adsmPrefetch(const void *ptr, size_t size, int device) {
    ADSM_RUNTIME(rt);
    if (!ptr) return record(fail(adsmErrorInvalidPointer, "NULL is not shared memory"));
    static_assert(ADSM_HOST == Manager::kHost, "one name for the host");
    return record(rt->manager->prefetch(ptr, size, device));
}

adsmError_t adsmAdvise(const void *ptr, size_t size, int advice) {
    ADSM_RUNTIME(rt);
    if (!ptr) return record(fail(adsmErrorInvalidPointer, "NULL is not shared memory"));
    Manager::Advice a;
    switch (advice) {
    case ADSM_ADVISE_READ_MOSTLY: a = Manager::Advice::read_mostly; break;
    case ADSM_ADVISE_UNSET_READ_MOSTLY: a = Manager::Advice::not_read_mostly; break;
    case ADSM_ADVISE_PREFER_HOST: a = Manager::Advice::prefer_host; break;
    case ADSM_ADVISE_UNSET_PREFER_HOST: a = Manager::Advice::no_preference; break;
    default: return record(fail(adsmErrorInvalidValue, "advice %d is not an adsmAdvice", advice));
    }
    return record(rt->manager->advise(ptr, size, a));
}

adsmError_t adsmMigrate(void *ptr, adsmContext_t ctx) {
    ADSM_RUNTIME(rt);
    if (!ptr) return record(fail(adsmErrorInvalidPointer, "NULL is not shared memory"));
    return record(rt->manager->migrate(ptr, ctx));
}

}  // extern "C"
