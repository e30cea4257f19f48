// The tickets of a GPU copy engine's asynchronous copies: issued in
// submission order, landed in the same order (a driver completes a queue's
// copies in order), waited for by number.  The CUDA engine lands them from
// the host functions it queues behind each copy, the Level Zero engine
// from a thread that waits for each copy's event.  Everything here is
// async-signal-safe: the fault handler submits and waits.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "os/futex.h"

namespace adsm::gpu {

class CopyTickets {
public:
    // How often a waiter asks the driver whether the engine failed: a failed
    // queue never lands the copies that would wake it.
    static constexpr uint64_t kPollNs = 50ull * 1000 * 1000;

    // The next ticket; the submitter holds its lock until issue().
    uint64_t next() const { return issued_.load(std::memory_order_relaxed) + 1; }
    void issue(uint64_t ticket) { issued_.store(ticket, std::memory_order_release); }
    uint64_t last() const { return issued_.load(std::memory_order_acquire); }
    uint64_t landed() const { return completed_.load(std::memory_order_acquire); }
    bool all_landed() const { return landed() >= last(); }

    // Every ticket up to `ticket` has landed.  (Never backwards: a late
    // landing of an earlier ticket after a failed engine landed them all.)
    void land(uint64_t ticket) {
        uint64_t now = completed_.load(std::memory_order_relaxed);
        while (now < ticket &&
               !completed_.compare_exchange_weak(now, ticket, std::memory_order_release, std::memory_order_relaxed)) {
        }
        wake_.fetch_add(1, std::memory_order_release);
        os::futex_wake(&wake_);
    }

    // Returns true once `ticket` has landed, false as soon as failed() (asked
    // every kPollNs) says the engine will not land it.
    template <class Failed>
    bool wait(uint64_t ticket, Failed failed) {
        for (;;) {
            uint32_t seen = wake_.load(std::memory_order_acquire);
            if (landed() >= ticket) return true;
            if (os::futex_wait(&wake_, seen, kPollNs) == -ETIMEDOUT && failed()) return false;
        }
    }

private:
    std::atomic<uint64_t> issued_{0};
    std::atomic<uint64_t> completed_{0};
    std::atomic<uint32_t> wake_{0};  // futex word, bumped on every landing
};

}  // namespace adsm::gpu
