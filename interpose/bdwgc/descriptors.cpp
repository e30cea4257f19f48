// Reading bdwgc's mark descriptors, on the collector's marker threads
// while the world is stopped: nothing here allocates from the C library or
// takes a lock a program thread may hold.
//
// A mark procedure pushes work onto a mark stack of bdwgc's form; each
// marker has its own (made on first use, private memory), and what a
// procedure pushes is read back and done once it returns.  GC_mark_and_push
// marks the object at once, through the marker the procedure runs for.
#include "interpose/bdwgc/descriptors.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "gc/mark.h"
#include "os/vm.h"

namespace adsm::bdwgc {
namespace {

constexpr size_t kWord = sizeof(GC_word);

std::atomic<GC_mark_proc> g_procs[GC_MAX_MARK_PROCS];
std::atomic<unsigned> g_nprocs{GC_RESERVED_MARK_PROCS};

constexpr size_t kLongBitmaps = 1024;
struct LongBitmap {
    const GC_word *bits;
    size_t words;  // of the object: bits in the bitmap
};
LongBitmap g_long[kLongBitmaps];
std::atomic<size_t> g_nlong{0};
std::mutex g_descriptors_mu;

// The marker a mark procedure on this thread works for, and its stack.
__attribute__((tls_model("initial-exec"))) thread_local gc::Marker *t_marker = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local GC_ms_entry *t_stack = nullptr;
constexpr size_t kStackEntries = 4096;

void consider_words(gc::Marker &m, const uintptr_t *view, size_t words) {
    for (size_t i = 0; i < words; ++i) m.consider(view[i]);
}

void scan_long_bitmap(gc::Marker &m, const uintptr_t *view, size_t bytes, GC_word index) {
    if (index >= g_nlong.load(std::memory_order_acquire)) return;
    const LongBitmap &b = g_long[index];
    size_t words = bytes / kWord < b.words ? bytes / kWord : b.words;
    for (size_t i = 0; i < words; ++i)
        if (b.bits[i / (8 * kWord)] >> (i % (8 * kWord)) & 1) m.consider(view[i]);
}

// An entry a mark procedure pushed: its start is the view of an object it
// was given, or memory of the program's.
void do_entry(gc::Marker &m, const GC_ms_entry &e, GC_ms_entry **top, GC_ms_entry *limit) {
    auto start = reinterpret_cast<uintptr_t>(e.mse_start);
    GC_word d = e.mse_descr;
    switch (d & GC_DS_TAGS) {
    case GC_DS_LENGTH: m.push_program_range(start, start + d); break;
    case GC_DS_BITMAP:
        for (size_t i = 0; d & ~GC_word(GC_DS_TAGS); ++i, d <<= 1)
            if (d >> (8 * kWord - 1)) m.consider(*static_cast<const uintptr_t *>(m.view_of(start + i * kWord)));
        break;
    case GC_DS_PROC: {
        unsigned proc = (d >> GC_DS_TAG_BITS) & (GC_MAX_MARK_PROCS - 1);
        GC_word env = d >> (GC_DS_TAG_BITS + GC_LOG_MAX_MARK_PROCS);
        if (GC_mark_proc fn = g_procs[proc].load(std::memory_order_acquire); fn && proc != kLongBitmapProc)
            *top = fn(static_cast<GC_word *>(const_cast<void *>(m.view_of(start))), *top, limit, env);
        else
            m.consider(start);
        break;
    }
    default:
        // A descriptor kept in the object, whose size is not known here: the
        // object is marked and scanned as its layout says.
        m.consider(start);
        break;
    }
}

void run_mark_proc(gc::Marker &m, unsigned proc, const uintptr_t *view, size_t bytes, GC_word env) {
    GC_mark_proc fn = g_procs[proc].load(std::memory_order_acquire);
    // No procedure by that number, or no room for its stack: every word
    // of the object is read as a pointer (more is kept, nothing is lost).
    if (!fn) return consider_words(m, view, bytes / kWord);
    if (!t_stack) {
        void *p = os::map_anon(kStackEntries * sizeof(GC_ms_entry), PROT_READ | PROT_WRITE);
        if (p == MAP_FAILED) return consider_words(m, view, bytes / kWord);
        t_stack = static_cast<GC_ms_entry *>(p);
    }
    gc::Marker *outer = t_marker;
    t_marker = &m;
    // t_stack[0] stands for the entry being worked on, as in bdwgc: the
    // procedure pushes from t_stack[1] on, and leaves room for one more.
    GC_ms_entry *bottom = t_stack, *limit = t_stack + kStackEntries - 1;
    GC_ms_entry *top = fn(reinterpret_cast<GC_word *>(const_cast<uintptr_t *>(view)), bottom, limit, env);
    for (;;) {
        if (top > limit) top = limit;  // a procedure that pushed past the limit it was given
        if (top <= bottom) break;
        GC_ms_entry e = *top--;
        do_entry(m, e, &top, limit);
    }
    t_marker = outer;
}

}  // namespace

void scan_described(gc::Marker &m, const uintptr_t *view, size_t bytes, GC_word descr) {
    for (int depth = 0; depth < 4; ++depth) {
        switch (descr & GC_DS_TAGS) {
        case GC_DS_LENGTH:
            return consider_words(m, view, (descr < bytes ? descr : bytes) / kWord);
        case GC_DS_BITMAP: {
            GC_word bits = descr & ~GC_word(GC_DS_TAGS);
            for (size_t i = 0; bits && i < bytes / kWord; ++i, bits <<= 1)
                if (bits >> (8 * kWord - 1)) m.consider(view[i]);
            return;
        }
        case GC_DS_PROC: {
            unsigned proc = (descr >> GC_DS_TAG_BITS) & (GC_MAX_MARK_PROCS - 1);
            GC_word env = descr >> (GC_DS_TAG_BITS + GC_LOG_MAX_MARK_PROCS);
            if (proc == kLongBitmapProc) return scan_long_bitmap(m, view, bytes, env);
            return run_mark_proc(m, proc, view, bytes, env);
        }
        case GC_DS_PER_OBJECT: {
            GC_word d = 0;
            if (static_cast<GC_signed_word>(descr) >= 0) {
                // At a displacement into the object.
                size_t off = descr & ~GC_word(GC_DS_TAGS);
                if (off + kWord > bytes) return;
                memcpy(&d, reinterpret_cast<const char *>(view) + off, kWord);
            } else {
                // In the type the object's first word points to.
                uintptr_t type = view[0];
                if (!type) return;
                uintptr_t at = type - (static_cast<GC_signed_word>(descr) + (GC_INDIR_PER_OBJ_BIAS - GC_DS_PER_OBJECT));
                d = *static_cast<const GC_word *>(m.view_of(at));
            }
            if (!d) return;
            descr = d;
            continue;
        }
        }
    }
    consider_words(m, view, bytes / kWord);  // descriptors that lead to descriptors: read it all
}

unsigned add_mark_proc(GC_mark_proc proc) {
    std::lock_guard<std::mutex> lock(g_descriptors_mu);
    unsigned n = g_nprocs.load();
    if (n >= GC_MAX_MARK_PROCS) return 0;
    g_procs[n].store(proc, std::memory_order_release);
    g_nprocs.store(n + 1);
    return n;
}

long add_long_bitmap(const GC_word *bitmap, size_t words) {
    std::lock_guard<std::mutex> lock(g_descriptors_mu);
    size_t n = g_nlong.load();
    if (n >= kLongBitmaps) return -1;
    size_t nwords = (words + 8 * kWord - 1) / (8 * kWord);
    auto *copy = new (std::nothrow) GC_word[nwords];
    if (!copy) return -1;
    memcpy(copy, bitmap, nwords * kWord);
    g_long[n] = LongBitmap{copy, words};
    g_nlong.store(n + 1, std::memory_order_release);
    return static_cast<long>(n);
}

}  // namespace adsm::bdwgc

extern "C" {

struct GC_ms_entry *GC_mark_and_push(void *obj, struct GC_ms_entry *mark_stack_ptr, struct GC_ms_entry *,
                                     void **) {
    // Outside a mark procedure there is nothing to mark for.
    if (adsm::gc::Marker *m = adsm::bdwgc::t_marker) m->consider(reinterpret_cast<uintptr_t>(obj));
    return mark_stack_ptr;
}

unsigned GC_new_proc(GC_mark_proc proc) {
    unsigned n = adsm::bdwgc::add_mark_proc(proc);
    if (!n) {
        fprintf(stderr, "adsm: GC_new_proc: no more than %d mark procedures\n", GC_MAX_MARK_PROCS - GC_RESERVED_MARK_PROCS);
        abort();
    }
    return n;
}

unsigned GC_new_proc_inner(GC_mark_proc proc) { return GC_new_proc(proc); }

}  // extern "C"
