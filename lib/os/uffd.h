// Fault-free write tracking with userfaultfd: the window's user view is
// registered for write-protection in async mode, so a write to a protected
// page is resolved by the kernel without any signal and leaves the page
// marked "written"; PAGEMAP_SCAN reports written pages and protects them
// again in one call.  Writes through the runtime's alias view are not seen,
// which is what fills need.  Needs Linux 6.7 or later.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::os {

class UffdTracker {
public:
    // Whether this kernel offers what the tracker needs (probed once).
    static bool available(const char **why);

    // Each call returns 0 or the errno that stopped it; init also names the
    // step that failed.

    // Registers the window [base, base+size) for write tracking.
    int init(uintptr_t base, size_t size, const char **failed_step);

    // Forgets earlier writes to [addr, addr+len): every page counts as clean.
    int arm(uintptr_t addr, size_t len);

    // Calls fn(arg, start, len) for each run of pages written in [addr,
    // addr+len) since they were last armed, and arms them again.
    // Async-signal-safe.
    using RunFn = void (*)(void *arg, uintptr_t start, size_t len);
    int collect(uintptr_t addr, size_t len, RunFn fn, void *arg);

private:
    int uffd_ = -1;
    int pagemap_ = -1;
};

}  // namespace adsm::os
