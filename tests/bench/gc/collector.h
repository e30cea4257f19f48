// One face for the two collectors the benchmarks compare: each program is
// compiled twice, with -DUSE_ADSM (adsm's collector, libadsm) or -DUSE_BDWGC
// (Boehm-Demers-Weiser, libgc), so both run the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#if defined(USE_ADSM) == defined(USE_BDWGC)
#error "define exactly one of USE_ADSM and USE_BDWGC"
#endif

#ifdef USE_ADSM
#include <adsm.h>
#else
// Threads must be known to bdwgc: gc.h then turns pthread_create into
// GC_pthread_create, which registers each new thread.
#define GC_THREADS
#include <gc.h>
#endif

namespace bench {

struct GcStats {
    uint64_t collections = 0;
    uint64_t max_pause_ns = 0;    // the world stopped, longest
    uint64_t total_pause_ns = 0;  // ...and all together
    uint64_t heap_bytes = 0;
};

inline uint64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

// The value after option argv[k] (k moves past it), or exit 2 naming `program`.
inline int arg_int(const char *program, int argc, char **argv, int &k) {
    if (k + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", program, argv[k]);
        exit(2);
    }
    return atoi(argv[++k]);
}

[[noreturn]] inline void die(const char *what) {
    fprintf(stderr, "%s\n", what);
    exit(1);
}

#ifdef USE_ADSM

constexpr const char *kCollector = "adsm";

inline void gc_init() {}

inline void *gc_alloc(size_t n) {
    void *p = adsmGcAlloc(n);
    if (!p) die(adsmGetLastErrorDetail());
    return p;
}

inline void *gc_alloc_atomic(size_t n) {
    void *p = adsmGcAllocAtomic(n);
    if (!p) die(adsmGetLastErrorDetail());
    return p;
}

inline void gc_collect() {
    if (adsmGcCollect() != adsmSuccess) die(adsmGetLastErrorDetail());
}

inline GcStats gc_stats() {
    adsmGcStats s;
    if (adsmGcGetStats(&s) != adsmSuccess) die(adsmGetLastErrorDetail());
    return GcStats{s.collections, s.max_pause_ns, s.total_pause_ns, s.heap_bytes};
}

#else

constexpr const char *kCollector = "bdwgc";

// bdwgc keeps no pause times: its collection events are timed instead.  The
// events come with the allocation lock held, one collection at a time.
// The world is stopped from PRE_STOP_WORLD to POST_START_WORLD (marking;
// bdwgc sweeps lazily, as objects are allocated, with the world running).
namespace detail {
inline uint64_t stop_start = 0, collection_start = 0;
inline uint64_t max_pause = 0, total_pause = 0, stops = 0;
inline uint64_t max_collection = 0, total_collection = 0;

inline void GC_CALLBACK on_event(GC_EventType e) {
    uint64_t t = now_ns();
    switch (e) {
        case GC_EVENT_START: collection_start = t; break;
        case GC_EVENT_PRE_STOP_WORLD: stop_start = t; break;
        case GC_EVENT_POST_START_WORLD: {
            uint64_t d = t - stop_start;
            total_pause += d;
            max_pause = d > max_pause ? d : max_pause;
            ++stops;
            break;
        }
        case GC_EVENT_END: {
            uint64_t d = t - collection_start;
            total_collection += d;
            max_collection = d > max_collection ? d : max_collection;
            break;
        }
        default: break;
    }
}
inline GC_word first_gc_no = 0;
}  // namespace detail

inline void gc_init() {
    GC_INIT();
    GC_set_on_collection_event(detail::on_event);
    detail::first_gc_no = GC_get_gc_no();
}

inline void *gc_alloc(size_t n) {
    void *p = GC_MALLOC(n);
    if (!p) die("GC_MALLOC: out of memory");
    return p;
}

inline void *gc_alloc_atomic(size_t n) {
    void *p = GC_MALLOC_ATOMIC(n);
    if (!p) die("GC_MALLOC_ATOMIC: out of memory");
    return p;
}

inline void gc_collect() { GC_gcollect(); }

inline GcStats gc_stats() {
    GcStats s;
    s.collections = GC_get_gc_no() - detail::first_gc_no;
    // A library built without threads reports no world stops: its whole
    // collection is then the pause.
    bool stopped = detail::stops > 0;
    s.max_pause_ns = stopped ? detail::max_pause : detail::max_collection;
    s.total_pause_ns = stopped ? detail::total_pause : detail::total_collection;
    s.heap_bytes = GC_get_heap_size();
    return s;
}

#endif

// The fields every program prints for the collector (after its own).
inline void print_stats(const GcStats &s) {
    printf(" collections=%llu max_pause_ms=%.3f total_pause_ms=%.3f heap_mb=%.1f",
           static_cast<unsigned long long>(s.collections), double(s.max_pause_ns) / 1e6,
           double(s.total_pause_ns) / 1e6, double(s.heap_bytes) / (1 << 20));
#ifdef USE_BDWGC
    // The mutator waits for the whole collection, not only the stopped world.
    printf(" max_collection_ms=%.3f total_collection_ms=%.3f", double(detail::max_collection) / 1e6,
           double(detail::total_collection) / 1e6);
#endif
}

}  // namespace bench
