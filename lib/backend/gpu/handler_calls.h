// Driver calls a fault handler needs, made on helper threads.
//
// A CPU access to shared memory whose current copy is on the GPU faults,
// and the fault handler brings the data in: a copy through the driver.  No
// GPU driver is async-signal-safe (they take locks and allocate; a fault
// inside the program's malloc or inside the driver itself would deadlock
// on them).  So a back-end's entry points that the fault path reaches run
// their bodies through call(): called in the runtime's fault handler, the
// call is posted to a helper thread and the handler sleeps on a futex until
// it is done; called anywhere else, it runs on the spot (see
// ADSM_OFF_FAULT_HANDLER).  Posting and waiting are atomics and futex calls
// only, with no heap.  What may wait long (for copies to land, for kernels)
// is waited for by the faulting thread itself, never by a helper: a
// landing may need a lock that a faulting thread holds while it waits for
// a helper.
//
// Each handoff spins (and the poster then yields) before it sleeps: a
// fault takes several driver calls in a row, and on a virtual machine a
// futex wake that has to rouse a sleeping thread costs tens of
// microseconds (on an H200's machine, helpers that always slept made
// delta's faults 58 us dearer each).  One helper spins a while after its
// last call, the other sleeps at once; a poster wakes a helper only when
// one sleeps and none spins, and a helper wakes a poster only when it
// sleeps.
//
// A fork child has none of the parent's helpers: there every call runs on
// the spot (a GPU back-end refuses to work in a child anyway), as it does
// with ADSM_GPU_FAULT_CALLS=direct, where none is started.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "os/fault_signals.h"
#include "support/status.h"

// The first line of such an entry point: in the fault handler, the same
// call again on a helper thread (where needed() is false).
#define ADSM_OFF_FAULT_HANDLER(calls, ...) \
    if ((calls).needed()) return (calls).call([&] { return __VA_ARGS__; })

namespace adsm::gpu {

class HandlerCalls {
public:
    HandlerCalls() = default;
    ~HandlerCalls() { stop(); }
    HandlerCalls(const HandlerCalls &) = delete;
    HandlerCalls &operator=(const HandlerCalls &) = delete;

    // Starts `threads` helpers (never from a fault handler).
    Status start(unsigned threads);
    void stop();

    // Whether a call made here must go to a helper: this thread is in the
    // fault handler, and the helpers run in this process.
    bool needed() const { return os::in_fault_handler() && serving(); }

    // Runs f() on a helper thread and returns what it returned.  The
    // detail of a failure it records (support/status.h) comes back with it:
    // the faulting thread reports it.
    template <class F>
    auto call(F &&f) -> decltype(f()) {
        using R = decltype(f());
        struct Call {
            std::remove_reference_t<F> *f;
            std::conditional_t<std::is_void_v<R>, bool, R> result;
            char detail[kDetail];
        };
        // Not value-initialised: the helper writes the result and the detail,
        // and zeroing 384 bytes would be on every fault's path.
        Call call;
        call.f = &f;
        call.detail[0] = '\0';
        post([](void *p) {
            auto *c = static_cast<Call *>(p);
            clear_detail();
            if constexpr (std::is_void_v<R>) (*c->f)();
            else c->result = (*c->f)();
            copy_detail(c->detail, sizeof c->detail);
        }, &call);
        if (call.detail[0]) set_detail(call.detail);
        if constexpr (!std::is_void_v<R>) return call.result;
    }

private:
    enum : uint32_t { kFree, kClaimed, kPosted, kRunning, kDone };
    static constexpr unsigned kDetail = 384;  // of a failure's detail, on the fault handler's stack
    struct Slot {
        std::atomic<uint32_t> state{kFree};  // futex word of the waiting handler
        std::atomic<bool> poster_sleeps{false};
        void (*fn)(void *) = nullptr;
        void *arg = nullptr;
    };
    static constexpr unsigned kSlots = 64;
    // How long a poster waits for its call, and the spinning helper for the
    // next call, before sleeping: longer than a fault's gap between two
    // driver calls, short beside a fault.
    static constexpr uint64_t kPosterSpinNs = 50000;
    static constexpr uint64_t kPosterYieldNs = 2000000;
    static constexpr uint64_t kHelperSpinNs = 300000;

    bool serving() const;
    void post(void (*fn)(void *), void *arg);
    void serve(bool spins);
    bool run_posted();

    Slot slots_[kSlots];
    std::atomic<uint32_t> work_{0};  // futex word of idle helpers, bumped at each post
    std::atomic<uint32_t> sleeping_helpers_{0};
    std::atomic<uint32_t> spinning_helpers_{0};
    std::atomic<bool> stopping_{false};
    std::vector<std::thread> threads_;
    pid_t pid_ = 0;  // the process the helpers run in
};

}  // namespace adsm::gpu
