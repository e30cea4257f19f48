// A mutex made of one atomic word and a private futex: lock and unlock are
// async-signal-safe, so the fault handler can use it.  A thread never takes
// one it holds: the runtime never touches the program's view of shared
// memory while holding one, and holds back asynchronous signals meanwhile
// (os/signal_scope.h), so no handler can interrupt it there.  Debug builds
// remember the holder, for held_by_me().
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "os/invariant.h"
#include "os/raw_syscall.h"

namespace adsm::os {

class FutexLock {
public:
    void lock() {
        acquire();
#if ADSM_CHECK_INVARIANTS
        owner_.store(self(), std::memory_order_relaxed);
#endif
    }
    bool try_lock() {
        uint32_t c = 0;
        if (!s_.compare_exchange_strong(c, 1, std::memory_order_acquire)) return false;
#if ADSM_CHECK_INVARIANTS
        owner_.store(self(), std::memory_order_relaxed);
#endif
        return true;
    }
    void unlock() {
#if ADSM_CHECK_INVARIANTS
        ADSM_INVARIANT(held_by_me(), "a lock released by a thread that does not hold it");
        owner_.store(nullptr, std::memory_order_relaxed);
#endif
        if (s_.exchange(0, std::memory_order_release) == 2)
            raw_syscall(SYS_futex, reinterpret_cast<uint32_t *>(&s_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
#if ADSM_CHECK_INVARIANTS
    bool held_by_me() const { return s_.load(std::memory_order_relaxed) != 0 && owner_.load(std::memory_order_relaxed) == self(); }
#endif

private:
    // Any per-thread address names the thread; no system call needed.
    static const void *self() {
        __attribute__((tls_model("initial-exec"))) static thread_local char tag;
        return &tag;
    }
    void acquire() {
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
            raw_syscall(SYS_futex, reinterpret_cast<uint32_t *>(&s_), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
    }

    std::atomic<uint32_t> s_{0};
#if ADSM_CHECK_INVARIANTS
    std::atomic<const void *> owner_{nullptr};
#endif
};

// "The caller holds l", checked where invariants are.
#if ADSM_CHECK_INVARIANTS
#define ADSM_HOLDS(l) ADSM_INVARIANT((l).held_by_me(), "the caller must hold " #l)
#else
#define ADSM_HOLDS(l) static_cast<void>(0)
#endif

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
