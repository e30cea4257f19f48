// bdwgc's typed allocation (gc_typed.h).  A bitmap descriptor that covers
// a prefix of pointers is a length; one that fits a word is a bitmap
// descriptor; a longer one is kept in a table and read by a reserved mark
// procedure.  An explicitly typed object carries its descriptor in its last
// word, where its layout's scan function finds it, as in bdwgc.
#include <cstring>

#include "gc/layouts.h"
#include "interpose/bdwgc/descriptors.h"
#include "interpose/bdwgc/kinds.h"
#include "interpose/bdwgc/state.h"

namespace {

constexpr size_t kWord = sizeof(GC_word);
constexpr size_t kBitmapBits = 8 * kWord - GC_DS_TAG_BITS;

void scan_typed(adsm::gc::Marker &m, const uintptr_t *view, size_t bytes, uintptr_t, uintptr_t) {
    if (bytes < kWord) return;
    GC_word descr = view[bytes / kWord - 1];  // 0 until the allocation stored it: nothing to read yet
    adsm::bdwgc::scan_described(m, view, bytes - kWord, descr);
}

unsigned typed_layout() {
    static unsigned id = adsm::gc::register_layout(scan_typed, 0);
    return id;
}

bool bit(const GC_word *bm, size_t i) { return bm[i / (8 * kWord)] >> (i % (8 * kWord)) & 1; }

}  // namespace

using namespace adsm::bdwgc;

extern "C" {

GC_descr GC_make_descriptor(const GC_word *bm, size_t len) {
    long last = -1;
    for (size_t i = 0; i < len; ++i)
        if (bit(bm, i)) last = static_cast<long>(i);
    size_t words = static_cast<size_t>(last + 1);
    bool prefix = true;
    for (size_t i = 0; i < words; ++i) prefix &= bit(bm, i);
    if (prefix) return words * kWord | GC_DS_LENGTH;  // (0 when there is no pointer)
    if (words <= kBitmapBits) {
        GC_descr d = GC_DS_BITMAP;
        for (size_t i = 0; i < words; ++i)
            if (bit(bm, i)) d |= GC_word(1) << (8 * kWord - 1 - i);
        return d;
    }
    long n = add_long_bitmap(bm, words);
    if (n < 0) return words * kWord | GC_DS_LENGTH;  // the table is full: every word up to the last pointer
    return GC_MAKE_PROC(GC_word(kLongBitmapProc), GC_word(n));
}

void *GC_malloc_explicitly_typed(size_t n, GC_descr d) {
    if (d == 0) return GC_malloc_atomic(n);
    if ((d & GC_DS_TAGS) == GC_DS_LENGTH && d >= n) return GC_malloc(n);
    if (n > SIZE_MAX - 2 * kWord) return out_of_memory(n);
    size_t words = (n + kWord - 1) / kWord + 1;  // and the descriptor
    if (detached()) return calloc(words, kWord);
    GC_word *p;
    {
        adsm::Inside in;
        p = static_cast<GC_word *>(collector().alloc_laid_out(words * kWord, typed_layout()));
    }
    if (!p) return out_of_memory(n);
    p[adsmGcSize(p) / kWord - 1] = d;
    run_waiting_finalizers();
    return p;
}

void *GC_malloc_explicitly_typed_ignore_off_page(size_t n, GC_descr d) { return GC_malloc_explicitly_typed(n, d); }

}  // extern "C"
