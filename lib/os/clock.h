#pragma once

#include <time.h>

#include <cstdint>

namespace adsm::os {

inline uint64_t now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps until the monotonic clock reaches deadline_ns; spins for the last
// stretch because short sleeps overshoot by tens of microseconds.
void sleep_until_ns(uint64_t deadline_ns);

}  // namespace adsm::os
