// Stopping the world: every thread of the process but the collector's own
// stops where it is, publishes its registers and the bounds of its stack,
// and waits until the collection ends.  Threads are found in
// /proc/self/task (no registration: a program's threads need not have been
// created through us), signalled with the stop signal (os::kStopSignal),
// and the list is read again until no thread appears that was not stopped.
// Nothing between stop() and start() allocates or takes a lock another
// thread may hold.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "gc/range_buffer.h"
#include "support/status.h"

namespace adsm::gc {

class World {
public:
    // Installs the stop signal's handler (once per process).
    static Status init();

    // Stops every thread but the caller and those in exempt[0..n) (the
    // collector's marker threads).  Waits for each to acknowledge; a thread
    // that blocks the stop signal is waited for, with a warning naming it.
    Status stop(const pid_t *exempt, size_t n);

    // While stopped: the ranges to scan conservatively for each stopped
    // thread and for the caller: saved registers, the stack from the
    // interrupted stack pointer (less the red zone) to the top of the
    // mapping that holds it, and its static thread-local storage.
    void thread_ranges(RangeBuffer *out) const;

    // Lets the stopped threads go on.
    void start();

    // Threads stopped by the last stop().
    size_t stopped() const { return nthreads_; }

private:
    size_t nthreads_ = 0;
};

}  // namespace adsm::gc
