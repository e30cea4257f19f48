// A kernel launch from the arguments the C API and the GPU interposers
// receive: checked against the kernel's registration, by-value arguments
// packed, then handed to the memory manager (which releases and launches).
#pragma once

#include "adsm.h"
#include "api/runtime.h"

namespace adsm {

// args holds one pointer per registered parameter (cuLaunchKernel's
// kernelParams); the values are copied before this returns.  In `in`, or
// the calling thread's context when null.
Status launch_kernel(Runtime &rt, adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args,
                     Context *in = nullptr);

// Where and how a routed program's own launch runs (GPU code only).
struct NativeLaunch {
    unsigned shared_mem = 0;
    bool on_program_stream = false;
    void *stream = nullptr;  // the program's (0: its legacy default stream)
};
// With `uses` (n of them): only those objects are released (adsmCallWith).
Status launch_kernel(Runtime &rt, adsmKernel_t kernel, adsmDim3 grid, adsmDim3 block, void **args, Context *in,
                     const NativeLaunch &native, const ObjectUse *uses = nullptr, size_t n = 0);

}  // namespace adsm
