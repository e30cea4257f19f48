// oneAPI Level Zero.  Routed (ADSM_GPU_APIS), shared allocations are the
// runtime's shared memory, and a kernel launch runs the kernel registered
// under the kernel's name on the runtime's accelerator, with the arguments
// and group size the program set on the kernel object: at once on an
// immediate command list, when the list is executed on a regular one.  The
// driver still gets every call that creates, sets or executes something, so
// its own objects (queues, fences, events, non-kernel commands) behave as
// usual.  Every host synchronisation and status query waits for the
// emulated kernels and acquires first.
//
// Prefetches and advice on shared memory are the runtime's hints (to the
// device the program's context runs on; a system-memory preferred location
// makes it the first to go when device memory runs short), taken at the
// append: they move nothing a kernel may be using.  Copies and fills that
// touch shared memory go through the protocol, in order with the list's
// kernels, as the program's own accesses would: a shared pointer is no
// memory the driver may copy.
//
// A launch that signals an event completes before the event is signalled
// from the host (zeEventHostSignal); wait events are waited for on the host
// before the launch.  Emulated (sim, cpu), a regular list's kernels run
// before the driver executes the rest of that list.
//
// On a GPU back-end (levelzero) a regular list is the driver's whole, its
// kernels, copies and fills in their order: executing it releases the
// shared memory first, and a synchronisation acquires once the driver's
// wait is over.  The runtime has one GPU, the driver's first: a program's
// shared allocations and command lists on another GPU are the driver's
// alone, passed through untouched.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "interpose/gpu_copies.h"
#include "interpose/gpu_kernels.h"
#include "interpose/gpu_symbols.h"
#include "interpose/handle_map.h"
#include "interpose/level_zero.h"

#define LEVEL_ZERO_SYMBOLS(X)               \
    X(zeContextCreate)                      \
    X(zeContextDestroy)                     \
    X(zeMemAllocShared)                     \
    X(zeMemFree)                            \
    X(zeMemGetAllocProperties)              \
    X(zeMemGetAddressRange)                 \
    X(zeKernelCreate)                       \
    X(zeKernelSetArgumentValue)             \
    X(zeKernelSetGroupSize)                 \
    X(zeCommandListCreate)                  \
    X(zeCommandListCreateImmediate)         \
    X(zeCommandListReset)                   \
    X(zeCommandListAppendLaunchKernel)      \
    X(zeCommandListAppendLaunchCooperativeKernel)        \
    X(zeCommandListAppendLaunchKernelIndirect)           \
    X(zeCommandListAppendLaunchMultipleKernelsIndirect)  \
    X(zeCommandListAppendMemoryPrefetch)    \
    X(zeCommandListAppendMemAdvise)         \
    X(zeCommandListAppendMemoryCopy)        \
    X(zeCommandListAppendMemoryCopyRegion)  \
    X(zeCommandListAppendMemoryFill)        \
    X(zeCommandQueueExecuteCommandLists)    \
    X(zeCommandQueueSynchronize)            \
    X(zeCommandListHostSynchronize)         \
    X(zeFenceHostSynchronize)               \
    X(zeFenceQueryStatus)                   \
    X(zeEventHostSynchronize)               \
    X(zeEventQueryStatus)

ADSM_GPU_FAMILY(level_zero_family, LEVEL_ZERO_SYMBOLS)

namespace {

using adsm::Status;
using adsm::interpose::GpuForwarding;
using adsm::interpose::gpu_routed;
namespace bridge = adsm::gpu_bridge;

// What the program set on a kernel object.
struct KernelState {
    adsm::interpose::KernelName name;
    std::mutex mu;
    uint32_t group[3] = {1, 1, 1};
    std::vector<std::vector<uint8_t>> args;
    std::vector<bool> set;

    void reset(const char *kernel_name) {
        std::lock_guard<std::mutex> lock(mu);
        name.set(kernel_name);
        group[0] = group[1] = group[2] = 1;
        args.clear();
        set.clear();
    }
};

// One command the preload runs itself: an emulated launch, with its
// arguments as they were at the append, or a copy or fill that touches
// shared memory.
struct Launch {
    enum Kind { kernel_launch, copy, copy_region, fill } kind = kernel_launch;
    adsmKernel_t kernel = nullptr;             // a kernel registered under the kernel's name...
    ze_kernel_handle_t program_kernel = nullptr;  // ...or the program's own (a GPU back-end)
    std::string name;
    std::vector<uint32_t> sizes;               // the program's own kernel's parameters
    ze_command_list_handle_t list = nullptr;   // an immediate list: where the program's own kernel goes
    adsmDim3 grid{1, 1, 1}, block{1, 1, 1};
    std::vector<std::vector<uint8_t>> args;
    void *dst = nullptr;             // copy, fill
    const void *src = nullptr;       // copy
    size_t size = 0;                 // copy, fill
    std::vector<uint8_t> pattern;    // fill
    adsm::interpose::Plane dst_box, src_box;  // copy_region: each side's first byte and pitches
    size_t width = 0, height = 0, depth = 0;  // copy_region: bytes, rows, slices
    ze_event_handle_t signal = nullptr;
    std::vector<ze_event_handle_t> waits;
};

struct ListState {
    std::mutex mu;
    bool immediate = false;
    ze_context_handle_t ctx = nullptr;
    std::vector<Launch> launches;  // a regular list's commands the preload runs, in order
    bool driver_runs = false;      // a regular list whose commands on shared memory the driver runs
    std::atomic<bool> other_gpu{false};  // on a GPU not the runtime's: the driver's alone

    void reset(bool is_immediate, ze_context_handle_t context, bool on_other_gpu) {
        std::lock_guard<std::mutex> lock(mu);
        immediate = is_immediate;
        ctx = context;
        launches.clear();
        driver_runs = false;
        other_gpu.store(on_other_gpu);
    }
};

adsm::interpose::HandleMap<KernelState, 4096> g_kernels;
adsm::interpose::HandleMap<ListState, 4096> g_lists;

ze_result_t to_ze(Status s, const char *fn) {
    if (s == adsmSuccess) return ZE_RESULT_SUCCESS;
    adsm::log(adsm::LogLevel::warn, "%s: %s", fn, adsm::last_detail());
    switch (s) {
    case adsmErrorMemoryAllocation: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case adsmErrorNotSupported: return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    case adsmErrorKernelNotFound: return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    case adsmErrorInvalidLaunch: return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    case adsmErrorInitialization:
    case adsmErrorNoDevice: return ZE_RESULT_ERROR_UNINITIALIZED;
    case adsmErrorDeviceLost: return ZE_RESULT_ERROR_DEVICE_LOST;
    case adsmErrorLaunchFailure: return ZE_RESULT_ERROR_UNKNOWN;
    default: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
}

ze_result_t refuse(ze_result_t r, const char *fn, const char *why) {
    adsm::log(adsm::LogLevel::warn, "%s: %s", fn, why);
    return r;
}

// Whether `device` is a GPU of the driver that the runtime's back-end does
// not use (the runtime runs on the first GPU alone).
bool on_other_gpu(ze_device_handle_t device) {
    void *ours = bridge::native_device();
    return ours && device && device != static_cast<ze_device_handle_t>(ours);
}

// A list on another GPU: its commands are the driver's, but shared memory
// lives on the runtime's GPU, in the protocol's care.
bool on_other_gpu_list(ListState *ls) { return ls && ls->other_gpu.load(); }
// On a GPU back-end, a regular list's commands go to the driver in the
// list's order; its execution releases first.
bool for_the_driver(ListState *ls) {
    if (!bridge::runs_program_kernels()) return false;
    std::lock_guard<std::mutex> lock(ls->mu);
    return !ls->immediate;
}
ze_result_t driver_runs(ListState *ls, ze_result_t r) {
    if (r == ZE_RESULT_SUCCESS) {
        std::lock_guard<std::mutex> lock(ls->mu);
        ls->driver_runs = true;
    }
    return r;
}

ze_result_t refuse_shared_on_other_gpu(const char *fn) {
    return refuse(ZE_RESULT_ERROR_INVALID_ARGUMENT, fn,
                  "shared memory used on a command list of another GPU than the runtime's (the first): allocate it "
                  "with zeMemAllocShared on that GPU's device, or work on the first GPU");
}

// The launch as it stands on the kernel object now.  On a back-end that
// runs the program's own GPU code, the program's kernel with the arguments
// it set (their sizes are the ones it set them with); elsewhere the kernel
// registered under its name, with the arguments checked against it.
ze_result_t capture(ze_kernel_handle_t kernel, const ze_group_count_t *groups, Launch *out) {
    constexpr const char *fn = "zeCommandListAppendLaunchKernel";
    if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    KernelState *ks = g_kernels.find(kernel);
    if (!ks) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a kernel the preload did not see created");
    std::lock_guard<std::mutex> lock(ks->mu);
    unsigned n = 0;
    if (bridge::runs_program_kernels()) {
        out->program_kernel = kernel;
        out->name = ks->name.name;
        n = static_cast<unsigned>(ks->args.size());
    } else {
        if (Status s = adsm::interpose::registered_kernel(&ks->name, nullptr, fn, &out->kernel); s != adsmSuccess)
            return to_ze(s, fn);
        n = bridge::param_count(out->kernel);
    }
    for (unsigned i = 0; i < n; ++i) {
        if (i >= ks->set.size() || !ks->set[i]) {
            adsm::log(adsm::LogLevel::warn, "%s: argument %u of kernel '%s' was never set", fn, i, ks->name.name);
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        }
        if (out->kernel && ks->args[i].size() != bridge::param_size(out->kernel, i)) {
            adsm::log(adsm::LogLevel::warn, "%s: argument %u of kernel '%s' was set with %zu bytes; it takes %zu", fn,
                      i, ks->name.name, ks->args[i].size(), bridge::param_size(out->kernel, i));
            return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
        }
        if (out->program_kernel) out->sizes.push_back(static_cast<uint32_t>(ks->args[i].size()));
    }
    out->args.assign(ks->args.begin(), ks->args.begin() + n);
    out->grid = {groups->groupCountX, groups->groupCountY, groups->groupCountZ};
    out->block = {ks->group[0], ks->group[1], ks->group[2]};
    return ZE_RESULT_SUCCESS;
}

// The memory behind a pointer that is not shared, as the driver knows it.
ze_memory_type_t memory_type(ze_context_handle_t ctx, const void *p) {
    using Get = ze_result_t (*)(ze_context_handle_t, const void *, ze_memory_allocation_properties_t *,
                                ze_device_handle_t *);
    static const auto get = reinterpret_cast<Get>(adsm::interpose::driver_function(kLibrary, "zeMemGetAllocProperties"));
    ze_memory_allocation_properties_t props = {};
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    GpuForwarding fw;
    if (!get || get(ctx, p, &props, nullptr) != ZE_RESULT_SUCCESS) return ZE_MEMORY_TYPE_UNKNOWN;
    return props.type;
}

Status no_driver_copy(void *, const void *, size_t) {
    return adsm::fail(adsmErrorNotSupported,
                      "a copy between shared memory and the driver's device memory (zeMemAllocDevice): copy through "
                      "host memory");
}
const adsm::interpose::DriverCopies kNoDriverCopies = {no_driver_copy, no_driver_copy};

// A copy or fill on shared memory, after the kernels before it.
Status run_memory_command(const Launch &l) {
    if (Status s = bridge::sync(); s != adsmSuccess) return s;
    if (l.kind == Launch::fill) return adsm::interpose::fill_shared_pattern(l.dst, l.pattern.data(), l.pattern.size(),
                                                                          l.size / l.pattern.size());
    using adsm::interpose::Side;
    Status s = adsmSuccess;
    if (l.kind == Launch::copy_region)
        return adsm::interpose::copy_box(l.dst_box, l.src_box, l.width, l.height, l.depth, kNoDriverCopies,
                                         [](void *d, const void *from, size_t n) {
                                             memmove(d, from, n);
                                             return adsmSuccess;
                                         });
    adsm::interpose::copy_with_shared(l.dst, Side::host, l.src, Side::host, l.size, kNoDriverCopies, &s);
    return s;
}

ze_result_t run(Launch &l, const char *fn) {
    for (ze_event_handle_t e : l.waits)
        if (ze_result_t r = FORWARD(zeEventHostSynchronize, e, UINT64_MAX); r != ZE_RESULT_SUCCESS) return r;
    if (l.kind == Launch::kernel_launch) {
        void *args[64];
        for (size_t i = 0; i < l.args.size() && i < 64; ++i) args[i] = l.args[i].data();
        Status s = l.program_kernel
                       ? bridge::launch_program_kernel_sized(l.program_kernel, l.name.c_str(), l.sizes.data(),
                                                             static_cast<unsigned>(l.sizes.size()), l.grid, l.block,
                                                             l.list, args)
                       : bridge::launch(l.kernel, l.grid, l.block, args);
        if (ze_result_t r = to_ze(s, fn); r != ZE_RESULT_SUCCESS) return r;
    } else if (ze_result_t r = to_ze(run_memory_command(l), fn); r != ZE_RESULT_SUCCESS) {
        return r;
    }
    if (!l.signal) return ZE_RESULT_SUCCESS;
    // The event says the command is done: make it so, then tell the driver.
    if (ze_result_t r = to_ze(bridge::sync(), fn); r != ZE_RESULT_SUCCESS) return r;
    using Signal = ze_result_t (*)(ze_event_handle_t);
    static const auto host_signal = reinterpret_cast<Signal>(adsm::interpose::driver_function(kLibrary, "zeEventHostSignal"));
    if (!host_signal) return no_loader("zeEventHostSignal");
    GpuForwarding fw;
    return host_signal(l.signal);
}

// A command at the append: run now on an immediate list, recorded for the
// execution of a regular one.
ze_result_t append(ze_command_list_handle_t list, ListState *ls, Launch &&l, ze_event_handle_t signal, uint32_t nwait,
                   ze_event_handle_t *waits, const char *fn) {
    l.signal = signal;
    l.waits.assign(waits, waits + nwait);
    std::unique_lock<std::mutex> lock(ls->mu);
    if (!ls->immediate) {
        ls->launches.push_back(std::move(l));
        return ZE_RESULT_SUCCESS;
    }
    lock.unlock();
    l.list = list;  // the program's own kernel goes in order with the list's other commands
    return run(l, fn);
}

// Emulated, the preload's kernels are done before the driver's wait; on a
// GPU back-end the driver may run them (a regular list): its wait first,
// and an acquire only once it says done.
#define SYNC_THEN_FORWARD(name, ...)                                  \
    do {                                                              \
        if (!gpu_routed(kApi)) return FORWARD(name, __VA_ARGS__);     \
        if (bridge::runs_program_kernels()) {                         \
            ze_result_t theirs_ = FORWARD(name, __VA_ARGS__);         \
            if (theirs_ != ZE_RESULT_SUCCESS) return theirs_;         \
            return to_ze(bridge::sync(), #name);                      \
        }                                                             \
        ze_result_t ours_ = to_ze(bridge::sync(), #name);             \
        ze_result_t theirs_ = FORWARD(name, __VA_ARGS__);             \
        return ours_ != ZE_RESULT_SUCCESS ? ours_ : theirs_;          \
    } while (0)

}  // namespace

// On a back-end whose memory lives in a driver context (levelzero), the
// program's context is that one: its modules, kernels and lists then reach
// shared memory.  It is the runtime's, so the program's destroy leaves it.
ZE_WRAPPER(zeContextCreate, ze_driver_handle_t driver, const ze_context_desc_t *desc, ze_context_handle_t *ctx) {
    if (gpu_routed(kApi) && driver && desc && ctx)
        if (void *ours = bridge::native_context()) {
            *ctx = static_cast<ze_context_handle_t>(ours);
            return ZE_RESULT_SUCCESS;
        }
    return FORWARD(zeContextCreate, driver, desc, ctx);
}

ZE_WRAPPER(zeContextDestroy, ze_context_handle_t ctx) {
    if (gpu_routed(kApi) && ctx && ctx == bridge::native_context()) return ZE_RESULT_SUCCESS;
    return FORWARD(zeContextDestroy, ctx);
}

ZE_WRAPPER(zeMemAllocShared, ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *device_desc,
           const ze_host_mem_alloc_desc_t *host_desc, size_t size, size_t alignment, ze_device_handle_t device,
           void **pptr) {
    if (!gpu_routed(kApi) || on_other_gpu(device))
        return FORWARD(zeMemAllocShared, ctx, device_desc, host_desc, size, alignment, device, pptr);
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!device_desc || !host_desc || !pptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    return to_ze(bridge::alloc(size, alignment, pptr), "zeMemAllocShared");
}

ZE_WRAPPER(zeMemFree, ze_context_handle_t ctx, void *ptr) {
    if (gpu_routed(kApi) && bridge::owns(ptr)) {
        if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        return to_ze(bridge::free(ptr), "zeMemFree");
    }
    return FORWARD(zeMemFree, ctx, ptr);
}

// Pointer queries (SYCL's get_pointer_type, a runtime choosing a copy's
// direction): shared memory is described as the driver describes a shared
// allocation of its own: that kind, the allocation's base as its id and
// range, and the runtime's GPU as its device (none on an emulated one, as
// for a shared allocation made without a device).
ZE_WRAPPER(zeMemGetAllocProperties, ze_context_handle_t ctx, const void *ptr, ze_memory_allocation_properties_t *props,
           ze_device_handle_t *device) {
    if (!gpu_routed(kApi) || !bridge::is_shared(ptr))
        return FORWARD(zeMemGetAllocProperties, ctx, ptr, props, device);
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    void *base;
    size_t size;
    if (Status s = bridge::shared_range(ptr, &base, &size); s != adsmSuccess) return to_ze(s, "zeMemGetAllocProperties");
    props->type = ZE_MEMORY_TYPE_SHARED;
    props->id = reinterpret_cast<uintptr_t>(base);
    props->pageSize = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (device) *device = static_cast<ze_device_handle_t>(bridge::native_device());
    return ZE_RESULT_SUCCESS;
}

ZE_WRAPPER(zeMemGetAddressRange, ze_context_handle_t ctx, const void *ptr, void **pbase, size_t *psize) {
    if (!gpu_routed(kApi) || !bridge::is_shared(ptr)) return FORWARD(zeMemGetAddressRange, ctx, ptr, pbase, psize);
    if (!ctx) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    void *base;
    size_t size;
    if (Status s = bridge::shared_range(ptr, &base, &size); s != adsmSuccess) return to_ze(s, "zeMemGetAddressRange");
    if (pbase) *pbase = base;
    if (psize) *psize = size;
    return ZE_RESULT_SUCCESS;
}

ZE_WRAPPER(zeKernelCreate, ze_module_handle_t module, const ze_kernel_desc_t *desc, ze_kernel_handle_t *kernel) {
    ze_result_t r = FORWARD(zeKernelCreate, module, desc, kernel);
    if (r == ZE_RESULT_SUCCESS && bridge::routed(kApi) && desc && kernel)
        if (KernelState *ks = g_kernels.obtain(*kernel)) ks->reset(desc->pKernelName);
    return r;
}

ZE_WRAPPER(zeKernelSetArgumentValue, ze_kernel_handle_t kernel, uint32_t index, size_t size, const void *value) {
    ze_result_t r = FORWARD(zeKernelSetArgumentValue, kernel, index, size, value);
    if (r != ZE_RESULT_SUCCESS || !gpu_routed(kApi)) return r;
    KernelState *ks = g_kernels.find(kernel);
    if (!ks || index >= 64) return r;
    std::lock_guard<std::mutex> lock(ks->mu);
    if (ks->args.size() <= index) {
        ks->args.resize(index + 1);
        ks->set.resize(index + 1);
    }
    const auto *v = static_cast<const uint8_t *>(value);
    // A null value is a null pointer argument.
    ks->args[index] = v ? std::vector<uint8_t>(v, v + size) : std::vector<uint8_t>(size, 0);
    ks->set[index] = true;
    return r;
}

ZE_WRAPPER(zeKernelSetGroupSize, ze_kernel_handle_t kernel, uint32_t x, uint32_t y, uint32_t z) {
    ze_result_t r = FORWARD(zeKernelSetGroupSize, kernel, x, y, z);
    if (r != ZE_RESULT_SUCCESS || !gpu_routed(kApi)) return r;
    if (KernelState *ks = g_kernels.find(kernel)) {
        std::lock_guard<std::mutex> lock(ks->mu);
        ks->group[0] = x;
        ks->group[1] = y;
        ks->group[2] = z;
    }
    return r;
}

ZE_WRAPPER(zeCommandListCreate, ze_context_handle_t ctx, ze_device_handle_t device, const ze_command_list_desc_t *desc,
           ze_command_list_handle_t *list) {
    ze_result_t r = FORWARD(zeCommandListCreate, ctx, device, desc, list);
    if (r == ZE_RESULT_SUCCESS && list && bridge::routed(kApi))
        if (ListState *ls = g_lists.obtain(*list)) ls->reset(false, ctx, on_other_gpu(device));
    return r;
}

ZE_WRAPPER(zeCommandListCreateImmediate, ze_context_handle_t ctx, ze_device_handle_t device,
           const ze_command_queue_desc_t *desc, ze_command_list_handle_t *list) {
    ze_result_t r = FORWARD(zeCommandListCreateImmediate, ctx, device, desc, list);
    if (r == ZE_RESULT_SUCCESS && list && bridge::routed(kApi))
        if (ListState *ls = g_lists.obtain(*list)) ls->reset(true, ctx, on_other_gpu(device));
    return r;
}

ZE_WRAPPER(zeCommandListReset, ze_command_list_handle_t list) {
    ze_result_t r = FORWARD(zeCommandListReset, list);
    if (r == ZE_RESULT_SUCCESS)
        if (ListState *ls = g_lists.find(list)) {
            std::lock_guard<std::mutex> lock(ls->mu);
            ls->launches.clear();
            ls->driver_runs = false;
        }
    return r;
}

ZE_WRAPPER(zeCommandListAppendLaunchKernel, ze_command_list_handle_t list, ze_kernel_handle_t kernel,
           const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    if (!gpu_routed(kApi)) return FORWARD(zeCommandListAppendLaunchKernel, list, kernel, groups, signal, nwait, waits);
    constexpr const char *fn = "zeCommandListAppendLaunchKernel";
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return FORWARD(zeCommandListAppendLaunchKernel, list, kernel, groups, signal, nwait, waits);
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (for_the_driver(ls))
        return driver_runs(ls, FORWARD(zeCommandListAppendLaunchKernel, list, kernel, groups, signal, nwait, waits));
    Launch l;
    if (ze_result_t r = capture(kernel, groups, &l); r != ZE_RESULT_SUCCESS) return r;
    return append(list, ls, std::move(l), signal, nwait, waits, fn);
}

// A cooperative launch on a GPU back-end's regular list is the driver's, as
// any command there (the list's execution releases first); on an emulated
// device, an ordinary launch of the host-function kernel.  On the back-end's
// immediate list the runtime makes the launch itself, and not cooperative:
// refused, with a message.
ZE_WRAPPER(zeCommandListAppendLaunchCooperativeKernel, ze_command_list_handle_t list, ze_kernel_handle_t kernel,
           const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    auto forward = [&] {
        return FORWARD(zeCommandListAppendLaunchCooperativeKernel, list, kernel, groups, signal, nwait, waits);
    };
    if (!gpu_routed(kApi)) return forward();
    constexpr const char *fn = "zeCommandListAppendLaunchCooperativeKernel";
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return forward();
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (for_the_driver(ls)) return driver_runs(ls, forward());
    if (bridge::runs_program_kernels())
        return refuse(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, fn,
                      "a cooperative launch on an immediate command list, which the runtime launches itself (not "
                      "cooperatively): append it to a regular command list");
    Launch l;
    if (ze_result_t r = capture(kernel, groups, &l); r != ZE_RESULT_SUCCESS) return r;
    return append(list, ls, std::move(l), signal, nwait, waits, fn);
}

// Launches whose group counts the device reads when they run: the driver's
// on a GPU back-end's regular list; elsewhere the runtime, which makes the
// launch itself, would need the counts at the append (earlier commands may
// still write them): refused, with a message.
template <class Forward>
ze_result_t indirect_launch(const char *fn, ze_command_list_handle_t list, uint32_t nwait, ze_event_handle_t *waits,
                            Forward &&forward) {
    if (!gpu_routed(kApi)) return forward();
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return forward();
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (for_the_driver(ls)) return driver_runs(ls, forward());
    return refuse(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, fn,
                  "group counts read by the device at launch, on a list whose launches the runtime makes itself: "
                  "append it to a regular command list on the levelzero device, or pass the counts to "
                  "zeCommandListAppendLaunchKernel");
}
ZE_WRAPPER(zeCommandListAppendLaunchKernelIndirect, ze_command_list_handle_t list, ze_kernel_handle_t kernel,
           const ze_group_count_t *groups, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    return indirect_launch("zeCommandListAppendLaunchKernelIndirect", list, nwait, waits, [&] {
        return FORWARD(zeCommandListAppendLaunchKernelIndirect, list, kernel, groups, signal, nwait, waits);
    });
}
ZE_WRAPPER(zeCommandListAppendLaunchMultipleKernelsIndirect, ze_command_list_handle_t list, uint32_t count,
           ze_kernel_handle_t *kernels, const uint32_t *count_buffer, const ze_group_count_t *groups,
           ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    return indirect_launch("zeCommandListAppendLaunchMultipleKernelsIndirect", list, nwait, waits, [&] {
        return FORWARD(zeCommandListAppendLaunchMultipleKernelsIndirect, list, count, kernels, count_buffer, groups,
                       signal, nwait, waits);
    });
}

ZE_WRAPPER(zeCommandListAppendMemoryCopy, ze_command_list_handle_t list, void *dst, const void *src, size_t size,
           ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    if (!gpu_routed(kApi) || (!bridge::is_shared(dst) && !bridge::is_shared(src)))
        return FORWARD(zeCommandListAppendMemoryCopy, list, dst, src, size, signal, nwait, waits);
    constexpr const char *fn = "zeCommandListAppendMemoryCopy";
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return refuse_shared_on_other_gpu(fn);
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (for_the_driver(ls))
        return driver_runs(ls, FORWARD(zeCommandListAppendMemoryCopy, list, dst, src, size, signal, nwait, waits));
    // The side that is not shared must be memory the CPU reaches.
    const void *other = bridge::is_shared(dst) ? src : dst;
    if (!bridge::is_shared(other) && memory_type(ls->ctx, other) == ZE_MEMORY_TYPE_DEVICE)
        return refuse(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, fn,
                      "a copy between shared memory and the driver's device memory (zeMemAllocDevice): copy through "
                      "host memory");
    Launch l;
    l.kind = Launch::copy;
    l.dst = dst;
    l.src = src;
    l.size = size;
    return append(list, ls, std::move(l), signal, nwait, waits, fn);
}

// A 2D or 3D region: as a copy, row by row (rows of shared memory are not
// contiguous for the driver).
ZE_WRAPPER(zeCommandListAppendMemoryCopyRegion, ze_command_list_handle_t list, void *dst,
           const ze_copy_region_t *dst_region, uint32_t dst_pitch, uint32_t dst_slice, const void *src,
           const ze_copy_region_t *src_region, uint32_t src_pitch, uint32_t src_slice, ze_event_handle_t signal,
           uint32_t nwait, ze_event_handle_t *waits) {
    if (!gpu_routed(kApi) || (!bridge::is_shared(dst) && !bridge::is_shared(src)))
        return FORWARD(zeCommandListAppendMemoryCopyRegion, list, dst, dst_region, dst_pitch, dst_slice, src, src_region,
                       src_pitch, src_slice, signal, nwait, waits);
    constexpr const char *fn = "zeCommandListAppendMemoryCopyRegion";
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return refuse_shared_on_other_gpu(fn);
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (!dst || !src || !dst_region || !src_region) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    const uint32_t depth = src_region->depth ? src_region->depth : 1;
    if (dst_region->width != src_region->width || dst_region->height != src_region->height ||
        dst_region->depth != src_region->depth || src_region->width > src_pitch || dst_region->width > dst_pitch ||
        (depth > 1 && (src_slice < src_pitch * src_region->height || dst_slice < dst_pitch * dst_region->height)))
        return refuse(ZE_RESULT_ERROR_INVALID_SIZE, fn,
                      "regions of one size, rows within their pitch and slices within theirs");
    if (for_the_driver(ls))
        return driver_runs(ls, FORWARD(zeCommandListAppendMemoryCopyRegion, list, dst, dst_region, dst_pitch, dst_slice,
                                       src, src_region, src_pitch, src_slice, signal, nwait, waits));
    const void *other = bridge::is_shared(dst) ? src : dst;
    if (!bridge::is_shared(other) && memory_type(ls->ctx, other) == ZE_MEMORY_TYPE_DEVICE)
        return refuse(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, fn,
                      "a copy between shared memory and the driver's device memory (zeMemAllocDevice): copy through "
                      "host memory");
    auto box = [](const void *base, const ze_copy_region_t &r, uint32_t pitch, uint32_t slice) {
        adsm::interpose::Plane p;
        p.at = static_cast<char *>(const_cast<void *>(base)) + size_t(r.originZ) * slice + size_t(r.originY) * pitch +
               r.originX;
        p.pitch = pitch;
        p.slice = slice;
        return p;
    };
    Launch l;
    l.kind = Launch::copy_region;
    l.dst_box = box(dst, *dst_region, dst_pitch, dst_slice);
    l.src_box = box(src, *src_region, src_pitch, src_slice);
    l.width = src_region->width;
    l.height = src_region->height;
    l.depth = depth;
    return append(list, ls, std::move(l), signal, nwait, waits, fn);
}

ZE_WRAPPER(zeCommandListAppendMemoryFill, ze_command_list_handle_t list, void *ptr, const void *pattern,
           size_t pattern_size, size_t size, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits) {
    if (!gpu_routed(kApi) || !bridge::is_shared(ptr))
        return FORWARD(zeCommandListAppendMemoryFill, list, ptr, pattern, pattern_size, size, signal, nwait, waits);
    constexpr const char *fn = "zeCommandListAppendMemoryFill";
    ListState *ls = g_lists.find(list);
    if (on_other_gpu_list(ls)) return refuse_shared_on_other_gpu(fn);
    if (!ls) return refuse(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, fn, "a command list the preload did not see created");
    if (!pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (nwait && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > 128 || size % pattern_size)
        return refuse(ZE_RESULT_ERROR_INVALID_SIZE, fn, "a pattern of a power of two up to 128 bytes that divides the size");
    if (for_the_driver(ls))
        return driver_runs(
            ls, FORWARD(zeCommandListAppendMemoryFill, list, ptr, pattern, pattern_size, size, signal, nwait, waits));
    Launch l;
    l.kind = Launch::fill;
    l.dst = ptr;
    l.size = size;
    l.pattern.assign(static_cast<const uint8_t *>(pattern), static_cast<const uint8_t *>(pattern) + pattern_size);
    return append(list, ls, std::move(l), signal, nwait, waits, fn);
}

ZE_WRAPPER(zeCommandQueueExecuteCommandLists, ze_command_queue_handle_t queue, uint32_t count,
           ze_command_list_handle_t *lists, ze_fence_handle_t fence) {
    constexpr const char *fn = "zeCommandQueueExecuteCommandLists";
    if (gpu_routed(kApi) && lists) {
        bool release = false;
        for (uint32_t i = 0; i < count; ++i) {
            ListState *ls = g_lists.find(lists[i]);
            if (!ls) continue;
            std::vector<Launch> launches;
            {
                std::lock_guard<std::mutex> lock(ls->mu);
                launches = ls->launches;  // a list may be executed again
                release = release || ls->driver_runs;
            }
            for (Launch &l : launches)
                if (ze_result_t r = run(l, fn); r != ZE_RESULT_SUCCESS) return r;
        }
        if (release)
            if (ze_result_t r = to_ze(bridge::release_for_driver(), fn); r != ZE_RESULT_SUCCESS) return r;
    }
    return FORWARD(zeCommandQueueExecuteCommandLists, queue, count, lists, fence);
}

ZE_WRAPPER(zeCommandQueueSynchronize, ze_command_queue_handle_t queue, uint64_t timeout) {
    SYNC_THEN_FORWARD(zeCommandQueueSynchronize, queue, timeout);
}
// Level Zero 1.6.  A program built against a loader that has it may run
// with one that does not: the preload's symbol is then the only one, and
// the driver's own commands on the list cannot be waited for.
ZE_WRAPPER(zeCommandListHostSynchronize, ze_command_list_handle_t list, uint64_t timeout) {
    bool loaded = false;
    if (!GPU_REAL(zeCommandListHostSynchronize) &&
        (adsm::interpose::driver_function(kLibrary, "zeInit", &loaded), loaded)) {
        adsm::log(adsm::LogLevel::error, "zeCommandListHostSynchronize: the Level Zero loader here (%s) lacks it "
                  "(Level Zero 1.6)", kLibrary);
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    }
    SYNC_THEN_FORWARD(zeCommandListHostSynchronize, list, timeout);
}
ZE_WRAPPER(zeFenceHostSynchronize, ze_fence_handle_t fence, uint64_t timeout) {
    SYNC_THEN_FORWARD(zeFenceHostSynchronize, fence, timeout);
}
ZE_WRAPPER(zeFenceQueryStatus, ze_fence_handle_t fence) { SYNC_THEN_FORWARD(zeFenceQueryStatus, fence); }
ZE_WRAPPER(zeEventHostSynchronize, ze_event_handle_t event, uint64_t timeout) {
    SYNC_THEN_FORWARD(zeEventHostSynchronize, event, timeout);
}
ZE_WRAPPER(zeEventQueryStatus, ze_event_handle_t event) { SYNC_THEN_FORWARD(zeEventQueryStatus, event); }

ZE_WRAPPER(zeCommandListAppendMemoryPrefetch, ze_command_list_handle_t list, const void *ptr, size_t size) {
    if (!gpu_routed(kApi) || !bridge::is_shared(ptr)) return FORWARD(zeCommandListAppendMemoryPrefetch, list, ptr, size);
    constexpr const char *fn = "zeCommandListAppendMemoryPrefetch";
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (Status s = bridge::check_hint_range(ptr, size); s != adsmSuccess) return to_ze(s, fn);
    return to_ze(bridge::prefetch(ptr, size, false), fn);
}

ZE_WRAPPER(zeCommandListAppendMemAdvise, ze_command_list_handle_t list, ze_device_handle_t device, const void *ptr,
           size_t size, ze_memory_advice_t advice) {
    if (!gpu_routed(kApi) || !bridge::is_shared(ptr))
        return FORWARD(zeCommandListAppendMemAdvise, list, device, ptr, size, advice);
    constexpr const char *fn = "zeCommandListAppendMemAdvise";
    if (!list || !device) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (Status s = bridge::check_hint_range(ptr, size); s != adsmSuccess) return to_ze(s, fn);
    // (8 and 9 are the system-memory preferred location's set and clear,
    // which headers before Level Zero 1.6 lack.)
    switch (static_cast<int>(advice)) {
    case 8: return to_ze(bridge::prefer_host(ptr, size, true), fn);
    case ZE_MEMORY_ADVICE_SET_PREFERRED_LOCATION:
    case ZE_MEMORY_ADVICE_CLEAR_PREFERRED_LOCATION:
    case 9: return to_ze(bridge::prefer_host(ptr, size, false), fn);
    default:
        // Read-mostly memory may still be written by kernels in Level Zero,
        // which adsm's read-mostly objects may not: the rest stays a hint.
        if (static_cast<int>(advice) < 0 || static_cast<int>(advice) > 9) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
        return ZE_RESULT_SUCCESS;
    }
}
