// Kernel heaps as the collector keeps them (the kernel side is
// adsm_gc_kernel.h, the layout kernel_heap_layout.h).  A heap is a run of
// pages of kind PageKind::kernel in a chunk of its context (or a huge chunk
// of its own), each page pointing to the heap's KernelArena.
//
// Open, the heap belongs to its kernels: nothing in it is looked at one
// object at a time, it is all kept, and once a kernel may have run its eden
// is scanned whole (kernel objects may point to host objects).  Once its
// context synced the collector adopts it (Collector::adopt_kernel_heap): the
// objects the kernels recorded in the shared bitmap become bits in private
// bitmaps here, one per 16-byte granule (where objects start, where they end,
// which are marked), and from then on they are found by interior pointers,
// marked and swept like any other object.  Pages no object covers go back
// to the heap, at adoption and after every sweep; the arena goes when its
// last object does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "adsm.h"
#include "gc/chunk.h"
#include "gc/kernel_heap_layout.h"

namespace adsm {
struct Context;
}

namespace adsm::gc {

class Heap;
class Marker;

struct KernelArena {
    enum class State : uint8_t {
        opening,  // its descriptor is being written
        open,     // its kernels' (see Context::synced_calls)
        adopted,  // ordinary objects
    };
    State state = State::opening;
    Chunk *chunk = nullptr;
    uintptr_t base = 0;  // the descriptor: the adsmGcKernelHeap * the program holds
    size_t bytes = 0;
    Context *ctx = nullptr;
    uint64_t created_calls = 0;  // ctx->calls when it opened
    KernelHeapLayout layout;
    adsmGcKernelHeapInfo info{};
    bool dead = false;  // no object left: forgotten once the world runs

    // Adopted: one bit per granule of [base, base + bytes).
    uint64_t granules = 0;
    uint64_t *starts = nullptr;
    uint64_t *ends = nullptr;
    std::atomic<uint64_t> *marks = nullptr;

    bool adopted() const { return state == State::adopted; }
    // Open, and its context synced a launch made since it opened: its
    // kernels are done, and it serves no other.
    bool finished() const;
    uintptr_t eden_start() const { return base + layout.eden_off; }
    uintptr_t address(uint64_t granule) const { return base + granule * kGranule; }
    uint64_t granule(uintptr_t a) const { return (a - base) / kGranule; }

    // Private bitmaps for an adoption; false when there is no memory.
    bool make_bitmaps();
    void free_bitmaps();
    void add_object(uintptr_t start, size_t bytes);
    // The adopted object that holds a: its start and size.
    bool object_at(uintptr_t a, uintptr_t *start, size_t *size) const;
    bool is_object(uintptr_t start) const;  // an adopted object starts there
    bool test_and_mark(uintptr_t start) {
        uint64_t g = granule(start), bit = uint64_t(1) << (g & 63);
        std::atomic<uint64_t> &m = marks[g >> 6];
        if (m.load(std::memory_order_relaxed) & bit) return false;
        return !(m.fetch_or(bit, std::memory_order_relaxed) & bit);
    }
    bool marked(uintptr_t start) const {
        uint64_t g = granule(start);
        return marks[g >> 6].load(std::memory_order_relaxed) >> (g & 63) & 1;
    }
    // The descriptor holds eden's bounds, which must not keep objects alive.
    bool scanned(uintptr_t start) const { return start != base; }
    // f(start granule, last granule) for every object, in address order.
    template <class F>
    void for_each_object(F &&f) const;
    // The same for the objects that overlap [lo, hi).
    template <class F>
    void for_each_object_in(uintptr_t lo, uintptr_t hi, F &&f) const;
    // Forgets one object (an explicit free, or garbage at a sweep).
    void drop_object(uintptr_t start);
    // Gives the heap back the pages no object covers; true when no object is left.
    bool release_pages(Heap &heap);
};

class KernelHeaps {
public:
    const std::vector<KernelArena *> &arenas() const { return arenas_; }
    void add(KernelArena *a) { arenas_.push_back(a); }
    // Arenas whose context may still sync, in all and per context, for the
    // launch path's quick test.
    void opened(Context &c);
    void closed(Context &c);
    unsigned open() const { return open_.load(std::memory_order_relaxed); }
    // The arena whose descriptor is at `heap`, open or adopted, or nullptr.
    KernelArena *find(const Heap &heap, uintptr_t at) const;

    // ---- one collection (world stopped, except reap)
    // A full collection starts from no marks; a minor one keeps those of
    // the objects that survived the last (sticky marks).
    void begin_marking(bool full);
    // Open arenas, whole; adopted ones a kernel holds, every object.
    void mark_for_kernels(Marker &m, const Heap &heap, uint64_t *kept);
    void sweep(Heap &heap, std::vector<Chunk *> &dead_chunks, uint64_t *freed, uint64_t *live);
    void reap();

private:
    std::vector<KernelArena *> arenas_;
    std::atomic<unsigned> open_{0};
};

// The first set bit of bm at or after `from`, or `limit`.
inline uint64_t next_set_bit(const uint64_t *bm, uint64_t from, uint64_t limit) {
    if (from >= limit) return limit;
    uint64_t w = from >> 6, n = (limit + 63) / 64;
    uint64_t bits = bm[w] & (~uint64_t(0) << (from & 63));
    for (;;) {
        if (bits) {
            uint64_t at = w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits));
            return at < limit ? at : limit;
        }
        if (++w >= n) return limit;
        bits = bm[w];
    }
}

template <class F>
void KernelArena::for_each_object(F &&f) const {
    for (uint64_t s = next_set_bit(starts, 0, granules); s < granules;) {
        uint64_t e = next_set_bit(ends, s, granules);
        if (e >= granules) return;
        f(s, e);
        s = next_set_bit(starts, e + 1, granules);
    }
}

template <class F>
void KernelArena::for_each_object_in(uintptr_t lo, uintptr_t hi, F &&f) const {
    if (lo < base) lo = base;
    if (hi > base + bytes) hi = base + bytes;
    if (lo >= hi) return;
    uintptr_t first;
    size_t n;
    uint64_t from = granule(lo), limit = granule(hi - 1) + 1;
    if (object_at(lo, &first, &n) && first < lo) {
        f(granule(first), granule(first + n - 1));
        from = granule(first + n);
    }
    for (uint64_t s = next_set_bit(starts, from, limit); s < limit;) {
        uint64_t e = next_set_bit(ends, s, granules);
        if (e >= granules) return;
        f(s, e);
        s = next_set_bit(starts, e + 1, limit);
    }
}

}  // namespace adsm::gc
