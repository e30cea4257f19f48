// The Level Zero back-end: shared memory at one address on a GPU that the
// oneAPI Level Zero loader drives (Intel GPUs).
//
// It has the CUDA back-end's structure (gpu/): the driver reserves the
// window's device addresses first and the host mirror is mapped over that
// reservation; device memory is mapped into the window on demand
// (gpu/granules.h, memory.h); copies name host memory by the alias and go
// through pinned staging memory on the copy engine (copies.h, and
// async_copies.h for the copies that overlap the program); each
// context's kernels go to an immediate command list of its own on the
// compute queue group.  Kernels are GPU code from modules (SPIR-V or the
// device's native binaries).
//
// A kernel fault loses the device (ZE_RESULT_ERROR_DEVICE_LOST): the sync
// that sees it reports adsmErrorLaunchFailure, every later call
// adsmErrorDeviceLost.
//
// Several GPUs (ADSM_DEVICE=levelzero,levelzero) are the GPUs of one driver
// in one context (a reservation is a context's): one GpuSet
// (gpu/gpu_set.h), one window, granules each of one GPU, objects handed
// over between them.  A mapping in a context is reached by its GPU's peers
// without more ado (zeDeviceCanAccessPeer says which).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/device.h"
#include "backend/gpu/device_loss.h"
#include "backend/gpu/gpu_set.h"
#include "backend/gpu/granules.h"
#include "backend/gpu/handler_calls.h"
#include "backend/gpu/high_water.h"
#include "backend/gpu/window.h"
#include "backend/levelzero/async_copies.h"
#include "backend/levelzero/copies.h"
#include "backend/levelzero/driver.h"
#include "backend/levelzero/memory.h"

namespace adsm::levelzero {

class LevelZeroDevice final : public Device {
public:
    // Loads the loader and opens GPU `ordinal` of the first driver that has GPUs.
    static Status open(const Config &config, int ordinal, std::unique_ptr<Device> *out);
    // Gives back what the device took from the driver.  Only a failed start
    // ends a device (a started runtime keeps its devices for good); the
    // program, going on without adsm, may use the GPU itself.
    ~LevelZeroDevice() override;

    const char *name() const override { return "levelzero"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return memory().used_by(&granule_driver_); }
    bool runs_gpu_code() const override { return true; }

    Status reserve_window(uintptr_t preferred, uint64_t size, uintptr_t *out) override;
    Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) override;
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;
    void forget_host_copy(uintptr_t dev, uint64_t bytes) override {
        if (loss_.usable() == adsmSuccess) memory().forget_host(dev, bytes);  // (a fork child's mirror is its parent's too)
    }
    bool shares_addresses_with(const Device &other) const override { return peer(other) != nullptr; }
    uint64_t mapping_granularity() const override { return window_.granularity; }
    Status hand_over(Device &to, uintptr_t dev, uint64_t bytes) override;
    Status map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) override;

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
    void *native_context() const override { return ctx_; }
    void *native_device() const override { return dev_; }

    Status create_stream(StreamId *out) override;
    void destroy_stream(StreamId id) override;
    Status launch(StreamId id, const LaunchDesc &launch) override;
    Status synchronize(StreamId id) override;

private:
    LevelZeroDevice() = default;
    gpu::Granules &memory() const { return set_->memory; }
    // The same driver's other GPU, in this set (a peer), or null.
    const LevelZeroDevice *peer(const Device &other) const;
    bool reaches(const LevelZeroDevice &other) const;
    // Loads a module for this GPU alone, and makes its kernel `name`.
    Status load_here(const void *image, size_t size, void **module);
    Status kernel_here(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes);
    // Turns a driver error into the runtime's; a lost device is lost for good.
    Status driver_error(ze_result_t r, const char *what, Status usual);
    uint64_t copy_async(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg);

    static constexpr uint32_t kMaxStreams = 4096;
    gpu::HighWater stream_slots_;
    // Whether a kernel launched on a context's list may not have ended
    // (launched since its last sync).
    bool streams_may_run() const;
    static constexpr uint32_t kJoins = 32;
    struct Stream {
        std::atomic<ze_command_list_handle_t> list{nullptr};
        ze_event_pool_handle_t pool = nullptr;
        ze_event_handle_t done = nullptr;  // signalled by the barrier a sync appends
        std::atomic<const KernelInfo *> last{nullptr};  // for messages about a failure
        std::atomic<bool> busy{false};  // slot taken (list may still be in the making)
        // Kernels launched, and of them those a sync has seen end.
        std::atomic<uint64_t> launched{0}, synced{0};
        // Kernels launched on a routed program's own lists since the last
        // sync: the barrier after each signals one of these, and the sync
        // waits for them all (lists run apart from each other).
        std::mutex joins_mu;
        ze_event_pool_handle_t joins_pool = nullptr;
        ze_event_handle_t joins[kJoins] = {};
        uint32_t joins_used = 0;
    };
    // Waits for (and resets) the joined lists' events; under joins_mu.
    ze_result_t wait_joins(Stream &st);
    // Whether context id's kernels are done, without waiting (a helper's
    // call for the fault handler): its barrier appended the first time
    // (*closed), then ZE_RESULT_NOT_READY until they are, and the barrier's
    // event reset once they are.
    ze_result_t poll_stream(StreamId id, bool *closed);
    // A synchronisation of context id that the driver answered with r.
    Status sync_failed(StreamId id, ze_result_t r);
    ze_result_t join(Stream &st, ze_command_list_handle_t program_list);
    // A kernel's arguments live in the kernel object until the launch is
    // appended: launches of one kernel from several threads take turns.
    std::mutex &launch_lock(const void *kernel) { return launch_locks_[reinterpret_cast<uintptr_t>(kernel) / 64 % 64]; }

    const Driver *d_ = nullptr;
    using Set = gpu::GpuSet<LevelZeroDevice>;
    std::shared_ptr<Set> set_;
    size_t index_ = 0;  // in set_
    ze_driver_handle_t driver_ = nullptr;
    ze_device_handle_t dev_ = nullptr;
    ze_context_handle_t ctx_ = nullptr;
    uint32_t compute_ordinal_ = 0;
    uint32_t copy_ordinal_ = 0;
    char gpu_name_[256] = {};
    uint64_t capacity_ = 0;
    gpu::Window window_;
    GranuleDriver granule_driver_;
    CopyEngine copies_;
    AsyncCopies async_;
    Stream streams_[kMaxStreams];
    std::mutex launch_locks_[64];
    // SPIR-V modules' images, which say what the driver does not: the
    // sizes of their kernels' parameters (spirv_params.h).  And the kernel
    // objects made of modules, one per name (kernels, as modules, live as
    // long as the process).
    std::mutex modules_mu_;
    std::unordered_map<void *, std::vector<uint8_t>> spirv_;
    std::map<std::pair<void *, std::string>, ze_kernel_handle_t> kernels_;
    gpu::DeviceLoss loss_{"levelzero"};
    // Last: its threads stop before anything they may call goes.
    gpu::HandlerCalls handler_calls_;
};

}  // namespace adsm::levelzero
