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

}  // namespace adsm
