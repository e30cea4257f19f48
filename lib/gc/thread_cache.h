// Each thread allocates small objects from pages it owns alone, a bitmap
// of free objects per size class: no lock and no atomic operation on the
// fast path.  A page goes back to the heap when its objects run out, when
// the thread's context launches a kernel (the page may now belong to the
// device), when the thread switches context, and when it exits.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "gc/chunk.h"
#include "gc/layouts.h"
#include "gc/size_classes.h"
#include "memory/context.h"
#include "os/real_libc.h"

namespace adsm::gc {

struct Space;

// Objects a mask word counts.
inline unsigned popcount(uint64_t m) { return static_cast<unsigned>(__builtin_popcountll(m)); }

struct CacheSlot {
    uintptr_t base = 0;  // the page's address
    uint32_t size = 0;   // bytes per object
    uint64_t mask[kMaskWords] = {};  // objects not handed out yet
    Page *page = nullptr;

    // The object pop() returns next, still free; nullptr if none.
    void *peek() const {
        for (unsigned w = 0; w < kMaskWords; ++w)
            if (mask[w]) return reinterpret_cast<void *>(base + uintptr_t(w * 64 + __builtin_ctzll(mask[w])) * size);
        return nullptr;
    }

    void *pop() {
        for (unsigned w = 0; w < kMaskWords; ++w) {
            uint64_t m = mask[w];
            if (!m) continue;
            unsigned b = static_cast<unsigned>(__builtin_ctzll(m));
            void *p = reinterpret_cast<void *>(base + uintptr_t(w * 64 + b) * size);
            // The address must be in a register before the object stops
            // looking free: a collection that stops this thread between the
            // two would otherwise find it allocated and unreferenced, and free it.
            asm volatile("" : "+r"(p)::"memory");
            mask[w] = m & (m - 1);
            return p;
        }
        return nullptr;
    }
};

struct ThreadCache {
    Context *ctx = nullptr;
    Space *space = nullptr;
    uint64_t calls_seen = 0;  // ctx->calls when the pages were taken
    uint64_t ctx_calls() const { return ctx->calls.load(std::memory_order_relaxed); }
    CacheSlot slots[2][kClasses];  // [pointers][class]
    CacheSlot *laid_out[kMaxLayouts] = {};  // [layout][class], made on first use
    pid_t tid = 0;
    bool assist = false;  // to help the markers once the heap's lock is released
    ThreadCache *prev = nullptr, *next = nullptr;

    ThreadCache() = default;
    ThreadCache(const ThreadCache &) = delete;
    ThreadCache &operator=(const ThreadCache &) = delete;
    ~ThreadCache() {
        for (CacheSlot *s : laid_out) delete[] s;
    }
};

// The calling thread's cache, or nullptr before its first allocation (and
// in a fork child, whose heap is not the collector's any more).
extern __thread ThreadCache *tls_cache __attribute__((tls_model("initial-exec")));

// A small object from the thread's own pages, or nullptr when the slow path
// must decide.  Touches nothing but the thread's cache, so the C API calls
// it before entering the runtime.  Objects that may hold pointers are
// zeroed with libc's own memset: the interposed one would look up the
// address as shared memory.
inline void *alloc_fast(size_t n, bool pointers) {
    ThreadCache *tc = tls_cache;
    if (n - 1 >= kMaxSmall || !tc || !tc->ctx || tc->ctx_calls() != tc->calls_seen) return nullptr;
    CacheSlot &s = tc->slots[pointers][size_class_of(n)];
    void *p = s.pop();
    if (p && pointers) os::real_memset(p, 0, s.size);
    return p;
}

}  // namespace adsm::gc
