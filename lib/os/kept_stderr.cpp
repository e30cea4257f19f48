#include "os/kept_stderr.h"

#include <fcntl.h>

#include <atomic>

#include "os/held_fds.h"
#include "os/raw_syscall.h"

namespace adsm::os {

namespace {
std::atomic<int> g_kept{-1};
}  // namespace

void keep_stderr() {
    if (g_kept.load(std::memory_order_acquire) >= 0) return;
    const long copy = raw_syscall(SYS_fcntl, 2, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) return;
    const int held = hold_fd(static_cast<int>(copy));
    int none = -1;
    if (!g_kept.compare_exchange_strong(none, held, std::memory_order_acq_rel)) close_held(held);
}

int kept_stderr() { return g_kept.load(std::memory_order_acquire); }

}  // namespace adsm::os
