// Template parts of channel.h.
#pragma once

#include <sched.h>

#include <cerrno>

#include "os/clock.h"
#include "os/futex.h"

namespace adsm::exec {

// How long a waiter spins before sleeping: a kernel launch round trip is a
// few microseconds, a futex sleep and wake costs about as much again.
constexpr uint64_t kSpinNs = 30000;
// How often a sleeping waiter checks that the device still lives.
constexpr uint64_t kLivenessNs = 50ull * 1000 * 1000;

template <class Fill, class Alive>
uint64_t channel_enqueue(Channel *c, Fill &&fill, Alive &&alive) {
    uint64_t pos = c->enqueue_pos.load(std::memory_order_relaxed);
    uint64_t waited_since = 0;
    for (;;) {
        Command &cmd = c->ring[pos % kRingSlots];
        uint64_t turn = cmd.turn.load(std::memory_order_acquire);
        int64_t diff = static_cast<int64_t>(turn) - static_cast<int64_t>(pos);
        if (diff == 0) {
            if (c->enqueue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                fill(cmd);
                cmd.turn.store(pos + 1, std::memory_order_release);
                return pos;
            }
        } else if (diff < 0) {
            // Full: the device is behind.  Wait for it, but not for a dead one.
            uint64_t now = os::now_ns();
            if (!waited_since) waited_since = now;
            if (now - waited_since > kLivenessNs) {
                if (!alive()) return UINT64_MAX;
                waited_since = now;
            }
            channel_ring_doorbell(c);
            sched_yield();
            pos = c->enqueue_pos.load(std::memory_order_relaxed);
        } else {
            pos = c->enqueue_pos.load(std::memory_order_relaxed);
        }
    }
}

template <class Alive>
bool channel_wait(Channel *c, uint64_t pos, Alive &&alive) {
    if (c->completed.load(std::memory_order_acquire) > pos) return true;
    uint64_t start = os::now_ns();
    while (os::now_ns() - start < kSpinNs) {
        if (c->completed.load(std::memory_order_acquire) > pos) return true;
        os::cpu_relax();
    }
    c->host_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool ok = true;
    for (;;) {
        uint32_t epoch = c->completion_epoch.load(std::memory_order_seq_cst);
        if (c->completed.load(std::memory_order_acquire) > pos) break;
        if (os::futex_wait(&c->completion_epoch, epoch, kLivenessNs) == -ETIMEDOUT) {
            if (c->completed.load(std::memory_order_acquire) > pos) break;
            if (!alive()) {
                ok = false;
                break;
            }
        }
    }
    c->host_waiters.fetch_sub(1, std::memory_order_relaxed);
    return ok;
}

}  // namespace adsm::exec
