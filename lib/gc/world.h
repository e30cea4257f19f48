// Stopping the world: every thread of the process but the collector's own
// stops where it is, publishes its registers and the bounds of its stack,
// and waits until the collection ends.  Threads are found in
// /proc/self/task (no registration: a program's threads need not have been
// created through us), signalled with the stop signal (os::kStopSignal),
// and the list is read again until no thread appears that was not stopped.
// Nothing between stop() and start() allocates or takes a lock another
// thread may hold.
//
// TLS: every module's static block, and the blocks of dlopen()ed modules
// that the loader allocates with malloc at a thread's first use (found
// through the thread's dynamic thread vector, glibc's x86-64 layout).
//
// What is not scanned: a stack a thread switched to by hand (makecontext,
// a coroutine library) other than the one it runs on.
// A thread stopped on its alternate signal stack has that stack scanned and
// its ordinary one as a whole (the main thread's "[stack]", another
// thread's stack mapping, which holds its thread pointer).
//
// A thread stopped inside a system call that a handler never lets restart
// (nanosleep, poll, epoll_wait, select, a futex wait with a timeout: see
// signal(7)) sees EINTR, as it would under any caught signal.
//
// A thread that blocks the stop signal (a program that blocks every signal
// in a thread) stops only when it unblocks it: stop() waits for it, warning
// once per collection after 2 s.  Only one World may exist (the handler's
// state is the process's); stop() and start() are never called concurrently
// (the collector's lock).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "gc/range_buffer.h"
#include "support/status.h"

namespace adsm::gc {

class World {
public:
    World();
    ~World();
    World(const World &) = delete;
    World &operator=(const World &) = delete;

    // Installs the stop signal's handler (once per process).  Fails when the
    // program already has a handler of its own for the stop signal.
    static Status init();

    // Stops every thread but the caller and those in exempt[0..n) (the
    // collector's marker threads).  Waits for each to acknowledge; a thread
    // that blocks the stop signal is waited for, with a warning naming it.
    // On failure (no /proc, more threads than the table holds, the handler
    // replaced past the interposed sigaction) nothing stays stopped.
    Status stop(const pid_t *exempt, size_t n);

    // While stopped: the ranges to scan conservatively for each stopped
    // thread and for the caller: saved registers, the stack from the
    // interrupted stack pointer (less the red zone) to the top of the
    // mapping that holds it, and its static thread-local storage.  The
    // caller's registers are those it had when it called; its stack is
    // scanned from here up, so it must mark before the frame that called
    // this returns.  Fails only when `out` cannot grow (roots would be lost).
    Status thread_ranges(RangeBuffer *out) const;

    // While stopped: cuts each of `ranges`, listed before the stop, to its
    // parts still mapped readable (a module dlclose()d since the listing is
    // gone: its data holds no roots, and reading it would fault).  Fails
    // when the mappings could not be read, or the pieces kept: which roots
    // are gone is then unknown, and no mark may be trusted.
    Status keep_mapped(RangeBuffer *ranges) const;

    // Lets the stopped threads go on.  Returns at once: each leaves the
    // handler when it next gets a CPU (with more threads than CPUs, up to a
    // scheduler's time slice later), and the next stop() waits for the
    // last of them first, so that it never meets one of this collection.
    void start();

    // Threads stopped by the last stop().
    size_t stopped() const { return nthreads_; }

private:
    size_t nthreads_ = 0;
};

}  // namespace adsm::gc
