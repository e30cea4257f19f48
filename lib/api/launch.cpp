#include "api/launch.h"

#include <cstring>

namespace adsm {
namespace {

Status check_launch(const KernelInfo *k, adsmDim3 grid, adsmDim3 block, void **args) {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
        return fail(adsmErrorInvalidLaunch, "kernel '%s': grid (%u,%u,%u) and block (%u,%u,%u) must be at least 1 in every dimension",
                    k->name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z);
    if (block.x > 1024 || block.y > 1024 || block.z > 64 || uint64_t(block.x) * block.y * block.z > 1024)
        return fail(adsmErrorInvalidLaunch, "kernel '%s': block (%u,%u,%u) exceeds 1024 threads (x,y <= 1024, z <= 64)",
                    k->name.c_str(), block.x, block.y, block.z);
    if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
        return fail(adsmErrorInvalidLaunch, "kernel '%s': grid (%u,%u,%u) exceeds (2^31-1, 65535, 65535)", k->name.c_str(),
                    grid.x, grid.y, grid.z);
    if (!k->param_sizes.empty() && !args)
        return fail(adsmErrorInvalidValue, "kernel '%s' takes %zu arguments but args is NULL", k->name.c_str(),
                    k->param_sizes.size());
    for (size_t i = 0; i < k->param_sizes.size(); ++i)
        if (!args[i]) return fail(adsmErrorInvalidValue, "kernel '%s': args[%zu] is NULL", k->name.c_str(), i);
    return adsmSuccess;
}

}  // namespace

Status launch_kernel(Runtime &rt, adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args, Context *in) {
    return launch_kernel(rt, kernel, grid, block, args, in, NativeLaunch{});
}

Status launch_kernel(Runtime &rt, adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args, Context *in,
                     const NativeLaunch &native, const ObjectUse *uses, size_t n) {
    const KernelInfo *k = rt.kernels.get(kernel);
    if (!k) return fail(adsmErrorInvalidValue, "%p is not a kernel handle", static_cast<void *>(kernel));
    if (Status s = check_launch(k, grid, block, args); s != adsmSuccess) return s;
    if (Status s = rt.device->check_kernel(*k); s != adsmSuccess) return s;
    alignas(kArgAlign) unsigned char blob[kMaxArgsBytes];
    // The bytes between parameter slots are zero, not what the stack held:
    // the collector reads every word of the blob (a stale word may be the
    // address of a closed kernel heap, which would get the launch refused)
    // and keeps what they point to while the kernel may run.
    memset(blob, 0, k->args_size);
    for (size_t i = 0; i < k->param_sizes.size(); ++i) memcpy(blob + k->param_offsets[i], args[i], k->param_sizes[i]);
    LaunchDesc l;
    l.kernel = k;
    l.grid = grid;
    l.block = block;
    l.args = blob;
    l.args_size = k->args_size;
    l.shared_mem = native.shared_mem;
    l.has_native_stream = native.on_program_stream;
    l.native_stream = native.stream;
    // A kernel may hold the only pointer to a collected object, in its arguments.
    uint64_t synced_limit = UINT64_MAX;
    if (gc::Collector *c = rt.collector.load(std::memory_order_acquire)) {
        Context *ctx = in ? in : rt.manager->current();
        if (ctx)
            if (Status s = c->note_launch(ctx, blob, k->args_size, &synced_limit); s != adsmSuccess) return s;
    }
    if (!in) note_api_launch(rt);  // (a routed launch names the program's context)
    return rt.manager->call(l, in, synced_limit, uses, n);
}

}  // namespace adsm
