// The integrated accelerator: kernels run on threads of the host process,
// directly on the host mirror.  Device memory and host memory are the same
// pages, so coherence never moves a byte (the paper's low-cost case).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/device.h"
#include "backend/exec/channel_host.h"
#include "backend/exec/executor.h"

namespace adsm {

class CpuDevice final : public Device {
public:
    explicit CpuDevice(const Config &config);
    ~CpuDevice() override;

    const char *name() const override { return "cpu"; }
    bool integrated() const override { return true; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return used_.load(std::memory_order_relaxed); }

    Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) override;
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;

    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override;
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override;
    Status fill(uintptr_t dev, int value, size_t n) override;

    Status create_stream(StreamId *out) override;
    void destroy_stream(StreamId id) override;
    Status launch(StreamId id, const LaunchDesc &launch) override;
    Status synchronize(StreamId id) override;
    void trace_kernels() override;
    void take_kernel_spans(const KernelSpanSeen &seen) override;

private:
    Status check_range(uintptr_t dev, size_t n) const;
    void start_executor();

    Config config_;
    uint64_t capacity_;
    std::atomic<uint64_t> used_{0};
    uintptr_t base_ = 0;
    uint64_t size_ = 0;
    uint8_t *view_ = nullptr;   // always-writable view of the window
    exec::Channel *channel_ = nullptr;
    std::unique_ptr<exec::ChannelHost> host_;
    std::once_flag started_;
    std::unique_ptr<exec::KernelResolver> resolver_;
    std::unique_ptr<exec::Executor> executor_;
    std::thread thread_;
};

}  // namespace adsm
