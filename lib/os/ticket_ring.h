// A bounded queue of work items in submission order, for one consumer
// thread: a copy engine's copies, a remote connection's operations.
// Submitting is lock-free and async-signal-safe (the fault handler queues
// copies); each item gets a ticket (its position + 1), and waiting for a
// ticket waits until every item up to it is completed.  A slot is reused
// once its item is released, which may come after the consumer moved on
// (a completion run later, on another thread).
#pragma once

#include <atomic>
#include <cstdint>

#include "os/clock.h"
#include "os/futex.h"

namespace adsm::os {

template <class T, uint64_t N>
class TicketRing {
public:
    TicketRing() {
        for (uint64_t i = 0; i < N; ++i) slots_[i].turn.store(i, std::memory_order_relaxed);
    }

    // Reserves a slot, lets fill(T&) write it and publishes it; the ticket,
    // or 0 when every slot is taken.
    template <class Fill>
    uint64_t push(Fill &&fill) {
        uint64_t pos = enqueue_.load(std::memory_order_relaxed);
        for (;;) {
            Slot &s = slots_[pos % N];
            int64_t diff = static_cast<int64_t>(s.turn.load(std::memory_order_acquire)) - static_cast<int64_t>(pos);
            if (diff < 0) return 0;  // full
            if (diff > 0 || !enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                pos = enqueue_.load(std::memory_order_relaxed);
                continue;
            }
            fill(s.item);
            s.turn.store(pos + 1, std::memory_order_release);
            uint64_t t = pos + 1, cur = submitted_.load(std::memory_order_relaxed);
            while (cur < t && !submitted_.compare_exchange_weak(cur, t, std::memory_order_release)) {
            }
            std::atomic_thread_fence(std::memory_order_seq_cst);
            if (sleeping_.load(std::memory_order_seq_cst)) {
                doorbell_.fetch_add(1, std::memory_order_seq_cst);
                futex_wake(&doorbell_, 1);
            }
            return t;
        }
    }

    // The highest ticket handed out.
    uint64_t last_ticket() const { return submitted_.load(std::memory_order_acquire); }

    // The consumer: the item at `pos` once published, waiting for it; null
    // when `stop` was set while none was there.
    T *take(uint64_t pos, const std::atomic<bool> &stop) {
        Slot &s = slots_[pos % N];
        for (;;) {
            if (s.turn.load(std::memory_order_acquire) == pos + 1) return &s.item;
            uint32_t bell = doorbell_.load(std::memory_order_seq_cst);
            sleeping_.store(1, std::memory_order_seq_cst);
            if (s.turn.load(std::memory_order_seq_cst) != pos + 1) {
                if (stop.load()) {
                    sleeping_.store(0, std::memory_order_relaxed);
                    return nullptr;
                }
                futex_wait(&doorbell_, bell, 200ull * 1000 * 1000);
            }
            sleeping_.store(0, std::memory_order_relaxed);
        }
    }
    // Wakes a consumer waiting in take (to see `stop`).
    void ring() {
        doorbell_.fetch_add(1, std::memory_order_seq_cst);
        futex_wake(&doorbell_);
    }
    // The item at `pos` is done: its slot may be reused, and tickets up to
    // pos + 1 are complete.  In order of positions.
    void complete(uint64_t pos) {
        slots_[pos % N].turn.store(pos + N, std::memory_order_release);
        completed_.store(pos + 1, std::memory_order_release);
        epoch_.fetch_add(1, std::memory_order_seq_cst);
        if (waiters_.load(std::memory_order_seq_cst)) futex_wake(&epoch_);
    }
    uint64_t completed() const { return completed_.load(std::memory_order_acquire); }

    // Waits until every item up to ticket t is complete (a short spin
    // first: most waits are for a copy just queued).  Async-signal-safe.
    void wait(uint64_t t) {
        if (completed_.load(std::memory_order_acquire) >= t) return;
        uint64_t start = now_ns();
        while (now_ns() - start < 20000) {
            if (completed_.load(std::memory_order_acquire) >= t) return;
            cpu_relax();
        }
        waiters_.fetch_add(1, std::memory_order_seq_cst);
        for (;;) {
            uint32_t e = epoch_.load(std::memory_order_seq_cst);
            if (completed_.load(std::memory_order_acquire) >= t) break;
            futex_wait(&epoch_, e, 100ull * 1000 * 1000);
        }
        waiters_.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    struct Slot {
        std::atomic<uint64_t> turn;
        T item;
    };
    Slot slots_[N];
    std::atomic<uint64_t> enqueue_{0};
    std::atomic<uint64_t> submitted_{0};
    alignas(64) std::atomic<uint64_t> completed_{0};
    std::atomic<uint32_t> epoch_{0};  // futex: bumped per completion
    std::atomic<uint32_t> waiters_{0};
    alignas(64) std::atomic<uint32_t> doorbell_{0};  // futex: bumped to wake the consumer
    std::atomic<uint32_t> sleeping_{0};
};

}  // namespace adsm::os
