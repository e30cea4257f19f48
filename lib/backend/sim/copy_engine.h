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
#include "os/ticket_ring.h"
#include "support/status.h"

namespace adsm {

using CopyDone = void (*)(void *arg, Status status);  // as in backend/device.h

// Before n bytes at dst, the simulated device's memory, are written: a
// range the device gave back (a freed or evicted object's) has no pages,
// and writing it makes them a fault at a time (about 13 us each in a VM, as
// much as the link model gives 250 KiB).  A large range's pages are made in
// one call.  Async-signal-safe.
void make_device_pages(void *dst, size_t n);
// dst <- src where dst is the simulated device's memory (make_device_pages first).
void copy_into_device_memory(void *dst, const void *src, size_t n);

class CopyEngine {
public:
    explicit CopyEngine(LinkModel &link);
    ~CopyEngine();

    void start();  // not from a signal handler
    // Ends the engine's thread once what was queued has been copied.
    void stop();

    // Queues dst <- src; `dev` is the device address involved, for the trace.
    // Returns the ticket, or 0 if the queue is full or the engine is not
    // running (then nothing was queued).
    uint64_t submit(void *dst, const void *src, size_t n, Direction d, uintptr_t dev, CopyDone done, void *arg);

    // Waits until every copy with a ticket up to t has completed.
    void wait(uint64_t t) { ring_.wait(t); }
    uint64_t last_ticket() const { return ring_.last_ticket(); }
    bool running() const { return running_.load(std::memory_order_acquire); }
    // The first failure of a queued copy not yet taken (adsmSuccess: none).
    Status take_failure() { return static_cast<Status>(failure_.exchange(adsmSuccess, std::memory_order_acq_rel)); }

private:
    struct Request {
        void *dst;
        const void *src;
        size_t n;
        Direction dir;
        uintptr_t dev;
        CopyDone done;
        void *arg;
    };

    void run();

    LinkModel &link_;
    os::TicketRing<Request, 1024> ring_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    std::atomic<int> failure_{adsmSuccess};
    std::thread thread_;
};

}  // namespace adsm
