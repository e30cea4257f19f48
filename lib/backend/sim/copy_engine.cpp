#include "backend/sim/copy_engine.h"


#include <sys/prctl.h>

#include <cstring>

#include "os/clock.h"
#include "os/deferred_signals.h"
#include "os/fault_injection.h"
#include "os/futex.h"
#include "os/real_libc.h"
#include "support/trace.h"

namespace adsm {

CopyEngine::CopyEngine(LinkModel &link) : link_(link) {
    for (uint64_t i = 0; i < kSlots; ++i) ring_[i].turn.store(i, std::memory_order_relaxed);
}

CopyEngine::~CopyEngine() {
    if (!running_.load()) return;
    stop_.store(true);
    doorbell_.fetch_add(1);
    os::futex_wake(&doorbell_);
    if (thread_.joinable()) thread_.join();
}

void CopyEngine::start() {
    bool expected = false;
    if (!running_.compare_exchange_strong(expected, true)) return;
    thread_ = std::thread([this] { run(); });
}

uint64_t CopyEngine::submit(void *dst, const void *src, size_t n, Direction d, uintptr_t dev, CopyDone done, void *arg) {
    if (!running_.load(std::memory_order_acquire)) return 0;
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
        Request &r = ring_[pos % kSlots];
        uint64_t turn = r.turn.load(std::memory_order_acquire);
        int64_t diff = static_cast<int64_t>(turn) - static_cast<int64_t>(pos);
        if (diff == 0) {
            if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                r.dst = dst;
                r.src = src;
                r.n = n;
                r.dir = d;
                r.dev = dev;
                r.done = done;
                r.arg = arg;
                r.turn.store(pos + 1, std::memory_order_release);
                // Tickets are positions + 1; publish the highest one handed out.
                uint64_t t = pos + 1, cur = submitted_.load(std::memory_order_relaxed);
                while (cur < t && !submitted_.compare_exchange_weak(cur, t, std::memory_order_release)) {
                }
                std::atomic_thread_fence(std::memory_order_seq_cst);
                if (sleeping_.load(std::memory_order_seq_cst)) {
                    doorbell_.fetch_add(1, std::memory_order_seq_cst);
                    os::futex_wake(&doorbell_, 1);
                }
                return t;
            }
        } else if (diff < 0) {
            return 0;  // full
        } else {
            pos = enqueue_.load(std::memory_order_relaxed);
        }
    }
}

void CopyEngine::wait(uint64_t t) {
    if (completed_.load(std::memory_order_acquire) >= t) return;
    uint64_t start = os::now_ns();
    while (os::now_ns() - start < 20000) {
        if (completed_.load(std::memory_order_acquire) >= t) return;
        os::cpu_relax();
    }
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
        uint32_t e = completed_epoch_.load(std::memory_order_seq_cst);
        if (completed_.load(std::memory_order_acquire) >= t) break;
        os::futex_wait(&completed_epoch_, e, 100ull * 1000 * 1000);
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
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
    uint64_t pos = 0;
    for (;;) {
        Request &r = ring_[pos % kSlots];
        if (r.turn.load(std::memory_order_acquire) != pos + 1) {
            uint32_t bell = doorbell_.load(std::memory_order_seq_cst);
            sleeping_.store(1, std::memory_order_seq_cst);
            if (r.turn.load(std::memory_order_seq_cst) != pos + 1) {
                if (stop_.load()) return;
                os::futex_wait(&doorbell_, bell, 200ull * 1000 * 1000);
            }
            sleeping_.store(0, std::memory_order_relaxed);
            continue;
        }
        void *dst = r.dst;
        const void *src = r.src;
        size_t n = r.n;
        Direction dir = r.dir;
        uintptr_t dev = r.dev;
        CopyDone done = r.done;
        void *arg = r.arg;
        r.turn.store(pos + kSlots, std::memory_order_release);

        bool timed = link_.enabled() || trace::enabled();
        uint64_t t0 = timed ? os::now_ns() : 0;
        Status status = adsmSuccess;
        if (os::injection::should_fail(os::injection::Site::device_copy)) {
            status = adsmErrorDeviceLost;
            int none = adsmSuccess;
            failure_.compare_exchange_strong(none, status, std::memory_order_acq_rel);
        } else {
            os::real_memcpy(dst, src, n);
            if (link_.enabled()) os::sleep_until_ns(link_.reserve(dir, n, t0));
            if (trace::enabled()) trace::copy(dir == Direction::to_device, n, dev, t0, true);
        }
        if (done) done(arg, status);

        ++pos;
        completed_.store(pos, std::memory_order_release);
        completed_epoch_.fetch_add(1, std::memory_order_seq_cst);
        if (waiters_.load(std::memory_order_seq_cst)) os::futex_wake(&completed_epoch_);
    }
}

}  // namespace adsm
