// bdwgc's object kinds.  A kind whose descriptor says "every word may be a
// pointer" or "none is" is just adsm's ordinary or atomic allocation; any
// other becomes a layout of adsm's collector (gc/layouts.h) whose scan
// function reads the kind's descriptor (descriptors.cpp), so that mark
// procedures run and words a bitmap leaves out are never read.
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "gc/layouts.h"
#include "interpose/bdwgc/descriptors.h"
#include "interpose/bdwgc/kinds.h"
#include "interpose/bdwgc/state.h"

namespace adsm::bdwgc {
namespace {

struct Kind {
    GC_word descr = 0;
    bool add_size = false;
    bool pointers = true;
    unsigned layout = 0;  // 0: ordinary (pointers) or atomic
    void **free_list = nullptr;  // the program's, kept as bdwgc keeps it: for the life of the kind
};

constexpr int kPredefined = 4;  // atomic, normal, uncollectable, atomic uncollectable
constexpr int kMaxKinds = 24;
Kind g_kinds[kMaxKinds];
std::atomic<int> g_nkinds{kPredefined};
std::mutex g_kinds_mu;

void scan_kind(gc::Marker &m, const uintptr_t *view, size_t bytes, uintptr_t, uintptr_t kind) {
    const Kind &k = g_kinds[kind];
    scan_described(m, view, bytes, k.add_size ? k.descr + bytes : k.descr);
}

[[noreturn]] void too_many(const char *what) {
    fprintf(stderr, "adsm: %s: no more object kinds with their own descriptors can be made\n", what);
    abort();
}

}  // namespace

void *allocate_kind(size_t n, int kind, bool uncollectable) {
    switch (kind) {
    case 0: return allocate(n, false, uncollectable);
    case 1: return allocate(n, true, uncollectable);
    case 2: return allocate(n, true, true);
    case 3: return allocate(n, false, true);
    default: break;
    }
    if (kind < 0 || kind >= g_nkinds.load(std::memory_order_acquire)) {
        warn("GC_generic_malloc: there is no object kind %ld\n", static_cast<GC_word>(kind));
        return out_of_memory(n);
    }
    const Kind &k = g_kinds[kind];
    if (!k.layout) return allocate(n, k.pointers, uncollectable);
    if (detached()) return calloc(1, n ? n : 1);
    void *p;
    {
        Inside in;
        gc::Collector &c = collector();
        p = c.alloc_laid_out(with_extra_byte(n), k.layout);
        if (p && uncollectable) c.pin(p);
    }
    run_waiting_finalizers();
    return p ? p : out_of_memory(n);
}

void *allocate_like(const gc::Collector::ObjectInfo &info, size_t n) {
    if (!info.layout) return allocate(n, info.pointers, info.pinned);
    for (int kind = kPredefined; kind < g_nkinds.load(std::memory_order_acquire); ++kind)
        if (g_kinds[kind].layout == info.layout) return allocate_kind(n, kind, info.pinned);
    warn("GC_realloc: %p was allocated by GC_malloc_explicitly_typed, which GC_realloc does not take\n",
         reinterpret_cast<GC_word>(info.base));
    return nullptr;
}

}  // namespace adsm::bdwgc

using namespace adsm::bdwgc;

extern "C" {

// The kind's own free lists are bdwgc's business: here they stay empty.
void **GC_new_free_list(void) {
    void **lists = static_cast<void **>(calloc(257, sizeof(void *)));
    if (!lists) too_many("GC_new_free_list");
    return lists;
}

void **GC_new_free_list_inner(void) { return GC_new_free_list(); }

unsigned GC_new_kind(void **free_list, GC_word descr, int add_size, int) {
    std::lock_guard<std::mutex> lock(g_kinds_mu);
    int n = g_nkinds.load();
    if (n >= kMaxKinds) too_many("GC_new_kind");
    Kind &k = g_kinds[n];
    k.free_list = free_list;
    k.descr = descr;
    k.add_size = add_size != 0;
    // New objects are always zeroed, whatever clear_new_objects says.
    if ((descr & GC_DS_TAGS) == GC_DS_LENGTH && descr == 0) {
        k.pointers = add_size != 0;  // the whole object, or none of it
    } else if ((descr & GC_DS_TAGS) == GC_DS_LENGTH && add_size) {
        k.pointers = true;  // more than the whole object
    } else {
        k.layout = adsm::gc::register_layout(scan_kind, static_cast<uintptr_t>(n));
        if (!k.layout) too_many("GC_new_kind");
    }
    g_nkinds.store(n + 1, std::memory_order_release);
    return static_cast<unsigned>(n);
}

unsigned GC_new_kind_inner(void **free_list, GC_word descr, int add_size, int clear) {
    return GC_new_kind(free_list, descr, add_size, clear);
}

void *GC_generic_malloc(size_t n, int kind) { return allocate_kind(n, kind, false); }
void *GC_generic_malloc_ignore_off_page(size_t n, int kind) { return allocate_kind(n, kind, false); }
void *GC_generic_malloc_uncollectable(size_t n, int kind) { return allocate_kind(n, kind, true); }
void *GC_generic_or_special_malloc(size_t n, int kind) { return allocate_kind(n, kind, false); }

// About a page's worth, linked through their first words.  Until the list
// is whole, each object is also held here, on the stack: the links of an
// atomic kind are words the collector does not read.
void GC_generic_malloc_many(size_t n, int kind, void **result) {
    constexpr size_t kMost = 256;
    void *held[kMost];
    size_t count = n <= 4096 / kMost ? kMost : n < 4096 ? 4096 / n : 1;
    size_t got = 0;
    while (got < count && (held[got] = allocate_kind(n, kind, false))) ++got;
    for (size_t i = 0; i < got; ++i) *static_cast<void **>(held[i]) = i + 1 < got ? held[i + 1] : nullptr;
    *result = got ? held[0] : nullptr;
    GC_reachable_here(held[got ? got - 1 : 0]);
}

void *GC_malloc_many(size_t n) {
    void *list = nullptr;
    GC_generic_malloc_many(n < sizeof(void *) ? sizeof(void *) : n, GC_I_NORMAL, &list);
    return list;
}

}  // extern "C"
