// Fault attribution (ADSM_PROFILE): faults and transferred bytes charged to
// the program's code location that caused them, printed at exit as a top-N
// table.  Wherever the program enters the runtime (a fault, a call, a sync,
// an interposed I/O or memory call), a Cause names the program's call stack
// for the time the runtime works on its behalf; the statistics counters
// charge what they count to the thread's current cause.  Work with no cause
// (the runtime's own threads) is charged to a row of its own.
//
// The site table is fixed-size and lock-free, so the fault handler charges
// like any other code.  One limit, when profiling only: libunwind finds
// unwind tables through dl_iterate_phdr, which takes the dynamic loader's
// lock, so a shared-memory fault taken by a thread that holds that lock
// (inside dlopen) would not return.
#pragma once

#include <atomic>
#include <cstdint>

namespace adsm::profile {

// What a site is charged with.
enum class Charge : unsigned { read_faults, write_faults, h2d_bytes, d2h_bytes, io_bytes, entries, count_ };

namespace detail {
extern std::atomic<bool> g_on;
}
inline bool on() { return detail::g_on.load(std::memory_order_relaxed); }

// Starts attributing; the report at exit lists the `top` busiest sites.
void start(unsigned top);

// Adds v to the calling thread's current cause.  Async-signal-safe.
void charge(Charge what, uint64_t v);

// Writes the table now (the exit handler calls it).
void report();
// In a fork child: the parent reports.
void disable_in_child();

// Makes the program's code that called into the runtime (or, with a signal
// context, the code that faulted) the thread's cause for the scope.  Nested
// causes keep the outermost one: the program's own call is what matters.
class Cause {
public:
    explicit Cause(void *ucontext = nullptr);
    ~Cause();
    Cause(const Cause &) = delete;
    Cause &operator=(const Cause &) = delete;

private:
    bool set_ = false;
};

}  // namespace adsm::profile
