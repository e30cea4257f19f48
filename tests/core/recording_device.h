// An in-process device for tests of the memory manager and the protocols
// alone: device memory is a private mapping apart from the host mirror (a
// missing transfer shows as wrong data), every copy, fill, commit and launch
// is recorded, "kernels" are test functions run at launch on device memory,
// and copies and commits fail on demand (os/fault_injection.h).  Recording
// is lock-free: the fault handler copies through it.
#pragma once

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "backend/device.h"
#include "os/fault_injection.h"

namespace adsm::testing {

struct DeviceOp {
    enum Kind : uint8_t { to_device, to_host, fill, commit, decommit, launch, sync } kind;
    uintptr_t dev;
    size_t n;
};

class RecordingDevice final : public Device {
public:
    const char *name() const override { return "recording"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return used_.load(); }

    Status attach_window(uintptr_t base, uint64_t size, int, uint8_t *) override {
        void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return fail(adsmErrorInitialization, "no room for the recording device's memory");
        base_ = base;
        mem_ = static_cast<uint8_t *>(m);
        return adsmSuccess;
    }
    Status commit(uintptr_t dev, uint64_t bytes) override {
        if (os::injection::should_fail(os::injection::Site::device_commit))
            return fail(adsmErrorMemoryAllocation, "recording device: commit failed (injected)");
        used_ += bytes;
        note(DeviceOp::commit, dev, bytes);
        return adsmSuccess;
    }
    void decommit(uintptr_t dev, uint64_t bytes) override {
        used_ -= bytes;
        note(DeviceOp::decommit, dev, bytes);
    }
    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override {
        if (os::injection::should_fail(os::injection::Site::device_copy))
            return fail(adsmErrorDeviceLost, "recording device: copy to the device failed (injected)");
        memcpy(at(dev), src, n);
        note(DeviceOp::to_device, dev, n);
        return adsmSuccess;
    }
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override {
        if (os::injection::should_fail(os::injection::Site::device_copy))
            return fail(adsmErrorDeviceLost, "recording device: copy to the host failed (injected)");
        memcpy(dst, at(dev), n);
        note(DeviceOp::to_host, dev, n);
        return adsmSuccess;
    }
    Status fill(uintptr_t dev, int value, size_t n) override {
        if (os::injection::should_fail(os::injection::Site::device_copy))
            return fail(adsmErrorDeviceLost, "recording device: fill failed (injected)");
        memset(at(dev), value, n);
        note(DeviceOp::fill, dev, n);
        return adsmSuccess;
    }
    Status create_stream(StreamId *out) override {
        *out = next_stream_++;
        return adsmSuccess;
    }
    void destroy_stream(StreamId) override {}
    // The kernel runs at once, on device memory: its effects are what the
    // release left there.
    Status launch(StreamId, const LaunchDesc &) override {
        note(DeviceOp::launch, 0, 0);
        if (kernel) kernel(*this);
        return adsmSuccess;
    }
    Status synchronize(StreamId) override {
        note(DeviceOp::sync, 0, 0);
        return adsmSuccess;
    }

    // Device memory behind a window address.
    uint8_t *at(uintptr_t dev) { return mem_ + (dev - base_); }

    // What happened since the last clear().
    std::vector<DeviceOp> ops() const {
        size_t n = count_.load(std::memory_order_acquire);
        return std::vector<DeviceOp>(log_, log_ + (n < kLog ? n : kLog));
    }
    void clear() { count_.store(0, std::memory_order_release); }
    size_t bytes(DeviceOp::Kind k) const {
        size_t total = 0;
        for (const DeviceOp &op : ops())
            if (op.kind == k) total += op.n;
        return total;
    }

    // Asynchronous copies to the host, held (hold_to_host) until land()
    // performs them in order, as a copy engine's landing thread would: the
    // bytes reach the host, then `done` runs.  Submitters stop inside the
    // submission while stop_submits is set, and waiters inside wait_copies
    // while stop_waits is set, so a test can lay threads out around them.
    uint64_t copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) override {
        if (!hold_to_host.load()) return Device::copy_to_host_async(dst, dev, n, done, arg);
        uint64_t t;
        {
            std::lock_guard<std::mutex> g(held_mu_);
            held_.push_back(Held{dst, dev, n, done, arg});
            t = issued_.fetch_add(1) + 1;
        }
        submitting++;
        while (stop_submits.load()) sched_yield();
        submitting--;
        return t;
    }
    Status wait_copies(uint64_t ticket) override {
        waiting++;
        while (stop_waits.load()) sched_yield();
        waiting--;
        while (landed_.load() < std::min(ticket, issued_.load())) sched_yield();
        return take_copy_failure();
    }
    // Lands the held copies submitted so far.
    void land() {
        for (;;) {
            Held h;
            {
                std::lock_guard<std::mutex> g(held_mu_);
                if (held_.empty()) return;
                h = held_.front();
                held_.erase(held_.begin());
            }
            memcpy(h.dst, at(h.dev), h.n);
            note(DeviceOp::to_host, h.dev, h.n);
            if (h.done) h.done(h.arg, adsmSuccess);
            landed_.fetch_add(1);
        }
    }
    std::atomic<bool> hold_to_host{false}, stop_submits{false}, stop_waits{false};
    std::atomic<int> submitting{0}, waiting{0};

    std::function<void(RecordingDevice &)> kernel;  // what the next launches do
    uint64_t capacity_ = 1ull << 30;

private:
    struct Held {
        void *dst;
        uintptr_t dev;
        size_t n;
        CopyDone done;
        void *arg;
    };
    std::mutex held_mu_;
    std::vector<Held> held_;
    std::atomic<uint64_t> issued_{0}, landed_{0};

    void note(DeviceOp::Kind k, uintptr_t dev, size_t n) {
        size_t i = count_.fetch_add(1, std::memory_order_acq_rel);
        if (i < kLog) log_[i] = DeviceOp{k, dev, n};
    }

    static constexpr size_t kLog = 1 << 16;
    uintptr_t base_ = 0;
    uint8_t *mem_ = nullptr;
    std::atomic<uint64_t> used_{0};
    StreamId next_stream_ = 0;
    std::atomic<size_t> count_{0};
    DeviceOp log_[kLog];
};

}  // namespace adsm::testing
