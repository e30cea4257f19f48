// The signal the collector stops threads with (gc/world.h), as the Boehm
// collector does on Linux.  It is never among the asynchronous signals the
// runtime blocks or defers (async_signals()): the collector must be able to
// stop a thread that sits in the fault handler or in the runtime's critical
// sections, and its handler touches no state of the runtime, so running it
// there is safe.  So a program's own handler for it (a program that never
// collects may have one) is not held back in those sections either.
#pragma once

#include <signal.h>

#include <atomic>

namespace adsm::os {

constexpr int kStopSignal = SIGPWR;

// Set once the collector has installed its handler: from then on the
// program may not change the stop signal's action (the interposed sigaction
// and signal refuse, with a warning), for a handler of its own there would
// leave the collector waiting for threads that never stop.
inline std::atomic<bool> stop_signal_taken{false};

// Set while a runtime thread waits for work (a device's kernel workers
// between kernels): its stack and registers then hold only what kernels
// that are over left there, so the collector does not scan them, where they
// would keep garbage alive.  Read by the stop signal's handler on the same
// thread.
inline thread_local bool idle_stack __attribute__((tls_model("initial-exec"))) = false;

class IdleStack {
public:
    IdleStack() {
        idle_stack = true;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~IdleStack() {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        idle_stack = false;
    }
    IdleStack(const IdleStack &) = delete;
    IdleStack &operator=(const IdleStack &) = delete;
};

}  // namespace adsm::os
