// The levelzero device's asynchronous copies, which overlap the program's
// work as the CUDA engine's do (the rolling and delta protocols send blocks
// while the CPU goes on).  They have a command list of their own on the
// copy engine and pinned staging memory (zeMemAllocHost) in chunks, one per
// ticket in flight: a copy to the device is staged when it is submitted, a
// copy to the host is drained from its staging when it lands, and a copy
// larger than a chunk takes several tickets in a row.  Level Zero has no
// host callback behind a copy, so a landing thread waits for each ticket's
// event in order, finishes its piece, runs the copy's CopyDone after its
// last piece and lands the ticket (gpu/copy_tickets.h).
//
// Submitting takes no heap memory and no lock a landing needs: a fault
// handler submits too.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/device.h"
#include "backend/gpu/copy_tickets.h"
#include "backend/gpu/window.h"
#include "backend/levelzero/driver.h"
#include "os/futex_lock.h"

namespace adsm::levelzero {

class AsyncCopies {
public:
    // Ends the landing thread: a device that failed to start, or that ends,
    // frees what the thread reads.
    ~AsyncCopies() { (void)stop_landing(); }
    // A copy that meets a lost device loses it through `loss` too.
    Status init(const Driver *d, ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal,
                const gpu::Window *window, gpu::DeviceLoss *loss);
    // Lands what is queued and gives the driver's objects back (after init,
    // even a failed one); kept where the landing thread is stuck in the
    // driver, which may still use them.  Unusable after.
    void close();

    // The copy's ticket (its last piece's).  Failures reach `done` and
    // take_failure().
    uint64_t to_device(uintptr_t dst, const void *src, size_t n, CopyDone done, void *arg);
    uint64_t to_host(void *dst, uintptr_t src, size_t n, CopyDone done, void *arg);
    // Returns once every copy up to `ticket` has landed.
    void wait(uint64_t ticket) { tickets_.wait(ticket, [] { return false; }); }
    uint64_t last_ticket() const { return tickets_.last(); }
    bool all_landed() const { return tickets_.all_landed(); }
    // The first failure since the last call, cleared.
    Status take_failure();

private:
    static constexpr size_t kChunk = 2u << 20;
    static constexpr uint32_t kSlots = 16;  // pieces in flight, each with its chunk and event
    struct Pending {
        CopyDone done = nullptr;  // the copy's last piece only
        void *arg = nullptr;
        void *host = nullptr;     // a piece of a copy to the host: where its bytes go at landing
        size_t n = 0;
        bool last = false;
        bool failed = false;      // not queued whole
        bool no_event = false;    // its event will never be signalled (no barrier, no host signal)
    };
    uint64_t submit(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg);
    static void *landing_main(void *self);
    // Ends the landing thread once the copies queued have landed; false if
    // it is stuck in the driver (then left behind).
    bool stop_landing();
    void land_next(uint64_t ticket);
    bool failed_piece_ = false;  // an earlier piece of the copy landing now failed (landing thread)

    const Driver *d_ = nullptr;
    ze_context_handle_t ctx_ = nullptr;
    const gpu::Window *window_ = nullptr;
    gpu::DeviceLoss *loss_ = nullptr;
    ze_command_list_handle_t list_ = nullptr;
    ze_event_pool_handle_t pool_ = nullptr;
    ze_event_handle_t events_[kSlots] = {};
    Pending slots_[kSlots];
    unsigned char *staging_ = nullptr;   // kSlots chunks
    os::FutexLock submit_mu_;            // ticket order is queue order
    gpu::CopyTickets tickets_;
    std::atomic<uint32_t> work_{0};      // futex word: bumped at every submission (and at the end)
    std::atomic<bool> ending_{false};
    pthread_t landing_{};
    bool landing_started_ = false;
    std::atomic<int> failure_{ZE_RESULT_SUCCESS};
};

}  // namespace adsm::levelzero
