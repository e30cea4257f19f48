// Device memory behind the window: physical allocations of the GPU's
// mapping granularity (2 MiB on current NVIDIA GPUs) mapped at the window
// addresses with the virtual-memory API.  Allocations are page-sized, so
// several share a granule; a granule lives while any allocation overlaps it.
//
// Each granule's host mirror is registered with the driver too, through the
// runtime's alias (the window address is the device's), so copies run at
// pinned speed; its pages stay put until the granule goes.  By default a
// granule is pinned at its first use (the CPU's first fault on an object
// pins all of its granules, else the first copy through one), not when it
// is backed: pinning makes every page of it (about 375 us per MiB on an
// H100 host, as much as cuMemAllocHost), and much of a mirror is never
// used: the output that I/O staging writes out, the grid whose halo rows
// alone come back.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "backend/cuda/driver.h"

namespace adsm::cuda {

// When mirror granules are pinned (ADSM_CUDA_PIN).
enum class Pinning { lazy, eager, off };

class DeviceMemory {
public:
    // Before init: when mirror granules are pinned.
    void set_pinning(Pinning p) { pinning_ = p; }
    Pinning pinning() const { return pinning_; }
    void init(const Driver *d, CUdevice dev, uint64_t granularity, uintptr_t base, int host_fd, uint8_t *host_alias);

    // Backs and frees one granule, so that the driver's one-time costs of its
    // first physical allocation and host registration (7 to 9 ms on an H100)
    // fall on start-up rather than on the program's first allocation; a
    // driver that cannot back the window fails here, before the program runs.
    Status warm_up();

    // Backs [addr, addr+bytes) with device memory; all or nothing.
    Status commit(uintptr_t addr, uint64_t bytes);
    void decommit(uintptr_t addr, uint64_t bytes);

    // Before a copy through host memory [host, host+n): pins the mirror
    // granules it touches that are not pinned yet (lazy pinning).  Memory
    // outside the mirror is the caller's, left as it is.
    void pin_for_copy(const void *host, size_t n);

    uint64_t used() const { return granules_in_use_.load(std::memory_order_relaxed) * granularity_; }
    bool pinned() const { return pinning_ != Pinning::off && !pin_failed_.load(std::memory_order_relaxed); }

private:
    struct Granule {
        CUmemGenericAllocationHandle handle = 0;
        uint32_t users = 0;
        bool registered = false;
    };
    Status create(uint64_t index, Granule *g);  // under mu_
    void destroy(uint64_t index, Granule &g);   // under mu_
    void pin(uint64_t index, Granule &g);       // under mu_

    const Driver *d_ = nullptr;
    CUdevice dev_ = 0;
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
    std::atomic<uint64_t> unpinned_{0};         // backed granules not pinned yet: copies skip the lock at 0
    std::atomic<bool> pin_failed_{false};       // a registration failed: copies go pageable from then on
};

}  // namespace adsm::cuda
