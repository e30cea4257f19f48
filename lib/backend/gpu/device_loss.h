// How a GPU back-end ends: a kernel fault poisons the driver's context for
// good (CUDA's sticky errors, Level Zero's device lost), and a fork child
// may not touch the parent's device.  The first call that meets the fault
// reports adsmErrorLaunchFailure with the driver's words; every later call
// reports adsmErrorDeviceLost with the same reason, and never reaches the
// driver again.
#pragma once

#include <atomic>
#include <cstdio>

#include "support/status.h"

namespace adsm::gpu {

class DeviceLoss {
public:
    explicit DeviceLoss(const char *backend) : backend_(backend) {}

    // Success, or why the device can no longer be used.
    Status usable() const {
        if (forked_.load(std::memory_order_relaxed))
            return fail(adsmErrorNoDevice, "%s: the GPU stays with the parent process after fork", backend_);
        if (!lost_.load(std::memory_order_acquire)) return adsmSuccess;
        if (!told_.load(std::memory_order_acquire))  // the losing thread is still writing why
            return fail(adsmErrorDeviceLost, "%s: the GPU context is lost", backend_);
        return fail(adsmErrorDeviceLost, "%s", reason_);
    }
    bool lost() const { return lost_.load(std::memory_order_acquire); }
    void forked() { forked_.store(true); }
    // A fork child's: the driver's objects are the parent's, not to be touched.
    bool in_fork_child() const { return forked_.load(std::memory_order_relaxed); }

    // `what` failed with the driver's `why`, which ends the device.
    Status lose(const char *what, const char *why) {
        if (!lost_.exchange(true, std::memory_order_acq_rel)) {
            snprintf(reason_, sizeof reason_, "%s: the GPU context is lost since %s failed with %s; start the process again",
                     backend_, what, why);
            told_.store(true, std::memory_order_release);
            return fail(adsmErrorLaunchFailure, "%s: %s", what, why);
        }
        return usable();
    }

private:
    const char *backend_;
    std::atomic<bool> forked_{false};
    std::atomic<bool> lost_{false};
    std::atomic<bool> told_{false};  // reason_ is written
    char reason_[384] = {};
};

}  // namespace adsm::gpu
