#include "gc/kernel_heap.h"

#include <sys/mman.h>

#include <cstring>

#include "gc/heap.h"
#include "gc/mark.h"
#include "memory/context.h"
#include "os/vm.h"

namespace adsm::gc {

namespace {

uint64_t words_for(uint64_t granules) { return (granules + 63) / 64; }

// The last set bit at or before `from`, or -1.
int64_t prev_bit(const uint64_t *bm, uint64_t from) {
    int64_t w = static_cast<int64_t>(from >> 6);
    unsigned b = static_cast<unsigned>(from & 63);
    uint64_t bits = bm[w] & (b == 63 ? ~uint64_t(0) : (uint64_t(2) << b) - 1);
    for (;;) {
        if (bits) return w * 64 + 63 - __builtin_clzll(bits);
        if (--w < 0) return -1;
        bits = bm[w];
    }
}

}  // namespace

void KernelHeaps::opened(Context &c) {
    open_.fetch_add(1, std::memory_order_relaxed);
    c.open_kernel_heaps.fetch_add(1, std::memory_order_release);
}

void KernelHeaps::closed(Context &c) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    c.open_kernel_heaps.fetch_sub(1, std::memory_order_release);
}

bool KernelArena::finished() const {
    return state == State::open && ctx->synced_calls.load(std::memory_order_acquire) > created_calls;
}

bool KernelArena::make_bitmaps() {
    granules = bytes / kGranule;
    size_t n = words_for(granules) * sizeof(uint64_t);
    void *s = os::map_anon(n, PROT_READ | PROT_WRITE), *e = os::map_anon(n, PROT_READ | PROT_WRITE),
         *m = os::map_anon(n, PROT_READ | PROT_WRITE);
    if (s == MAP_FAILED || e == MAP_FAILED || m == MAP_FAILED) {
        for (void *p : {s, e, m})
            if (p != MAP_FAILED) os::unmap(p, n);
        return false;
    }
    starts = static_cast<uint64_t *>(s);
    ends = static_cast<uint64_t *>(e);
    marks = static_cast<std::atomic<uint64_t> *>(m);
    return true;
}

void KernelArena::free_bitmaps() {
    size_t n = words_for(granules) * sizeof(uint64_t);
    if (starts) os::unmap(starts, n);
    if (ends) os::unmap(ends, n);
    if (marks) os::unmap(marks, n);
    starts = ends = nullptr;
    marks = nullptr;
}

void KernelArena::add_object(uintptr_t start, size_t n) {
    uint64_t f = granule(start), l = granule(start + n - 1);
    starts[f >> 6] |= uint64_t(1) << (f & 63);
    ends[l >> 6] |= uint64_t(1) << (l & 63);
}

bool KernelArena::object_at(uintptr_t a, uintptr_t *start, size_t *size) const {
    if (a < base || a - base >= bytes) return false;
    uint64_t g = granule(a);
    int64_t s = prev_bit(starts, g);
    if (s < 0) return false;
    uint64_t e = next_set_bit(ends, static_cast<uint64_t>(s), granules);
    if (e >= granules || e < g) return false;  // a is in the space after that object
    *start = address(static_cast<uint64_t>(s));
    *size = (e - static_cast<uint64_t>(s) + 1) * kGranule;
    return true;
}

bool KernelArena::is_object(uintptr_t start) const {
    if (start < base || start - base >= bytes || (start - base) % kGranule) return false;
    uint64_t g = granule(start);
    return starts[g >> 6] >> (g & 63) & 1;
}

void KernelArena::drop_object(uintptr_t start) {
    uint64_t s = granule(start), e = next_set_bit(ends, s, granules);
    starts[s >> 6] &= ~(uint64_t(1) << (s & 63));
    marks[s >> 6].fetch_and(~(uint64_t(1) << (s & 63)), std::memory_order_relaxed);
    if (e < granules) ends[e >> 6] &= ~(uint64_t(1) << (e & 63));
}

bool KernelArena::release_pages(Heap &heap) {
    bool any = false;
    if (chunk->huge) {
        // One Page for the whole chunk: it goes back only as a whole.
        for (uint64_t w = 0; w < words_for(granules) && !any; ++w) any = starts[w] != 0;
        return !any;
    }
    uint32_t first = chunk->page_index(chunk->page_of(base));
    uint32_t npages = static_cast<uint32_t>(bytes >> kPageShift);
    uint32_t from = 0;  // pages below it are covered or given back already
    auto give_back = [&](uint32_t to) {
        for (; from < to; ++from) {
            Page &p = chunk->pages[first + from];
            if (p.kind != PageKind::kernel || p.arena != this) continue;  // given back before, maybe reused
            p.arena = nullptr;
            heap.make_empty(*chunk, p);
        }
    };
    for_each_object([&](uint64_t s, uint64_t e) {
        any = true;
        give_back(static_cast<uint32_t>((s * kGranule) >> kPageShift));
        uint32_t last = static_cast<uint32_t>((e * kGranule) >> kPageShift);
        if (last + 1 > from) from = last + 1;
    });
    give_back(npages);
    return !any;
}

KernelArena *KernelHeaps::find(const Heap &heap, uintptr_t at) const {
    Chunk *c = heap.chunk_of(at);
    if (!c || at - c->base >= c->bytes) return nullptr;
    Page *p = c->page_of(at);
    if (p->kind != PageKind::kernel || !p->arena || p->arena->base != at) return nullptr;
    KernelArena *a = p->arena;
    if (a->adopted() && !a->is_object(at)) return nullptr;  // its descriptor was collected
    return a;
}

void KernelHeaps::begin_marking(bool full) {
    if (!full) return;  // marks stay: the objects that survived are old
    for (KernelArena *a : arenas_)
        if (a->adopted()) memset(static_cast<void *>(a->marks), 0, words_for(a->granules) * sizeof(uint64_t));
}

void KernelHeaps::mark_for_kernels(Marker &m, const Heap &heap, uint64_t *kept) {
    for (KernelArena *a : arenas_) {
        if (a->dead) continue;
        if (!a->adopted()) {
            // Whatever a kernel put there is kept; what it points to, too.
            // Before any launch since it opened, no kernel has written any.
            if (a->state == KernelArena::State::open &&
                a->ctx->calls.load(std::memory_order_acquire) > a->created_calls)
                m.scan_object(*a->chunk, a->eden_start(), a->layout.eden_bytes);
            continue;
        }
        if (!heap.held(*a->chunk)) continue;
        a->for_each_object([&](uint64_t s, uint64_t e) {
            uintptr_t start = a->address(s);
            size_t n = (e - s + 1) * kGranule;
            if (!a->test_and_mark(start)) return;
            m.marked_bytes += n;
            if (a->scanned(start)) m.scan_object(*a->chunk, start, n);
            ++*kept;
        });
    }
}

void KernelHeaps::sweep(Heap &heap, std::vector<Chunk *> &dead_chunks, uint64_t *freed, uint64_t *live) {
    for (KernelArena *a : arenas_) {
        if (!a->adopted() || a->dead) continue;
        for (uint64_t w = 0; w < words_for(a->granules); ++w) {
            for (uint64_t garbage = a->starts[w] & ~a->marks[w].load(std::memory_order_relaxed); garbage;
                 garbage &= garbage - 1) {
                a->drop_object(a->address(w * 64 + static_cast<uint64_t>(__builtin_ctzll(garbage))));
                ++*freed;
            }
        }
        a->for_each_object([&](uint64_t s, uint64_t e) { *live += (e - s + 1) * kGranule; });
        if (a->release_pages(heap)) {
            a->dead = true;
            if (a->chunk->huge) dead_chunks.push_back(a->chunk);
        }
    }
}

void KernelHeaps::reap() {
    for (size_t i = 0; i < arenas_.size();) {
        KernelArena *a = arenas_[i];
        if (!a->dead) {
            ++i;
            continue;
        }
        a->free_bitmaps();
        delete a;
        arenas_[i] = arenas_.back();
        arenas_.pop_back();
    }
}

}  // namespace adsm::gc
