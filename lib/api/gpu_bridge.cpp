#include "api/gpu_bridge.h"

#include <cstdlib>

#include "api/launch.h"
#include "api/runtime.h"
#include "support/inside.h"
#include "support/log.h"

namespace adsm::gpu_bridge {
namespace {

constexpr int kUnknown = -1;
std::atomic<int> g_routed[2] = {kUnknown, kUnknown};

bool decide(Api api) {
    Inside in;
    Config c;
    if (Runtime *rt = started_runtime()) {
        c = rt->config;
    } else if (parse_config([](const char *n) { return getenv(n); }, &c) != adsmSuccess) {
        return false;  // the runtime reports the bad setting when it starts
    }
    if (c.gpu_apis == "on") return true;
    if (c.gpu_apis == "off") return false;
    return c.device == (api == Api::cuda ? "cuda" : "levelzero");
}

Status ready(Runtime **rt) {
    if (forked_child()) return fail(adsmErrorNoDevice, "the accelerator stays with the parent after fork");
    return runtime(rt);
}

#define ADSM_READY(rt)       \
    Inside in_;              \
    Runtime *rt = nullptr;   \
    if (Status s_ = ready(&rt); s_ != adsmSuccess) return s_

}  // namespace

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

Status sync() {
    ADSM_READY(rt);
    return rt->manager->sync(rt->manager->program_context());
}

}  // namespace adsm::gpu_bridge
