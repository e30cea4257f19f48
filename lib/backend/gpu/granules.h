// Device memory behind a GPU's window, as every driver with a
// virtual-memory API makes it: physical allocations of the driver's
// granularity (2 MiB on current GPUs) mapped at the window's addresses.
// Allocations are page-sized, so several share a granule; a granule lives
// while any allocation overlaps it.  The driver's part (make, map, pin) is
// a GranuleDriver; the sharing, the undoing of half-made commits and the
// pinning policy are here, once for every driver.
//
// A granule's host mirror may be pinned too (registered with the driver
// through the runtime's alias, since the window address is the device's),
// so copies run at pinned speed; its pages stay put until the granule goes.
// By default a granule is pinned at its first use (the CPU's first fault in
// it, else the first copy through it), not when it is backed: pinning makes
// every page of it (about 375 us per MiB on an H100 host), and much of a
// mirror is never used (a grid whose halo rows alone the CPU writes).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "support/status.h"

namespace adsm::gpu {

// When mirror granules are pinned (ADSM_CUDA_PIN).
enum class Pinning { lazy, eager, off };

class GranuleDriver {
public:
    virtual ~GranuleDriver() = default;
    // Makes device memory for [va, va+size) and maps it there, usable by
    // the device; all or nothing.  *handle is the driver's, for unback.
    virtual Status back(uintptr_t va, uint64_t size, uint64_t *handle) = 0;
    virtual void unback(uintptr_t va, uint64_t size, uint64_t handle) = 0;
    // Pins host memory for copies; false when the driver cannot (copies
    // then go through pageable memory from then on).
    virtual bool pin(void *host, uint64_t size) = 0;
    virtual void unpin(void *host) = 0;
};

class Granules {
public:
    // Before init: when mirror granules are pinned.
    void set_pinning(Pinning p) { pinning_ = p; }
    Pinning pinning() const { return pinning_; }
    void init(GranuleDriver *driver, uint64_t granularity, uintptr_t base, int host_fd, uint8_t *host_alias);

    // Backs and frees one granule, so that the driver's one-time costs of its
    // first physical allocation and host registration (7 to 9 ms on an H100)
    // fall on start-up rather than on the program's first allocation; a
    // driver that cannot back the window fails here, before the program runs.
    Status warm_up();

    // Backs [addr, addr+bytes) with device memory; all or nothing.
    Status commit(uintptr_t addr, uint64_t bytes);
    // Whether `bytes` more can fit a device of `capacity` bytes: hopeless
    // requests fail before anything is mapped or pinned, in words that name
    // the back-end, the device and the driver's own code for it.
    Status room_for(uint64_t bytes, uint64_t capacity, const char *backend, const char *device,
                    const char *driver_code) const;
    void decommit(uintptr_t addr, uint64_t bytes);

    // Before a copy through host memory [host, host+n): pins the mirror
    // granules it touches that are not pinned yet (lazy pinning).  Memory
    // outside the mirror is the caller's, left as it is.
    void pin_for_copy(const void *host, size_t n);
    // Before the CPU uses window addresses [*start, *start + *len) of an
    // object at [lo, hi): pins the granules holding them, widens the range
    // to those granules (within the object) and returns whether the CPU
    // uses any of them for the first time.
    bool pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len);
    // Whether some backed granule has not been used by the CPU yet.
    bool cpu_has_unseen() const { return unseen_.load(std::memory_order_relaxed) != 0; }

    uint64_t granularity() const { return granularity_; }
    uint64_t used() const { return granules_in_use_.load(std::memory_order_relaxed) * granularity_; }
    bool pinned() const { return pinning_ != Pinning::off && !pin_failed_.load(std::memory_order_relaxed); }

private:
    struct Granule {
        uint64_t handle = 0;
        uint32_t users = 0;
        bool registered = false;
        bool cpu_seen = false;  // the CPU has faulted in it (pin_for_cpu)
    };
    Status create(uint64_t index, Granule *g);  // under mu_
    void destroy(uint64_t index, Granule &g);   // under mu_
    void pin(uint64_t index, Granule &g);       // under mu_

    GranuleDriver *driver_ = nullptr;
    uint64_t granularity_ = 0;
    uintptr_t base_ = 0;
    int host_fd_ = -1;
    uint8_t *alias_ = nullptr;
    Pinning pinning_ = Pinning::lazy;
    // Allocation, free and first copies of a granule; never held across a
    // copy or a launch, and never by code that touches the window (so a
    // fault handler's copy cannot find it held by its own thread).
    std::mutex mu_;
    std::unordered_map<uint64_t, Granule> granules_;
    std::atomic<uint64_t> granules_in_use_{0};
    std::atomic<uint64_t> unpinned_{0};    // backed granules not pinned yet: copies skip the lock at 0
    std::atomic<uint64_t> unseen_{0};      // backed granules the CPU has not used yet: faults skip it at 0
    std::atomic<bool> pin_failed_{false};  // a registration failed: copies go pageable from then on
};

}  // namespace adsm::gpu
