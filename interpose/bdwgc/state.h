// What the bdwgc entry points (interpose/bdwgc/*.cpp) share: the collector
// (started on first use, as bdwgc starts itself on the first allocation),
// the settings bdwgc's API reads and writes, and its warnings.
//
// Every entry point that reaches the collector holds an Inside for the
// call, as the adsm API does: the collector's own allocations go to the C
// library, never back into the runtime.  The program's finalizers run
// outside it (run_waiting_finalizers), so that what they do (I/O on
// collected buffers, say) goes through the runtime as the program's own
// calls do.
#pragma once

#include <atomic>
#include <cstddef>

#define GC_THREADS
#define GC_NO_THREAD_REDIRECTS
#include "adsm/gc.h"
#include "adsm/gc_mark.h"
#include "adsm/gc_typed.h"
#include "adsm/gc_inline.h"
#include "gc/collector.h"
#include "support/inside.h"

namespace adsm::bdwgc {

// The collector, with the runtime started and GC_init's work done.  When
// the runtime cannot start (a bad ADSM_* variable, say), a program written
// for bdwgc cannot go on: the reason is printed and the process exits, as
// bdwgc aborts when it cannot initialise.
gc::Collector &collector();
// Whether collector() has been called (GC_is_init_called).
bool started();

// In a process forked from one that used the runtime, the collector is
// gone (adsm.h): allocation there falls back to the C library's malloc,
// never collected, so that a child can still run until it execs.
bool detached();

// bdwgc's defaults: no memory is NULL; a warning goes to stderr.
void *no_memory(size_t bytes);
void print_warning(char *msg, GC_word arg);

struct Settings {
    std::atomic<bool> extra_byte{true};  // GC_set_all_interior_pointers
    std::atomic<GC_oom_func> oom_fn{no_memory};
    std::atomic<GC_warn_proc> warn_proc{print_warning};
    std::atomic<bool> finalize_on_demand{false};
    std::atomic<GC_finalizer_notifier_proc> notifier{nullptr};
    std::atomic<bool> java_finalization{true};
    std::atomic<GC_on_collection_event_proc> on_event{nullptr};
    std::atomic<GC_start_callback_proc> on_start{nullptr};
};
extern Settings g_settings;

// Bytes to ask the collector for when the program asks for n: bdwgc's one
// extra byte, so that a pointer just past the end still keeps the object.
inline size_t with_extra_byte(size_t n) {
    return g_settings.extra_byte.load(std::memory_order_relaxed) && n + 1 > n ? n + 1 : n;
}

// The program's out-of-memory handler's answer for a failed allocation.
void *out_of_memory(size_t n);

// Through the warn proc: fmt has one conversion, for arg (bdwgc's rule).
void warn(const char *fmt, GC_word arg);

// The collector keeps due finalizers for the bdwgc layer to run: after the
// call that made them due, outside its Inside (below), or on demand
// (GC_invoke_finalizers) when the program asked for that.  (In a program
// that also uses adsm's own API, finalizers registered there wait for the
// next call of bdwgc's too.)
void apply_finalizer_policy();
// Runs finalizers a collection made due, unless the program runs them on
// demand.  Call with no Inside held.
void run_waiting_finalizers();
// Finalizers are due that the program has not been told of (it switched
// finalization on demand off meanwhile).
void finalizers_may_wait();

}  // namespace adsm::bdwgc
