// Routed CUDA hints and queries about shared memory: where it lives is
// the protocol's business, so prefetches move it, advice is kept for the
// range queries (range_advice.h), and the pointer queries describe it as
// the managed memory the program asked for.
#include <cstring>

#include "interpose/cuda_driver_common.h"
#include "interpose/range_advice.h"

using namespace adsm::interpose::cuda_driver;

#define CUDA_HINT_SYMBOLS(X)                                                                                     \
    X(cuMemPrefetchAsync)                                                                                        \
    X(cuMemPrefetchAsync_v2)                                                                                     \
    X(cuMemPrefetchAsync_v2_ptsz)                                                                                \
    X(cuMemAdvise)                                                                                               \
    X(cuMemAdvise_v2)                                                                                            \
    X(cuMemRangeGetAttribute)                                                                                    \
    X(cuMemRangeGetAttributes)                                                                                   \
    X(cuMemGetAddressRange_v2)                                                                                   \
    X(cuMemHostRegister)                                                                                         \
    X(cuMemHostRegister_v2)                                                                                      \
    X(cuMemHostUnregister)                                                                                       \
    X(cuMemHostGetDevicePointer_v2)                                                                              \
    X(cuStreamAttachMemAsync)                                                                                    \
    X(cuStreamAttachMemAsync_ptsz)                                                                               \
    X(cuPointerGetAttribute)                                                                                     \
    X(cuPointerGetAttributes)                                                                                    

ADSM_GPU_FAMILY(cuda_hint_family, CUDA_HINT_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
namespace bridge = adsm::gpu_bridge;

namespace advice = adsm::interpose::range_advice;

// A hint on shared memory: where it lives is the protocol's business, so
// it is checked and taken as done.
CUresult hint(const char *fn, CUdeviceptr p, size_t n) {
    Status s = bridge::check_hint_range(ptr(p), n);
    return s == adsmSuccess ? CUDA_SUCCESS : to_cu(s, fn);
}

// The shared allocation [p, p+n) lies in, for the record of advice.
CUresult allocation_of(const char *fn, CUdeviceptr p, size_t n, advice::Allocation *a) {
    if (CUresult r = hint(fn, p, n); r != CUDA_SUCCESS) return r;
    void *base;
    if (Status s = bridge::shared_range(ptr(p), &base, &a->size, &a->identity); s != adsmSuccess) return to_cu(s, fn);
    a->base = reinterpret_cast<uintptr_t>(base);
    return CUDA_SUCCESS;
}

// Where the legacy calls name a device (cuMemAdvise, cuMemPrefetchAsync):
// an ordinal or the CPU.
advice::Location location_of(CUdevice dev) {
    if (dev == CU_DEVICE_CPU) return {advice::Where::host, 0};
    return {advice::Where::device, dev};
}
advice::Location location_of(const CUmemLocation &where) {
    // (4 is CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, which older headers lack.)
    switch (static_cast<int>(where.type)) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return {advice::Where::device, where.id};
    case CU_MEM_LOCATION_TYPE_HOST:
    case 4: return {advice::Where::host, 0};
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return {advice::Where::host_numa, where.id};
    default: return {};
    }
}
bool on_host(advice::Location at) { return at.where == advice::Where::host || at.where == advice::Where::host_numa; }

// A location a prefetch or advice names: the host, or one of the driver's
// devices, as the driver checks it.
CUresult check_location(advice::Location at) {
    if (on_host(at)) return CUDA_SUCCESS;
    if (at.where != advice::Where::device) return CUDA_ERROR_INVALID_DEVICE;
    using GetCount = CUresult (*)(int *);
    static const auto count = reinterpret_cast<GetCount>(adsm::interpose::driver_function(kLibrary, "cuDeviceGetCount"));
    int n = 0;
    if (count) {
        GpuForwarding fw;
        if (CUresult r = count(&n); r != CUDA_SUCCESS) return r;
    }
    return at.id >= 0 && at.id < n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// A prefetch of shared memory moves it (gpu_bridge::prefetch); the
// device it names is the program's one device.  Where it was asked to go
// is recorded for the range queries.
CUresult prefetch(const char *fn, CUdeviceptr p, size_t n, advice::Location to) {
    advice::Allocation a;
    if (CUresult r = allocation_of(fn, p, n, &a); r != CUDA_SUCCESS) return r;
    if (CUresult r = check_location(to); r != CUDA_SUCCESS) return r;
    if (Status s = bridge::prefetch(ptr(p), n, on_host(to)); s != adsmSuccess) return to_cu(s, fn);
    advice::prefetched(a, p, n, to);
    return CUDA_SUCCESS;
}

// A preferred location on the host makes the object the first to go when
// device memory runs short; the rest is a hint (gpu_bridge::prefer_host),
// recorded for the range queries.
CUresult advise(const char *fn, CUdeviceptr p, size_t n, CUmem_advise kind, advice::Location at) {
    advice::Allocation a;
    if (CUresult r = allocation_of(fn, p, n, &a); r != CUDA_SUCCESS) return r;
    if (kind < CU_MEM_ADVISE_SET_READ_MOSTLY || kind > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    bool located = kind == CU_MEM_ADVISE_SET_PREFERRED_LOCATION || kind == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                   kind == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
    if (located)
        if (CUresult r = check_location(at); r != CUDA_SUCCESS) return r;
    Status s = adsmSuccess;
    if (kind == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) s = bridge::prefer_host(ptr(p), n, on_host(at));
    else if (kind == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) s = bridge::prefer_host(ptr(p), n, false);
    if (s != adsmSuccess) return to_cu(s, fn);
    if (!advice::advise(a, p, n, static_cast<advice::Advice>(kind), at)) {
        adsm::log(adsm::LogLevel::warn, "%s: device %d is past the %d devices accessed-by advice records", fn, at.id,
                  advice::kMaxDevices);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

// One range attribute of shared memory, from the advice on it, in the
// driver's form: an int, a location type, or (accessed-by) an array of
// device ordinals with CU_DEVICE_CPU for the host, CU_DEVICE_INVALID after.
CUresult range_attribute(void *data, size_t size, CUmem_range_attribute attr, const advice::Summary &s) {
    auto legacy = [](advice::Location at) -> int {
        if (at.where == advice::Where::device) return at.id;
        return on_host(at) ? CU_DEVICE_CPU : CU_DEVICE_INVALID;
    };
    auto id = [](advice::Location at) -> int {
        return at.where == advice::Where::device || at.where == advice::Where::host_numa ? at.id : CU_DEVICE_INVALID;
    };
    auto scalar = [&](int v) {
        if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
        std::memcpy(data, &v, sizeof v);
        return CUDA_SUCCESS;
    };
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: return scalar(s.read_mostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: return scalar(legacy(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: return scalar(legacy(s.last_prefetch));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: return scalar(static_cast<int>(s.preferred.where));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: return scalar(id(s.preferred));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: return scalar(static_cast<int>(s.last_prefetch.where));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: return scalar(id(s.last_prefetch));
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
        if (size == 0 || size % sizeof(int) != 0) return CUDA_ERROR_INVALID_VALUE;
        int *out = static_cast<int *>(data);
        size_t slots = size / sizeof(int), k = 0;
        if ((s.accessed_by & 1u) && k < slots) out[k++] = CU_DEVICE_CPU;
        for (int d = 0; d < advice::kMaxDevices && k < slots; ++d)
            if (s.accessed_by & (2u << d)) out[k++] = d;
        while (k < slots) out[k++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

bool routed_shared(CUdeviceptr p) { return adsm::interpose::gpu_routed(kApi) && bridge::is_shared(ptr(p)); }

// The attributes the runtime answers for shared memory (the driver would
// describe the device mapping behind it); false for the others.  It is
// managed memory, as the program's cuMemAllocManaged asked for: the driver
// says DEVICE and managed of its own.  (IS_MANAGED's width is not
// documented; programs pass an unsigned int, as MEMORY_TYPE's must be.)
bool shared_attribute(void *data, CUpointer_attribute attr, CUdeviceptr p, CUresult *r) {
    void *base;
    size_t size;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned int *>(data) = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned int *>(data) = 1; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *static_cast<void **>(data) = ptr(p); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr *>(data) = p; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (Status s = bridge::shared_range(ptr(p), &base, &size); s != adsmSuccess) {
            *r = to_cu(s, "cuPointerGetAttribute");
            return true;
        }
        if (attr == CU_POINTER_ATTRIBUTE_RANGE_SIZE) *static_cast<size_t *>(data) = size;
        else *static_cast<CUdeviceptr *>(data) = reinterpret_cast<CUdeviceptr>(base);
        break;
    default: return false;
    }
    *r = CUDA_SUCCESS;
    return true;
}

// Host registration (cudaHostRegister) of shared memory: checked and taken
// as done (gpu_bridge::accept_host_registration); the driver would refuse
// it, the window being its own device range on the cuda device.  Its
// device pointer is the pointer.
CUresult register_shared(CUdeviceptr p, size_t n, unsigned int flags) {
    constexpr unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(bridge::accept_host_registration(ptr(p), n, flags & CU_MEMHOSTREGISTER_IOMEMORY),
                 "cuMemHostRegister");
}

// A stream attachment of shared memory: checked as CUDA checks managed
// memory's, and a hint (gpu_bridge::accept_stream_attach).
CUresult attach_shared(CUstream stream, CUdeviceptr p, size_t n, unsigned int flags) {
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    // (The null stream is every stream: no single one.)
    if (flags == CU_MEM_ATTACH_SINGLE && (!stream || stream == CU_STREAM_LEGACY)) return CUDA_ERROR_INVALID_VALUE;
    return to_cu(bridge::accept_stream_attach(ptr(p), n), "cuStreamAttachMemAsync");
}

}  // namespace

CUDA_WRAPPER(cuMemPrefetchAsync, CUdeviceptr p, size_t n, CUdevice dst, CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync, p, n, dst, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(dst));
}
CUDA_WRAPPER(cuMemPrefetchAsync_v2, CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags, CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync_v2, p, n, where, flags, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(where));
}
CUDA_WRAPPER(cuMemPrefetchAsync_v2_ptsz, CUdeviceptr p, size_t n, CUmemLocation where, unsigned int flags,
             CUstream s) {
    if (!routed_shared(p)) return FORWARD(cuMemPrefetchAsync_v2_ptsz, p, n, where, flags, s);
    return prefetch("cuMemPrefetchAsync", p, n, location_of(where));
}
CUDA_WRAPPER(cuMemAdvise, CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev) {
    if (!routed_shared(p)) return FORWARD(cuMemAdvise, p, n, advice, dev);
    return advise("cuMemAdvise", p, n, advice, location_of(dev));
}
CUDA_WRAPPER(cuMemAdvise_v2, CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation where) {
    if (!routed_shared(p)) return FORWARD(cuMemAdvise_v2, p, n, advice, where);
    return advise("cuMemAdvise", p, n, advice, location_of(where));
}

// The range queries on shared memory answer from the record of advice
// (range_advice.h); the driver does not know the memory as managed.
CUDA_WRAPPER(cuMemRangeGetAttribute, void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
             size_t count) {
    if (!routed_shared(p)) return FORWARD(cuMemRangeGetAttribute, data, size, attr, p, count);
    if (!data || count == 0) return CUDA_ERROR_INVALID_VALUE;
    advice::Allocation a;
    if (CUresult r = allocation_of("cuMemRangeGetAttribute", p, count, &a); r != CUDA_SUCCESS) return r;
    return range_attribute(data, size, attr, advice::summary(a, p, count));
}
CUDA_WRAPPER(cuMemRangeGetAttributes, void **data, size_t *sizes, CUmem_range_attribute *attrs, size_t num,
             CUdeviceptr p, size_t count) {
    if (!routed_shared(p)) return FORWARD(cuMemRangeGetAttributes, data, sizes, attrs, num, p, count);
    if (!data || !sizes || !attrs || num == 0 || count == 0) return CUDA_ERROR_INVALID_VALUE;
    advice::Allocation a;
    if (CUresult r = allocation_of("cuMemRangeGetAttributes", p, count, &a); r != CUDA_SUCCESS) return r;
    advice::Summary s = advice::summary(a, p, count);
    for (size_t i = 0; i < num; ++i) {
        if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
        if (CUresult r = range_attribute(data[i], sizes[i], attrs[i], s); r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemGetAddressRange_v2, CUdeviceptr *pbase, size_t *psize, CUdeviceptr p) {
    if (!routed_shared(p)) return FORWARD(cuMemGetAddressRange_v2, pbase, psize, p);
    void *base;
    size_t size;
    if (Status s = bridge::shared_range(ptr(p), &base, &size); s != adsmSuccess)
        return to_cu(s, "cuMemGetAddressRange");
    if (pbase) *pbase = reinterpret_cast<CUdeviceptr>(base);
    if (psize) *psize = size;
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuMemHostRegister_v2, void *p, size_t n, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostRegister_v2, p, n, flags);
    return register_shared(device_ptr(p), n, flags);
}
CUDA_WRAPPER(cuMemHostRegister, void *p, size_t n, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostRegister, p, n, flags);
    return register_shared(device_ptr(p), n, flags);
}
CUDA_WRAPPER(cuMemHostUnregister, void *p) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostUnregister, p);
    return CUDA_SUCCESS;
}
CUDA_WRAPPER(cuMemHostGetDevicePointer_v2, CUdeviceptr *d, void *p, unsigned int flags) {
    if (!routed_shared(device_ptr(p))) return FORWARD(cuMemHostGetDevicePointer_v2, d, p, flags);
    if (!d || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    *d = device_ptr(p);
    return CUDA_SUCCESS;
}

CUDA_WRAPPER(cuStreamAttachMemAsync, CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
    if (!routed_shared(p)) return FORWARD(cuStreamAttachMemAsync, s, p, n, flags);
    return attach_shared(s, p, n, flags);
}
CUDA_WRAPPER(cuStreamAttachMemAsync_ptsz, CUstream s, CUdeviceptr p, size_t n, unsigned int flags) {
    if (!routed_shared(p)) return FORWARD(cuStreamAttachMemAsync_ptsz, s, p, n, flags);
    return attach_shared(per_thread(s), p, n, flags);
}

CUDA_WRAPPER(cuPointerGetAttribute, void *data, CUpointer_attribute attr, CUdeviceptr p) {
    CUresult r;
    if (data && routed_shared(p) && shared_attribute(data, attr, p, &r)) return r;
    return FORWARD(cuPointerGetAttribute, data, attr, p);
}

CUDA_WRAPPER(cuPointerGetAttributes, unsigned int count, CUpointer_attribute *attrs, void **data, CUdeviceptr p) {
    CUresult r = FORWARD(cuPointerGetAttributes, count, attrs, data, p);
    if (r != CUDA_SUCCESS || !attrs || !data || !routed_shared(p)) return r;
    for (unsigned int i = 0; i < count; ++i)
        if (data[i] && shared_attribute(data[i], attrs[i], p, &r) && r != CUDA_SUCCESS) return r;
    return CUDA_SUCCESS;
}

