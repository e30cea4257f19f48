#include "os/held_fds.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <climits>

#include "os/raw_syscall.h"

namespace adsm::os {

namespace {

// Few enough to scan: a memfd or two per device, the write trackers, a
// socket and a process per simulated device.  One past the last is not
// recorded (it moves up all the same).
constexpr int kSlots = 64;
std::atomic<int> g_slot[kSlots];  // fd + 1; 0 is a free slot
std::atomic<int> g_lowest{INT_MAX};

// Below the soft limit, where select()'s sets still reach, and above what
// programs number themselves (a shell's redirections, its own 10 and 255).
// (System calls only: the collector holds a descriptor with the world
// stopped.)
int first_high() {
    struct rlimit r;
    if (raw_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &r) != 0) return 3;
    const rlim_t soft = std::min<rlim_t>(r.rlim_cur, 1024);
    return soft >= 128 ? static_cast<int>(soft) - 64 : static_cast<int>(soft / 2);
}

void record(int fd) {
    for (auto &s : g_slot) {
        int empty = 0;
        if (s.compare_exchange_strong(empty, fd + 1)) break;
    }
    int low = g_lowest.load(std::memory_order_relaxed);
    while (fd < low && !g_lowest.compare_exchange_weak(low, fd)) {
    }
}

}  // namespace

int hold_fd(int fd) {
    if (fd < 0) return fd;
    static std::atomic<int> g_high{0};
    int high = g_high.load(std::memory_order_relaxed);
    if (high == 0) g_high.store(high = first_high(), std::memory_order_relaxed);
    if (fd < high) {
        long moved = raw_syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, high);
        if (moved >= 0) {
            raw_syscall(SYS_close, fd);
            fd = static_cast<int>(moved);
        }
    }
    record(fd);
    return fd;
}

void close_held(int fd) {
    if (fd < 0) return;
    for (auto &s : g_slot) {
        int mine = fd + 1;
        if (s.compare_exchange_strong(mine, 0)) break;
    }
    raw_syscall(SYS_close, fd);
}

bool is_held(int fd) {
    if (fd < g_lowest.load(std::memory_order_relaxed)) return false;
    for (auto &s : g_slot)
        if (s.load(std::memory_order_relaxed) == fd + 1) return true;
    return false;
}

int held_in(unsigned first, unsigned last, int *out, int max) {
    int n = 0;
    for (auto &s : g_slot) {
        int v = s.load(std::memory_order_relaxed) - 1;
        if (v >= 0 && static_cast<unsigned>(v) >= first && static_cast<unsigned>(v) <= last && n < max) out[n++] = v;
    }
    std::sort(out, out + n);
    return n;
}

}  // namespace adsm::os
