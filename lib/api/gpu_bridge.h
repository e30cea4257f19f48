// What the interposed GPU APIs (interpose/cuda_*.cpp, level_zero.cpp) need
// from the runtime.  A routed program's managed allocations are shared
// memory, its launches run the kernel registered under the same name after
// a release, and its synchronisations wait for those kernels and acquire.
// Everything happens in the program context (Manager::program_context), so
// any thread's launch releases what any thread allocated, as with CUDA's
// process-wide unified memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "adsm.h"
#include "support/config.h"
#include "support/status.h"

namespace adsm::gpu_bridge {

enum class Api { cuda, level_zero };

// Whether configuration `c` routes `api`: ADSM_GPU_APIS on, or auto with
// the API's own back-end as the first device.
bool routes(const Config &c, Api api);

// Whether the program's calls of `api` go through the runtime
// (ADSM_GPU_APIS; see config.cpp).  Never starts the runtime, so it is safe
// from dlsym and during start-up.
bool routed(Api api);
bool any_routed();
// Whether the runtime has started, so that shared memory may exist.  Never
// starts it.
bool started();

// Shared memory for a managed allocation; alignment beyond the page is
// refused (adsmErrorNotSupported).  Starts the runtime.
Status alloc(size_t size, size_t alignment, void **out);
// Whether p is the start of a live managed allocation from alloc().
bool owns(const void *p);
// Frees such an allocation after the kernels that may use it.
Status free(void *p);

// The kernel registered under `name` and its parameters.
Status find_kernel(const char *name, adsmKernel_t *out);
unsigned param_count(adsmKernel_t k);
size_t param_size(adsmKernel_t k, unsigned index);  // 0 when out of range

// A release and a launch; args as cuLaunchKernel's kernelParams.
Status launch(adsmKernel_t k, adsmDim3 grid, adsmDim3 block, void **args);

// Whether the runtime's accelerator runs the program's own GPU code (the
// cuda device): a launch then runs the driver function it names, not a
// kernel registered under its name.  Starts the runtime.
bool runs_program_kernels();
// A release, then the program's own driver function `fn` (called `name`)
// on its `stream`, with its dynamic shared memory; args as kernelParams.
Status launch_program_kernel(void *fn, const char *name, adsmDim3 grid, adsmDim3 block, unsigned shared_mem,
                             void *stream, void **args);
// The same for a driver that does not size a kernel's parameters (Level
// Zero): `sizes` are the ones the program set them with.  On the program's
// command list `list`, or the runtime's own when list is null (a regular
// list's kernel, run when the list is executed).
Status launch_program_kernel_sized(void *fn, const char *name, const uint32_t *sizes, unsigned count, adsmDim3 grid,
                                   adsmDim3 block, void *list, void **args);
// A release of the program context for commands the driver runs itself (a
// regular command list with the program's own kernels, copies and fills in
// it), before the list is executed; the next sync acquires.
Status release_for_driver();
// The same for work the driver queues on the program's `stream` (a CUDA
// graph's launch, which `launch` makes): the next sync waits for it, on
// whichever stream the program synchronizes.
Status release_for_driver_launch(void *stream, const std::function<Status()> &launch);
// The same for a launch `forward` makes through the program's own API,
// whose result code (CUresult, cudaError_t) comes back in `own` as the
// driver gave it: the wrapper must return the driver's own error, not a
// translation of it.  A failure of the runtime's release is the Status.
template <class Code, class Forward>
Status release_for_driver_launch(const char *fn, void *stream, Code success, Code &own, Forward &&forward) {
    own = success;
    return release_for_driver_launch(stream, [&] {
        own = forward();
        if (own == success) return Status(adsmSuccess);
        return fail(adsmErrorLaunchFailure, "%s: CUDA error %d", fn, static_cast<int>(own));
    });
}
// The driver context the runtime's device keeps the window in, when its
// API's objects must share it (Level Zero), else null.  Starts the runtime.
void *native_context();
// The driver's handle of the runtime's GPU, when its API names GPUs in the
// calls a routed program makes (Level Zero), else null.  Starts the runtime.
void *native_device();

// Shared memory the program hands to the driver's copies and fills: these
// move the data through the coherence protocol instead (the driver would
// take a window address for device memory).
bool is_shared(const void *p);
Status read_shared(const void *src, void *dst, size_t n);   // src shared
Status write_shared(void *dst, const void *src, size_t n);  // dst shared
Status copy_shared(void *dst, const void *src, size_t n);   // both shared
Status fill_shared(void *dst, int value, size_t n);
// A routed prefetch of shared memory (cuMemPrefetchAsync, a Level Zero
// prefetch append): to the host, or to the device of the context that owns
// it.  One that a kernel may still be using is left to the synchronisation
// that follows, which hands it back anyway: the program ordered it after
// its kernels, and nothing is wrong.
Status prefetch(const void *p, size_t n, bool to_host);
// A routed preferred location (cuMemAdvise): the host, or none.  Other
// advice stays a hint: CUDA's read-mostly memory may still be written by
// kernels, which adsm's read-mostly objects may not.
Status prefer_host(const void *p, size_t n, bool on);
// A program's registration of shared host memory with its driver
// (cuMemHostRegister): shared memory is pinned where the runtime's copies
// need it and reached by kernels at the same address already, so one
// within an allocation is taken as done; I/O memory it is not.
Status accept_host_registration(const void *p, size_t n, bool io_memory);
// A program's attaching of shared memory to one of its streams
// (cuStreamAttachMemAsync): the whole allocation from its base (length 0
// or its size), as CUDA asks of managed memory.  The runtime takes it as a
// hint: every routed kernel may use shared memory, and a CPU access while
// one runs is ADSM_ON_RACE's business, as without it.
Status accept_stream_attach(const void *p, size_t n);
// The shared allocation around p, for the drivers' address-range queries;
// `identity` tells it from a later allocation at the same base.
Status shared_range(const void *p, void **base, size_t *size, uint64_t *identity = nullptr);
// A hint names [p, p+n) inside one shared allocation, else a clear error.
Status check_hint_range(const void *p, size_t n);
// Waits for every launched kernel and acquires; the first kernel error
// since the last sync.
Status sync();

}  // namespace adsm::gpu_bridge
