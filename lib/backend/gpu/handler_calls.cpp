#include "backend/gpu/handler_calls.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <system_error>

#include "os/clock.h"
#include "os/deferred_signals.h"
#include "os/futex.h"
#include "os/stop_signal.h"

namespace adsm::gpu {

Status HandlerCalls::start(unsigned threads) {
    if (!threads_.empty()) return adsmSuccess;
    stopping_.store(false);
    pid_ = getpid();
    try {
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this, i] { serve(i == 0); });
    } catch (const std::system_error &) {
        stop();
        return fail(adsmErrorInitialization, "cannot start the threads that make driver calls for the fault handler");
    }
    return adsmSuccess;
}

void HandlerCalls::stop() {
    if (threads_.empty()) return;
    if (getpid() != pid_) {  // a fork child: the threads are the parent's
        for (std::thread &t : threads_) t.detach();
        threads_.clear();
        return;
    }
    stopping_.store(true, std::memory_order_release);
    work_.fetch_add(1, std::memory_order_release);
    os::futex_wake(&work_);
    for (std::thread &t : threads_) t.join();
    threads_.clear();
}

bool HandlerCalls::serving() const { return !threads_.empty() && getpid() == pid_; }

void HandlerCalls::post(void (*fn)(void *), void *arg) {
    // A slot of its own: as many handlers wait at once as threads fault.
    Slot *slot = nullptr;
    for (unsigned i = 0;; i = (i + 1) % kSlots) {
        uint32_t free = kFree;
        if (slots_[i].state.compare_exchange_strong(free, kClaimed, std::memory_order_acquire)) {
            slot = &slots_[i];
            break;
        }
        if (i == kSlots - 1) sched_yield();
    }
    slot->fn = fn;
    slot->arg = arg;
    slot->poster_sleeps.store(false, std::memory_order_relaxed);
    slot->state.store(kPosted, std::memory_order_release);
    // seq_cst against the helper's sleeping_helpers_ increment and futex
    // check of work_: either it sees the bump or this sees it asleep.
    work_.fetch_add(1, std::memory_order_seq_cst);
    // A spinning helper will see the bump (it stops spinning before it
    // looks at work_ a last time): no wake, no interprocessor interrupt.
    if (spinning_helpers_.load(std::memory_order_seq_cst) == 0 &&
        sleeping_helpers_.load(std::memory_order_seq_cst) != 0)
        os::futex_wake(&work_, 1);
    // Spinning, then yielding (a long call, such as pinning a granule, lets
    // the helper have this CPU on a small machine), then sleeping.
    const uint64_t posted_at = os::now_ns();
    while (slot->state.load(std::memory_order_acquire) != kDone) {
        const uint64_t waited = os::now_ns() - posted_at;
        if (waited >= kPosterYieldNs) break;
        if (waited < kPosterSpinNs) os::cpu_relax();
        else sched_yield();
    }
    for (uint32_t s; (s = slot->state.load(std::memory_order_seq_cst)) != kDone;) {
        slot->poster_sleeps.store(true, std::memory_order_seq_cst);
        if (slot->state.load(std::memory_order_seq_cst) == kDone) break;
        os::futex_wait(&slot->state, s);
    }
    slot->state.store(kFree, std::memory_order_release);
}

bool HandlerCalls::run_posted() {
    bool ran = false;
    for (Slot &s : slots_) {
        uint32_t posted = kPosted;
        if (!s.state.compare_exchange_strong(posted, kRunning, std::memory_order_acquire)) continue;
        s.fn(s.arg);
        s.state.store(kDone, std::memory_order_seq_cst);
        if (s.poster_sleeps.load(std::memory_order_seq_cst)) os::futex_wake(&s.state);
        ran = true;
    }
    return ran;
}

void HandlerCalls::serve(bool spins) {
    // The program's asynchronous signals go to its own threads: a handler
    // of its that touched shared memory here would wait for this thread.
    sigset_t async = os::async_signals();
    pthread_sigmask(SIG_BLOCK, &async, nullptr);
    for (;;) {
        uint32_t seen = work_.load(std::memory_order_acquire);
        if (stopping_.load(std::memory_order_acquire)) return;
        if (run_posted()) continue;
        if (spins) {
            spinning_helpers_.fetch_add(1, std::memory_order_seq_cst);
            const uint64_t spin_until = os::now_ns() + kHelperSpinNs;
            while (work_.load(std::memory_order_acquire) == seen && os::now_ns() < spin_until) os::cpu_relax();
            spinning_helpers_.fetch_sub(1, std::memory_order_seq_cst);
            if (work_.load(std::memory_order_seq_cst) != seen) continue;
        }
        os::IdleStack idle;  // (nothing of a kernel's or the program's on this stack)
        sleeping_helpers_.fetch_add(1, std::memory_order_seq_cst);
        os::futex_wait(&work_, seen);
        sleeping_helpers_.fetch_sub(1, std::memory_order_seq_cst);
    }
}

}  // namespace adsm::gpu
