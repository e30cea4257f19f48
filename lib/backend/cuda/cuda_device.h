// The CUDA back-end: shared memory at one address on an NVIDIA GPU.
//
// The driver reserves the window's device addresses first (reserve_window)
// and the runtime maps the host mirror over that reservation, so one
// address names the host copy on the CPU and the device copy in kernels.
// Device memory is mapped into the window on demand (gpu/granules.h), copies run
// on a stream of their own (copies.h), and each context's kernels on one
// stream.  Kernels are GPU code from modules (adsmLoadModule).
//
// A kernel fault poisons a CUDA context for good: the sync that sees it
// reports adsmErrorLaunchFailure, every later call adsmErrorDeviceLost.
//
// Several GPUs (ADSM_DEVICE=cuda,cuda) are several devices of one GpuSet
// (gpu/gpu_set.h): one window, granules each of one GPU, objects handed
// over between them and reached over peer mappings.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <string>

#include "backend/cuda/copies.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/memory.h"
#include "backend/device.h"
#include "backend/gpu/device_loss.h"
#include "backend/gpu/gpu_set.h"
#include "backend/gpu/granules.h"
#include "backend/gpu/handler_calls.h"
#include "backend/gpu/high_water.h"
#include "backend/gpu/window.h"

namespace adsm::cuda {

class CudaDevice final : public Device {
public:
    // Loads the driver and opens GPU `ordinal` (0: the first of
    // CUDA_VISIBLE_DEVICES).
    static Status open(const Config &config, int ordinal, std::unique_ptr<Device> *out);
    // Gives back what the device took from the driver.  Only a failed start
    // ends a device (a started runtime keeps its devices for good); the
    // program, going on without adsm, may use the GPU itself.
    ~CudaDevice() override;

    const char *name() const override { return "cuda"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return memory().used_by(&granule_driver_); }
    bool pins_host_memory() const override { return true; }
    bool pins_at_commit() const override { return memory().pinning() == gpu::Pinning::eager && memory().pinned(); }
    MirrorUse pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len) override;
    bool pin_staging(void *p, size_t n) override;
    void unpin_staging(void *p) override;
    bool fast_link() const override { return link_outpaces_tracking(12); }  // PCIe 3 x16 or faster
    bool runs_gpu_code() const override { return true; }

    Status reserve_window(uintptr_t preferred, uint64_t size, uintptr_t *out) override;
    Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) override;
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;
    void forget_host_copy(uintptr_t dev, uint64_t bytes) override {
        if (usable() == adsmSuccess) memory().forget_host(dev, bytes);  // (a fork child's mirror is its parent's too)
    }
    bool shares_addresses_with(const Device &other) const override;
    uint64_t mapping_granularity() const override { return window_.granularity; }
    Status hand_over(Device &to, uintptr_t dev, uint64_t bytes) override;
    Status map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) override;
    void unmap_memory(uintptr_t dev, uint64_t bytes) override;

    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override;
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override;
    Status fill(uintptr_t dev, int value, size_t n) override;
    uint64_t copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) override;
    uint64_t copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) override;
    Status wait_copies(uint64_t ticket) override;

    void detach_after_fork() override { loss_.forked(); }
    bool serves_fork_child() const override { return false; }

    Status load_module(const void *image, size_t size, void **module) override;
    Status module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) override;
    Status function_params(void *fn, const char *name, std::vector<uint32_t> *param_sizes) override;
    Status check_kernel(const KernelInfo &k) const override;

    Status create_stream(StreamId *out) override;
    void destroy_stream(StreamId id) override;
    Status launch(StreamId id, const LaunchDesc &launch) override;
    Status follow(StreamId id, void *native_stream) override;
    Status synchronize(StreamId id) override;

private:
    CudaDevice() = default;
    gpu::Granules &memory() const { return set_->memory; }
    // The same device's context in another GPU of the set (a peer).
    const CudaDevice *peer(const Device &other) const;
    // Loads a module in this GPU's context alone.
    Status load_here(const void *image, void **module);
    Status function_here(void *module, const char *name, void **fn);
    // Makes the device's context current on the calling thread for as long
    // as it lives (the program's own current context comes back after), or
    // says why the device cannot be used (lost, or in a fork child).
    class Entered;
    // A step no caller hears of, skipped because the context could not be
    // made current (`in`), said in the log; a lost or forked device's are
    // not (the loss was reported; a fork child's driver is its parent's).
    void say_skipped(const Entered &in, const char *what) const;
    Status usable() const { return loss_.usable(); }
    // Turns a driver error into the runtime's, remembering a context error
    // (a faulting kernel) as the end of the device.
    Status driver_error(CUresult r, const char *what, Status usual);
    // Host memory for a copy of n bytes at p: the alias for the window (see
    // copies.h), its granules pinned first when they are not yet.
    const void *host_for_copy(const void *p, size_t n);
    uint64_t copy_async(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg);
    struct Stream;
    CUresult join(Stream &slot, CUstream program, CUstream ours);
    // The driver calls of wait_copies and synchronize (see there).
    bool copy_stream_failed();
    Status copy_failure();
    CUresult query_stream(StreamId id);
    // Whether a kernel or copy queued on a context's stream may still run.
    bool streams_may_run();

    static constexpr uint32_t kMaxStreams = 4096;
    struct Stream {
        std::atomic<CUstream> s{nullptr};
        std::atomic<const KernelInfo *> last{nullptr};  // for messages about a failure
        std::atomic<CUevent> joined{nullptr};  // the program's stream, joined into this one
    };

    const Driver *d_ = nullptr;
    using Set = gpu::GpuSet<CudaDevice>;
    std::shared_ptr<Set> set_;
    size_t index_ = 0;  // in set_
    CUdevice dev_ = 0;
    CUcontext ctx_ = nullptr;
    char gpu_name_[128] = {};
    uint64_t capacity_ = 0;
    gpu::Window window_;
    GranuleDriver granule_driver_;
    CopyEngine copies_;
    Stream streams_[kMaxStreams];
    gpu::HighWater stream_slots_;
    gpu::DeviceLoss loss_{"cuda"};
    // Last: its threads stop before anything they may call goes.
    gpu::HandlerCalls handler_calls_;
};

}  // namespace adsm::cuda
