// The CUDA driver's part of the window's device memory (gpu/granules.h):
// granules from cuMemCreate mapped with cuMemMap and cuMemSetAccess, host
// mirrors pinned with cuMemHostRegister (portable: one registration serves
// every GPU of the process), hand-overs through scratch addresses of
// cuMemAddressReserve.
#pragma once

#include <cuda.h>

#include <functional>

#include "backend/cuda/driver.h"
#include "backend/gpu/granules.h"

namespace adsm::cuda {

class GranuleDriver final : public gpu::GranuleDriver {
public:
    // work_may_run: whether the device's streams may still run something
    // (cuMemUnmap would wait for it).
    void init(const Driver *d, CUdevice dev, std::function<bool()> work_may_run = {}) {
        d_ = d;
        dev_ = dev;
        work_may_run_ = std::move(work_may_run);
    }
    Status back(uintptr_t va, uint64_t size, uint64_t *handle) override;
    bool unback(uintptr_t va, uint64_t size, uint64_t handle) override;
    bool pin(void *host, uint64_t size) override;
    void unpin(void *host) override;
    Status reserve_scratch(uint64_t size, uintptr_t *va) override;
    void free_scratch(uintptr_t va, uint64_t size) override;
    Status remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle) override;
    bool work_may_run() override { return work_may_run_ && work_may_run_(); }

private:
    const Driver *d_ = nullptr;
    CUdevice dev_ = 0;
    std::function<bool()> work_may_run_;
};

}  // namespace adsm::cuda
