#include "api/gpu_bridge.h"

#include <cstdlib>
#include <vector>

#include "api/launch.h"
#include "api/runtime.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "support/inside.h"
#include "support/log.h"

namespace adsm::gpu_bridge {
namespace {

constexpr int kUnknown = -1;
constexpr size_t kBounce = 4 << 20;
std::atomic<int> g_routed[2] = {kUnknown, kUnknown};

bool decide(Api api) {
    Inside in;
    Config c;
    if (Runtime *rt = started_runtime()) {
        c = rt->config;
    } else if (parse_config(os::env, &c) != adsmSuccess) {
        return false;  // the runtime reports the bad setting when it starts
    }
    return routes(c, api);
}

// (A routed GPU call: the program launches kernels.)
Status ready(Runtime **rt) {
    if (forked_child()) return fail(adsmErrorNoDevice, "the accelerator stays with the parent after fork");
    if (Status s = runtime(rt); s != adsmSuccess) return s;
    expect_kernels(**rt);
    return adsmSuccess;
}

#define ADSM_READY(rt)       \
    Inside in_;              \
    Runtime *rt = nullptr;   \
    if (Status s_ = ready(&rt); s_ != adsmSuccess) return s_

}  // namespace

bool routes(const Config &c, Api api) {
    if (c.gpu_apis == "on") return true;
    if (c.gpu_apis == "off") return false;
    return c.device == (api == Api::cuda ? "cuda" : "levelzero");
}

bool routed(Api api) {
    if (forked_child()) return false;  // the child has no accelerator of ours
    std::atomic<int> &slot = g_routed[static_cast<int>(api)];
    int v = slot.load(std::memory_order_relaxed);
    if (v == kUnknown) {
        v = decide(api) ? 1 : 0;
        slot.store(v, std::memory_order_relaxed);
    }
    return v == 1;
}

bool any_routed() { return routed(Api::cuda) || routed(Api::level_zero); }

bool started() { return started_runtime() != nullptr && !forked_child(); }

Status alloc(size_t size, size_t alignment, void **out) {
    *out = nullptr;
    if (alignment > os::kPageSize)
        return fail(adsmErrorNotSupported, "managed allocations align to %zu bytes at most; %zu was asked",
                    os::kPageSize, alignment);
    ADSM_READY(rt);
    return rt->manager->alloc(size, false, out, rt->manager->program_context(), RegionOrigin::gpu_api);
}

bool owns(const void *p) {
    Runtime *rt = started_runtime();
    return rt && !forked_child() && rt->manager->allocated_for(p, RegionOrigin::gpu_api);
}

Status free(void *p) {
    ADSM_READY(rt);
    return rt->manager->free(p, /*wait=*/true);
}

Status find_kernel(const char *name, adsmKernel_t *out) {
    ADSM_READY(rt);
    return rt->kernels.find(name, out);
}

unsigned param_count(adsmKernel_t k) {
    Runtime *rt = started_runtime();
    const KernelInfo *info = rt ? rt->kernels.get(k) : nullptr;
    return info ? static_cast<unsigned>(info->param_sizes.size()) : 0;
}

size_t param_size(adsmKernel_t k, unsigned index) {
    Runtime *rt = started_runtime();
    const KernelInfo *info = rt ? rt->kernels.get(k) : nullptr;
    return info && index < info->param_sizes.size() ? info->param_sizes[index] : 0;
}

Status launch(adsmKernel_t k, adsmDim3 grid, adsmDim3 block, void **args) {
    ADSM_READY(rt);
    return launch_kernel(*rt, k, grid, block, args, rt->manager->program_context());
}

bool runs_program_kernels() {
    Inside in;
    Runtime *rt = nullptr;
    return ready(&rt) == adsmSuccess && rt->device->runs_gpu_code();
}

Status launch_program_kernel(void *fn, const char *name, adsmDim3 grid, adsmDim3 block, unsigned shared_mem,
                             void *stream, void **args) {
    ADSM_READY(rt);
    adsmKernel_t k;
    if (!rt->kernels.find_device_function(fn, &k)) {
        std::vector<uint32_t> sizes;
        if (Status s = rt->device->function_params(fn, name ? name : "?", &sizes); s != adsmSuccess) return s;
        if (Status s = rt->kernels.add_module_function(name ? name : "(unnamed kernel)", fn, sizes, &k); s != adsmSuccess)
            return s;
    }
    NativeLaunch native;
    native.shared_mem = shared_mem;
    native.on_program_stream = true;
    native.stream = stream;
    return launch_kernel(*rt, k, grid, block, args, rt->manager->program_context(), native);
}

Status launch_program_kernel_sized(void *fn, const char *name, const uint32_t *sizes, unsigned count, adsmDim3 grid,
                                   adsmDim3 block, void *list, void **args) {
    ADSM_READY(rt);
    adsmKernel_t k;
    if (!rt->kernels.find_device_function(fn, &k)) {
        std::vector<uint32_t> declared(sizes, sizes + count);
        if (Status s = rt->kernels.add_module_function(name ? name : "(unnamed kernel)", fn, declared, &k);
            s != adsmSuccess)
            return s;
    }
    NativeLaunch native;
    native.on_program_stream = list != nullptr;
    native.stream = list;
    return launch_kernel(*rt, k, grid, block, args, rt->manager->program_context(), native);
}

Status release_for_driver() {
    ADSM_READY(rt);
    return rt->manager->release_for_driver(rt->manager->program_context());
}

Status release_for_driver_launch(void *stream, const std::function<Status()> &launch) {
    ADSM_READY(rt);
    return rt->manager->release_for_driver_launch(rt->manager->program_context(), stream, launch);
}

void *native_context() {
    Inside in;
    Runtime *rt = nullptr;
    return ready(&rt) == adsmSuccess ? rt->device->native_context() : nullptr;
}

void *native_device() {
    Inside in;
    Runtime *rt = nullptr;
    return ready(&rt) == adsmSuccess ? rt->device->native_device() : nullptr;
}

bool is_shared(const void *p) {
    Runtime *rt = started_runtime();
    return rt && !forked_child() && rt->space.contains(reinterpret_cast<uintptr_t>(p));
}

Status read_shared(const void *src, void *dst, size_t n) {
    ADSM_READY(rt);
    return rt->manager->program_read(src, dst, n);
}

Status write_shared(void *dst, const void *src, size_t n) {
    ADSM_READY(rt);
    return rt->manager->program_write(dst, src, n);
}

Status copy_shared(void *dst, const void *src, size_t n) {
    ADSM_READY(rt);
    // Through a buffer, each side as the program's own access.
    std::vector<unsigned char> bounce(n < kBounce ? n : kBounce);
    for (size_t done = 0; done < n;) {
        size_t len = n - done < bounce.size() ? n - done : bounce.size();
        if (Status s = rt->manager->program_read(static_cast<const char *>(src) + done, bounce.data(), len);
            s != adsmSuccess)
            return s;
        if (Status s = rt->manager->program_write(static_cast<char *>(dst) + done, bounce.data(), len); s != adsmSuccess)
            return s;
        done += len;
    }
    return adsmSuccess;
}

Status fill_shared(void *dst, int value, size_t n) {
    ADSM_READY(rt);
    return rt->manager->program_fill(dst, value, n);
}

Status prefetch(const void *p, size_t n, bool to_host) {
    ADSM_READY(rt);
    int device = Manager::kHost;
    if (!to_host) {
        void *base;
        size_t size;
        if (Status s = rt->manager->range_of(p, &base, &size); s != adsmSuccess) return s;
        device = static_cast<int>(rt->manager->device_index(rt->manager->program_context()));
    }
    Status s = rt->manager->prefetch(p, n, device);
    return s == adsmErrorBusy ? adsmSuccess : s;
}

Status prefer_host(const void *p, size_t n, bool on) {
    ADSM_READY(rt);
    return rt->manager->advise(p, n, on ? Manager::Advice::prefer_host : Manager::Advice::no_preference);
}

Status shared_range(const void *p, void **base, size_t *size, uint64_t *identity) {
    ADSM_READY(rt);
    return rt->manager->range_of(p, base, size, identity);
}

Status check_hint_range(const void *p, size_t n) {
    void *base;
    size_t size;
    if (Status s = shared_range(p, &base, &size); s != adsmSuccess) return s;
    size_t off = static_cast<size_t>(static_cast<const char *>(p) - static_cast<const char *>(base));
    if (n > size - off) return fail(adsmErrorInvalidValue, "[%p, +%zu) runs past the shared allocation", p, n);
    return adsmSuccess;
}

Status accept_host_registration(const void *p, size_t n, bool io_memory) {
    if (n == 0) return fail(adsmErrorInvalidValue, "a registration of no bytes at %p", p);
    if (io_memory) return fail(adsmErrorInvalidValue, "%p is shared memory, not a device's I/O memory", p);
    return check_hint_range(p, n);
}

Status accept_stream_attach(const void *p, size_t n) {
    void *base;
    size_t size;
    if (Status s = shared_range(p, &base, &size); s != adsmSuccess) return s;
    if (p != base) return fail(adsmErrorInvalidValue, "%p is inside a shared allocation, not its start (%p)", p, base);
    if (n != 0 && n != size)
        return fail(adsmErrorInvalidValue, "%zu bytes of a shared allocation of %zu: a whole allocation is attached", n,
                    size);
    return adsmSuccess;
}

Status sync() {
    ADSM_READY(rt);
    return rt->manager->sync(rt->manager->program_context());
}

}  // namespace adsm::gpu_bridge
