#include "os/clock.h"

#include <cerrno>

#include "os/futex.h"

namespace adsm::os {

void sleep_until_ns(uint64_t deadline_ns) {
    constexpr uint64_t kSpinNs = 60000;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline_ns) return;
        if (deadline_ns - now <= kSpinNs) {
            while (now_ns() < deadline_ns) cpu_relax();
            return;
        }
        uint64_t target = deadline_ns - kSpinNs;
        struct timespec ts;
        ts.tv_sec = static_cast<time_t>(target / 1000000000ull);
        ts.tv_nsec = static_cast<long>(target % 1000000000ull);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
}

}  // namespace adsm::os
