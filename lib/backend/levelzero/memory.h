// The Level Zero driver's part of the window's device memory
// (gpu/granules.h): physical memory from zePhysicalMemCreate mapped with
// zeVirtualMemMap at the driver's page size.  Level Zero's core API has no
// way to pin the host mirror in place, so transfers go through pinned
// staging memory instead (copies.h) and granules are never pinned.
// Hand-overs between GPUs go through scratch addresses of the context's
// (zeVirtualMemReserve), as the window's own reservation is.
#pragma once

#include <functional>

#include "backend/gpu/granules.h"
#include "backend/levelzero/driver.h"

namespace adsm::levelzero {

class GranuleDriver final : public gpu::GranuleDriver {
public:
    // work_may_run: whether the device's lists may still run a kernel
    // (memory unmapped under a running kernel is the runtime's fault).
    void init(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev,
              std::function<bool()> work_may_run = {}) {
        d_ = d;
        ctx_ = ctx;
        dev_ = dev;
        work_may_run_ = std::move(work_may_run);
    }
    Status back(uintptr_t va, uint64_t size, uint64_t *handle) override;
    bool unback(uintptr_t va, uint64_t size, uint64_t handle) override;
    bool pin(void *, uint64_t) override { return false; }
    void unpin(void *) override {}
    Status reserve_scratch(uint64_t size, uintptr_t *va) override;
    void free_scratch(uintptr_t va, uint64_t size) override;
    Status remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle) override;
    bool work_may_run() override { return work_may_run_ && work_may_run_(); }

private:
    const Driver *d_ = nullptr;
    ze_context_handle_t ctx_ = nullptr;
    ze_device_handle_t dev_ = nullptr;
    std::function<bool()> work_may_run_;
};

}  // namespace adsm::levelzero
