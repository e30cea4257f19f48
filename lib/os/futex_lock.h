// A mutex made of one atomic word and a private futex: lock and unlock are
// async-signal-safe, so the fault handler can use it.  (A thread that
// faults while holding the same lock would deadlock; the runtime never
// touches the application's view of shared memory while holding one.)
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace adsm::os {

class FutexLock {
public:
    void lock() {
        uint32_t c = 0;
        if (s_.compare_exchange_strong(c, 1, std::memory_order_acquire)) return;
        for (int spin = 0; spin < 100; ++spin) {
            c = 0;
            if (s_.load(std::memory_order_relaxed) == 0 &&
                s_.compare_exchange_weak(c, 1, std::memory_order_acquire))
                return;
            __builtin_ia32_pause();
        }
        // 2: locked with waiters.
        while (s_.exchange(2, std::memory_order_acquire) != 0)
            syscall(SYS_futex, reinterpret_cast<uint32_t *>(&s_), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
    }
    bool try_lock() {
        uint32_t c = 0;
        return s_.compare_exchange_strong(c, 1, std::memory_order_acquire);
    }
    void unlock() {
        if (s_.exchange(0, std::memory_order_release) == 2)
            syscall(SYS_futex, reinterpret_cast<uint32_t *>(&s_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }

private:
    std::atomic<uint32_t> s_{0};
};

class FutexGuard {
public:
    explicit FutexGuard(FutexLock &l) : l_(l) { l_.lock(); }
    ~FutexGuard() { l_.unlock(); }
    FutexGuard(const FutexGuard &) = delete;
    FutexGuard &operator=(const FutexGuard &) = delete;

private:
    FutexLock &l_;
};

}  // namespace adsm::os
