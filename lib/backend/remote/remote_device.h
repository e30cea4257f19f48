// ADSM_DEVICE=remote: an accelerator served by adsm-device-server on
// another machine (ADSM_REMOTE=HOST:PORT, ADSM_REMOTE_KEY=FILE).  Device
// memory is the server's, at this process's window addresses; data moves by
// RMA into the ranges the server exposed, in order with launches and syncs
// on one connection (remote/link.h); kernels run on the server by name.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend/device.h"
#include "backend/remote/link.h"

namespace adsm {

class RemoteDevice final : public Device {
public:
    explicit RemoteDevice(const Config &config);
    ~RemoteDevice() override;

    const char *name() const override { return "remote"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return used_.load(std::memory_order_relaxed); }
    bool commits_zeroed() const override { return zeroed_commits_; }

    Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) override;
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;

    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override;
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override;
    Status fill(uintptr_t dev, int value, size_t n) override;
    uint64_t copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) override;
    uint64_t copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) override;
    Status wait_copies(uint64_t ticket) override;

    void detach_after_fork() override { link_.forget(); }
    bool serves_fork_child() const override { return false; }

    // GPU code where the server runs it (a cuda or levelzero server): the
    // image goes to the server, which loads it in the client's context.
    Status load_module(const void *image, size_t size, void **module) override;
    Status module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) override;
    Status declare_params(void *fn, const std::vector<uint32_t> &sizes) override;
    Status check_kernel(const KernelInfo &k) const override;
    Status create_stream(StreamId *out) override;
    void destroy_stream(StreamId id) override;
    Status launch(StreamId id, const LaunchDesc &launch) override;
    Status synchronize(StreamId id) override;

private:
    // A copy done through the link, waited for (async-signal-safe).
    Status copy(bool to_device, uintptr_t dev, void *host, size_t n);

    Config config_;
    remote::Link link_;
    uint64_t capacity_ = 0;
    std::atomic<uint64_t> used_{0};
    std::mutex streams_mu_;
    std::vector<bool> streams_;  // in use

    // Launches the server accepted, by kernel and shape (a GPU's driver may
    // refuse a kernel one block size and take it another): one of those
    // again is posted, not waited for, and a refusal then comes with the
    // stream's next sync.  An empty call and sync: one round trip, not two.
    using LaunchShape = std::array<uint32_t, 5>;  // kernel id, block x, y, z, shared memory
    std::mutex accepted_mu_;
    std::set<LaunchShape> accepted_;
    struct Refusal {
        static constexpr int kWriting = -1;
        std::atomic<int> status{adsmSuccess};
        char why[200] = {};
    };
    Refusal refusals_[remote::kMaxStreams];  // a posted launch's, by stream
    static void launch_refused(void *refusal, Status s, const char *why);

    bool gpu_code_ = false;  // the server said kGpuCode
    bool zeroed_commits_ = false;  // the server said kZeroedCommits
    // The kernels of the modules this process loaded on the server: a
    // KernelInfo's device_fn points at one (kept for the process's life).
    struct ModuleKernel {
        uint32_t module;
        std::string name;
    };
    mutable std::mutex modules_mu_;
    uint32_t modules_ = 0;
    std::deque<ModuleKernel> module_kernels_;
    bool is_module_kernel(const void *fn) const;
    // Tells the server a kernel's parameter sizes (module 0: one it has by
    // name), checked there against its driver's.
    Status declare(uint32_t module, const std::string &name, const std::vector<uint32_t> &sizes);
    // Once per kernel the program registered by name, before its first
    // launch on a server that runs GPU code.
    Status declare_once(const KernelInfo &k);
    std::vector<bool> declared_;  // by kernel id, under modules_mu_
};

}  // namespace adsm
