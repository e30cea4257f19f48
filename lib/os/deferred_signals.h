// Holds back the program's handlers of asynchronous signals while this
// thread is inside the runtime's critical sections (a context's lock, the C
// library's allocator on the runtime's behalf): a handler that touched
// shared memory or allocated would wait forever for a lock its own thread
// holds.  Signals that report a fault of this thread (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP) are never held back: the runtime relies on them.
//
// Holding back costs no system call.  The program's handlers for
// asynchronous signals run through a trampoline (the interposed sigaction
// installs it in their place, and handlers found at load are wrapped too).
// When a signal lands inside a critical section, the trampoline blocks it
// for the rest of the section and queues it again to its thread with the
// same siginfo; the end of the section unblocks it, and the kernel delivers
// it to the program's handler as it would have, real-time queueing
// included.  Handlers installed with raw system calls, past the C library,
// are not wrapped.  The collector's stop signal (os/stop_signal.h) is not an
// asynchronous signal here: never held back, never wrapped.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>

#include "os/stop_signal.h"

namespace adsm::os {

// Every signal but those that report a fault of the thread itself and the
// collector's stop signal, which must reach a thread wherever it is.
inline sigset_t async_signals() {
    sigset_t set;
    sigfillset(&set);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, kStopSignal}) sigdelset(&set, s);
    return set;
}

// Whether the program's handler for sig runs through the trampoline: an
// asynchronous signal a program may catch.
bool deferrable(int sig);

// sigaction as the program sees it for a deferrable signal: the program's
// own action is recorded and reported, the trampoline is what the kernel
// runs.  Returns false (and does nothing) for other signals; else true, with
// *result the value sigaction returns (errno set when -1).
bool deferring_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *result);

struct DeferralState {
    unsigned depth;  // critical sections entered and not yet left
    uint64_t held;   // signals (bit sig-1) the trampoline blocked until the end
};
extern __thread DeferralState tls_deferral __attribute__((tls_model("initial-exec")));
// Unblocks what the trampoline held back, which delivers it.
void release_held_signals();

class DeferredSignals {
public:
    DeferredSignals() {
        ++tls_deferral.depth;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~DeferredSignals() {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (--tls_deferral.depth == 0 && tls_deferral.held) release_held_signals();
    }
    DeferredSignals(const DeferredSignals &) = delete;
    DeferredSignals &operator=(const DeferredSignals &) = delete;
};

}  // namespace adsm::os
