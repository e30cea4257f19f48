#include "interpose/bdwgc/state.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "api/gpu_bridge.h"
#include "api/runtime.h"
#include "interpose/bdwgc/threads.h"
#include "os/real_libc.h"
#include "support/config.h"
#include "support/status.h"

// Data symbols of bdwgc's API (gc_mark.h): the bounds of every collected
// object, read by GC_MARK_AND_PUSH in the program's own code.  A program
// that refers to them directly may hold its own copies (copy relocations):
// the runtime writes them through their symbols, which then name those.
extern "C" {
__attribute__((visibility("default"))) void *GC_least_plausible_heap_addr = nullptr;
__attribute__((visibility("default"))) void *GC_greatest_plausible_heap_addr = nullptr;
}

namespace adsm::bdwgc {

Settings g_settings;

namespace {

std::atomic<gc::Collector *> g_collector{nullptr};
std::once_flag g_once;
std::atomic<bool> g_finalizers_waiting{false};

// After a collection that made finalizers due (the collector's notice).
void finalizers_due() {
    if (!g_settings.finalize_on_demand.load()) g_finalizers_waiting.store(true, std::memory_order_release);
    else if (GC_finalizer_notifier_proc fn = g_settings.notifier.load()) fn();
}

void on_collection(gc::Collector::Event e, void *) {
    using E = gc::Collector::Event;
    if (e == E::start)
        if (GC_start_callback_proc fn = g_settings.on_start.load()) fn();
    GC_on_collection_event_proc fn = g_settings.on_event.load();
    if (!fn) return;
    switch (e) {
    case E::start: return fn(GC_EVENT_START);
    case E::stop_world: return fn(GC_EVENT_PRE_STOP_WORLD);
    case E::world_stopped: return fn(GC_EVENT_POST_STOP_WORLD);
    case E::mark_start: return fn(GC_EVENT_MARK_START);
    case E::mark_end: return fn(GC_EVENT_MARK_END);
    case E::sweep_start: return fn(GC_EVENT_RECLAIM_START);
    case E::sweep_end: return fn(GC_EVENT_RECLAIM_END);
    case E::restart_world: return fn(GC_EVENT_PRE_START_WORLD);
    case E::world_restarted: return fn(GC_EVENT_POST_START_WORLD);
    case E::end: return fn(GC_EVENT_END);
    // (bdwgc has no event for marking while the world runs, as its
    // incremental mode does: the collection's own events follow.)
    case E::marking_concurrently: return;
    }
}

// bdwgc's own environment variables that say how big the heap may be and
// whether to collect at all; a value that is no size is reported and ignored.
void read_bdwgc_environment(gc::Collector &c) {
    auto size_of = [](const char *name, uint64_t *out) {
        const char *v = adsm::os::env(name);
        if (!v || !*v) return false;
        if (parse_size(v, out)) return true;
        fprintf(stderr, "adsm: %s=%s is not a size (such as 64M); ignored\n", name, v);
        return false;
    };
    uint64_t n;
    if (size_of("GC_MAXIMUM_HEAP_SIZE", &n)) c.set_max_heap(n);
    if (size_of("GC_INITIAL_HEAP_SIZE", &n) && !c.expand(n))
        fprintf(stderr, "adsm: GC_INITIAL_HEAP_SIZE is more than the heap's limit; ignored\n");
    if (const char *v = adsm::os::env("GC_DONT_GC"); v && *v) c.disable();
}

void start() {
    Inside in;  // the runtime's start allocates from the C library
    Runtime *rt = nullptr;
    gc::Collector *c = nullptr;
    if (runtime(&rt) != adsmSuccess || adsm::collector(*rt, &c) != adsmSuccess) {
        // Whatever the program has written so far reaches its files first.
        fprintf(stderr, "adsm: the collector of this program (bdwgc's API) cannot start: %s\n", last_detail());
        fflush(nullptr);
        _exit(1);
    }
    GC_least_plausible_heap_addr = reinterpret_cast<void *>(rt->space.base());
    GC_greatest_plausible_heap_addr = reinterpret_cast<void *>(rt->space.base() + rt->space.size() - 1);
    c->set_event_hook(on_collection, nullptr);
    // Its GPU calls routed, the program launches its own kernels in the
    // program context: its collected objects must be that context's too.
    if (gpu_bridge::any_routed()) c->allocate_in(rt->manager->program_context());
    read_bdwgc_environment(*c);
    g_collector.store(c, std::memory_order_release);
    apply_finalizer_policy();
    note_thread_registered();  // bdwgc registers the thread that initialises it
}

}  // namespace

gc::Collector &collector() {
    if (gc::Collector *c = g_collector.load(std::memory_order_acquire)) return *c;
    std::call_once(g_once, start);
    return *g_collector.load(std::memory_order_acquire);
}

bool started() { return g_collector.load(std::memory_order_acquire) != nullptr; }

bool detached() { return forked_child(); }

void apply_finalizer_policy() {
    if (gc::Collector *c = g_collector.load(std::memory_order_acquire)) c->set_finalize_on_demand(true, finalizers_due);
}

void run_waiting_finalizers() {
    if (!g_finalizers_waiting.load(std::memory_order_relaxed) || !g_finalizers_waiting.exchange(false)) return;
    if (!g_settings.finalize_on_demand.load()) collector().invoke_finalizers();
}

void finalizers_may_wait() { g_finalizers_waiting.store(true, std::memory_order_release); }

void *no_memory(size_t) { return nullptr; }

void print_warning(char *msg, GC_word arg) {
    char line[600];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(line, sizeof line, msg, arg);
#pragma GCC diagnostic pop
    fprintf(stderr, "GC Warning: %s", line);
}

void *out_of_memory(size_t n) { return g_settings.oom_fn.load()(n); }

void warn(const char *fmt, GC_word arg) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", fmt);
    g_settings.warn_proc.load()(msg, arg);
}

}  // namespace adsm::bdwgc
