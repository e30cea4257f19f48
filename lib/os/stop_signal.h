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

}  // namespace adsm::os
