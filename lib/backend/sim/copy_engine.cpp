#include "backend/sim/copy_engine.h"


#include <sys/prctl.h>

#include <cstring>

#include "os/clock.h"
#include "os/deferred_signals.h"
#include "os/fault_injection.h"
#include "os/futex.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "support/trace.h"

namespace adsm {
namespace {

// A copy toward the device reads the host copy while the CPU may write it
// again (a block reopened while its background flush is on its way), as a
// GPU's copy engine does: the block is then Dirty again and goes again at
// the release, which waits for this copy first.  Kept out of line, so that
// a race detector can be told this read races by design (tests/tsan.supp)
// and still see every other access of the engine.
__attribute__((noinline)) void read_host_toward_device(void *dst, const void *src, size_t n) {
    copy_into_device_memory(dst, src, n);
}

// Below this, the pages a copy lacks cost less in faults than a system call.
constexpr size_t kPopulateFrom = 64 * 1024;

}  // namespace

void make_device_pages(void *dst, size_t n) {
    if (n < kPopulateFrom) return;
    const uintptr_t lo = os::page_up(reinterpret_cast<uintptr_t>(dst));
    const uintptr_t hi = os::page_down(reinterpret_cast<uintptr_t>(dst) + n);
    // (Best effort: a kernel without MADV_POPULATE_WRITE makes them by faults.)
    if (hi > lo) (void)os::populate(reinterpret_cast<void *>(lo), hi - lo, /*for_write=*/true);
}

void copy_into_device_memory(void *dst, const void *src, size_t n) {
    make_device_pages(dst, n);
    os::real_memcpy(dst, src, n);
}

CopyEngine::CopyEngine(LinkModel &link) : link_(link) {}

CopyEngine::~CopyEngine() { stop(); }

void CopyEngine::stop() {
    if (!running_.load()) return;
    stop_.store(true);
    ring_.ring();
    if (thread_.joinable()) thread_.join();
}

void CopyEngine::start() {
    bool expected = false;
    if (!running_.compare_exchange_strong(expected, true)) return;
    thread_ = std::thread([this] { run(); });
}

uint64_t CopyEngine::submit(void *dst, const void *src, size_t n, Direction d, uintptr_t dev, CopyDone done, void *arg) {
    if (!running_.load(std::memory_order_acquire)) return 0;
    return ring_.push([&](Request &r) { r = Request{dst, src, n, d, dev, done, arg}; });
}

void CopyEngine::run() {
    // An asynchronous signal handled here, while a landing holds a region's
    // lock, could fault on shared memory and wait for that lock forever:
    // the program's signals go to its own threads.
    sigset_t async = os::async_signals();
    pthread_sigmask(SIG_BLOCK, &async, nullptr);
    // The link model sleeps between copies; the default 50 us timer slack
    // would stretch every transfer.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    for (uint64_t pos = 0;; ++pos) {
        Request *q = ring_.take(pos, stop_);
        if (!q) return;
        const Request r = *q;
        bool timed = link_.enabled() || trace::enabled();
        uint64_t t0 = timed ? os::now_ns() : 0;
        Status status = adsmSuccess;
        if (os::injection::should_fail(os::injection::Site::device_copy)) {
            status = adsmErrorDeviceLost;
            int none = adsmSuccess;
            failure_.compare_exchange_strong(none, status, std::memory_order_acq_rel);
        } else {
            if (r.dir == Direction::to_device) read_host_toward_device(r.dst, r.src, r.n);
            else os::real_memcpy(r.dst, r.src, r.n);
            if (link_.enabled()) os::sleep_until_ns(link_.reserve(r.dir, r.n, t0));
            if (trace::enabled()) trace::copy(r.dir == Direction::to_device, r.n, r.dev, t0, true);
        }
        if (r.done) r.done(r.arg, status);
        ring_.complete(pos);
    }
}

}  // namespace adsm
