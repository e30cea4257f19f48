// What the bdwgc entry points (interpose/bdwgc/*.cpp) share: the collector
// (started on first use, as bdwgc starts itself on the first allocation),
// the settings bdwgc's API reads and writes, and its warnings.
//
// Every entry point that reaches the collector holds an Inside for the
// call, as the adsm API does: the collector's own allocations go to the C
// library, never back into the runtime.
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

// Collections go through GC_finalize_on_demand: tell the collector again.
void apply_finalizer_policy();

}  // namespace adsm::bdwgc
