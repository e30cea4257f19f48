// The CUDA GPUs of one process (ADSM_DEVICE=cuda,cuda).  The driver gives
// a process one address space for all its GPUs, so at a window address
// only one of them can hold memory: they share the window's reservation,
// its table of granules (each granule one GPU's, gpu/granules.h) and the
// host mirror's registrations (portable: one pins for all).  An object
// moves between them by handing its granules over, and a kernel on one
// reaches another's object through a peer mapping, never a replica.
//
// Modules are loaded in every GPU's context (a CUfunction belongs to one),
// so a kernel the program got once runs on whichever GPU its context uses.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/memory.h"
#include "backend/gpu/granules.h"
#include "backend/gpu/window.h"

namespace adsm::cuda {

class CudaDevice;

class GpuSet {
public:
    // The process's set, made by the first CUDA device to ask.
    static std::shared_ptr<GpuSet> get();

    // A device joins; its place in the set is its index for function_on.
    // Devices never leave: the set goes with the last of them.
    size_t join(CudaDevice *d);
    std::vector<CudaDevice *> members() const {
        std::lock_guard<std::mutex> lock(mu_);
        return members_;
    }
    size_t size() const {
        std::lock_guard<std::mutex> lock(mu_);
        return members_.size();
    }

    // The window, reserved by the first device, attached once.
    std::mutex attach_mu;
    gpu::Window window;
    GranuleDriver pins;  // registers host memory, for every GPU
    gpu::Granules memory;

    // A module loaded in every GPU's context, and its functions there
    // (index: the device's place in the set).  What the program holds is
    // the address of the first, kept for the process's life.
    using PerGpu = std::vector<void *>;
    void *add_module(PerGpu modules);
    const PerGpu *module(void *handle) const;
    void *add_function(PerGpu functions);
    // The function a set-wide handle names on GPU `index`; a driver
    // function of the program's own (not a set-wide handle) is itself.
    void *function_on(void *handle, size_t index) const;

private:
    mutable std::mutex mu_;
    std::vector<CudaDevice *> members_;
    mutable std::shared_mutex tables_mu_;
    std::unordered_map<void *, std::unique_ptr<PerGpu>> modules_, functions_;
};

}  // namespace adsm::cuda
