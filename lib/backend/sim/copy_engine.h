// The simulated DMA engine: a thread that performs queued copies between
// host memory and device memory in order, at the link model's pace, while
// the CPU goes on.  Submitting is lock-free and async-signal-safe, so the
// fault handler can start an eviction; a full queue makes the submitter
// copy by itself instead, which is always correct.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "backend/sim/link_model.h"
#include "support/status.h"

namespace adsm {

using CopyDone = void (*)(void *arg, Status status);  // as in backend/device.h

class CopyEngine {
public:
    explicit CopyEngine(LinkModel &link);
    ~CopyEngine();

    void start();  // not from a signal handler

    // Queues dst <- src; `dev` is the device address involved, for the trace.
    // Returns the ticket, or 0 if the queue is full or the engine is not
    // running (then nothing was queued).
    uint64_t submit(void *dst, const void *src, size_t n, Direction d, uintptr_t dev, CopyDone done, void *arg);

    // Waits until every copy with a ticket up to t has completed.
    void wait(uint64_t t);
    uint64_t last_ticket() const { return submitted_.load(std::memory_order_acquire); }
    bool running() const { return running_.load(std::memory_order_acquire); }
    // The first failure of a queued copy not yet taken (adsmSuccess: none).
    Status take_failure() { return static_cast<Status>(failure_.exchange(adsmSuccess, std::memory_order_acq_rel)); }

private:
    struct Request {
        std::atomic<uint64_t> turn;
        void *dst;
        const void *src;
        size_t n;
        Direction dir;
        uintptr_t dev;
        CopyDone done;
        void *arg;
    };
    static constexpr uint64_t kSlots = 1024;

    void run();

    LinkModel &link_;
    Request ring_[kSlots];
    std::atomic<uint64_t> enqueue_{0};
    std::atomic<uint64_t> submitted_{0};          // highest ticket handed out
    alignas(64) std::atomic<uint64_t> completed_{0};
    std::atomic<uint32_t> completed_epoch_{0};    // futex
    std::atomic<uint32_t> waiters_{0};
    alignas(64) std::atomic<uint32_t> doorbell_{0};  // futex
    std::atomic<uint32_t> sleeping_{0};
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    std::atomic<int> failure_{adsmSuccess};
    std::thread thread_;
};

}  // namespace adsm
