// Futex waits and wakes that work across processes (no PRIVATE flag), so the
// host and the simulated device can sleep on words in shared memory.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "os/raw_syscall.h"

namespace adsm::os {

// Sleeps while *word == expected, at most timeout_ns (0: no limit).
// Returns 0 when woken or the value differed, -ETIMEDOUT, or -EINTR.
inline int futex_wait(std::atomic<uint32_t> *word, uint32_t expected, uint64_t timeout_ns = 0) {
    struct timespec ts, *tsp = nullptr;
    if (timeout_ns) {
        ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000ull);
        ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000ull);
        tsp = &ts;
    }
    long r = raw_syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, expected, tsp, nullptr, 0);
    if (r == 0 || errno == EAGAIN) return 0;
    return -errno;
}

inline void futex_wake(std::atomic<uint32_t> *word, int count = 0x7fffffff) {
    raw_syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, count, nullptr, nullptr, 0);
}

inline void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace adsm::os
