// A reader-writer lock on one futex word, async-signal-safe like FutexLock:
// the sim device's launches and synchronisations share it (a racing access
// synchronises from the fault handler) while starting or burying its device
// process takes it alone.  Readers never wait for a writer that only waits,
// so a shared hold nested in a handler cannot deadlock against one.
#pragma once

#include <atomic>
#include <cstdint>

#include "os/futex.h"

namespace adsm::os {

class FutexRwLock {
public:
    void lock_shared() {
        for (;;) {
            uint32_t s = state_.load(std::memory_order_relaxed);
            if (!(s & kWriter)) {
                if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire)) return;
                continue;
            }
            futex_wait(&state_, s);
        }
    }
    void unlock_shared() {
        uint32_t left = state_.fetch_sub(1, std::memory_order_release) - 1;
        if (left == 0 && writers_waiting_.load(std::memory_order_seq_cst)) futex_wake(&state_);
    }
    void lock() {
        for (;;) {
            uint32_t s = 0;
            if (state_.compare_exchange_strong(s, kWriter, std::memory_order_acquire)) return;
            writers_waiting_.fetch_add(1, std::memory_order_seq_cst);
            s = state_.load(std::memory_order_seq_cst);
            if (s != 0) futex_wait(&state_, s);
            writers_waiting_.fetch_sub(1, std::memory_order_relaxed);
        }
    }
    void unlock() {
        state_.store(0, std::memory_order_release);
        futex_wake(&state_);
    }

private:
    static constexpr uint32_t kWriter = 1u << 31;
    std::atomic<uint32_t> state_{0};
    std::atomic<uint32_t> writers_waiting_{0};
};

}  // namespace adsm::os
