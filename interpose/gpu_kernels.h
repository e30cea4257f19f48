// From a driver's kernel handle to the kernel registered under the same
// name (adsmRegisterKernel), for launches that run on the runtime's own
// accelerator.  The name is recorded when the program creates the handle;
// the kernel is looked up at its first launch (it may be registered after
// the module was loaded) and kept.
#pragma once

#include <atomic>

#include "adsm.h"
#include "support/status.h"

namespace adsm::interpose {

struct KernelName {
    std::atomic<adsmKernel_t> kernel{nullptr};
    std::atomic<bool> named{false};
    char name[256] = {};

    // A (re)created handle: a new name, no kernel yet.
    void set(const char *n);
};

// The kernel for `rec` (or, without a record, for `name`); `api_call` names
// the program's call in the message when none is registered.
Status registered_kernel(KernelName *rec, const char *name, const char *api_call, adsmKernel_t *out);

}  // namespace adsm::interpose
