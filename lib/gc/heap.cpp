#include "gc/heap.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "memory/context.h"
#include "memory/manager.h"
#include "memory/region_table.h"
#include "support/log.h"

namespace adsm::gc {

Heap::Heap(Manager &manager, RegionTable &table, AddressSpace &space, HeapLimits limits)
    : manager_(manager), table_(table), space_(space), limits_(limits) {}

Status Heap::init() {
    if (!map_.init(space_.base(), space_.size()))
        return fail(adsmErrorMemoryAllocation, "no memory for the collector's chunk map");
    return adsmSuccess;
}

Space *Heap::space_for(Context *ctx) {
    for (Space *s : spaces_)
        if (s->ctx == ctx) return s;
    Space *s = new Space;
    s->ctx = ctx;
    spaces_.push_back(s);
    return s;
}

bool Heap::held(const Chunk &c) const { return c.owner->holds(*c.region); }

namespace {
// Objects may hold the only pointer to the program's malloc'd memory; the
// leak checker reads the chunks (through the always-readable alias) as roots.
void sanitizer_roots(const Chunk *c, bool add) {
#if defined(__SANITIZE_ADDRESS__)
    if (add) __lsan_register_root_region(c->alias, c->bytes);
    else __lsan_unregister_root_region(c->alias, c->bytes);
#else
    (void)c;
    (void)add;
#endif
}
}  // namespace

Chunk *Heap::grow(Space &s, size_t bytes, bool huge) {
    size_t span = (bytes + kPageBytes - 1) & ~(kPageBytes - 1);
    if (limits_.max_heap && heap_bytes_ + span > limits_.max_heap) return nullptr;
    void *p = nullptr;
    Status st = manager_.alloc(span, true, &p, s.ctx, RegionOrigin::collector, kChunkBytes);
    if (st != adsmSuccess) return nullptr;
    Chunk *c = new_chunk_meta(huge ? 1 : kPagesPerChunk);
    if (!c) {
        manager_.free(p, false, true);
        return nullptr;
    }
    Region *r = table_.find(reinterpret_cast<uintptr_t>(p));
    c->base = reinterpret_cast<uintptr_t>(p);
    c->bytes = span;
    c->alias = space_.alias(c->base);
    c->region = r;
    c->owner = s.ctx;
    // Calls launched before it existed wrote none of it, unless one is
    // still unsynced: its release may yet take the new chunk in.  (Taken as
    // written, a heap that grows fast had most of it "written" and every
    // collection full.)
    (void)c->note_kernel_calls();
    c->space = &s;
    c->generation = r->generation;
    c->huge = huge;
    c->empty_pages = huge ? 0 : kPagesPerChunk;
    if (!huge && c->base == space_.base()) {
        // The runtime's own variables hold the window's base address (and in
        // a program that links the runtime statically they are roots): an
        // object there would never die.
        c->pages[0].kind = PageKind::reserved;
        --c->empty_pages;
    }
    chunks_.push_back(c);
    s.chunks.push_back(c);
    heap_bytes_ += span;
    map_.set(*c, c);
    sanitizer_roots(c, true);
    ADSM_LOG(debug, "collector: chunk of %zu bytes at %p (%zu bytes in all)", span, p,
        static_cast<size_t>(heap_bytes_));
    return c;
}

// A new chunk's first page, unless it is the reserved one.
Page *Heap::first_free_page(Chunk &c) { return c.pages[0].kind == PageKind::reserved ? &c.pages[1] : &c.pages[0]; }

// The first run of `npages` empty pages in a chunk of s that no kernel holds.
Page *Heap::empty_run(Space &s, uint32_t npages, Chunk **in) {
    for (Chunk *c : s.chunks) {
        if (c->huge || c->empty_pages < npages || held(*c)) continue;
        uint32_t run = 0, first = kPagesPerChunk;
        for (uint32_t i = c->first_empty; i < kPagesPerChunk; ++i) {
            run = c->pages[i].kind == PageKind::empty ? run + 1 : 0;
            if (run && first == kPagesPerChunk) first = i;
            if (run == npages) {
                c->first_empty = first;
                *in = c;
                return &c->pages[i + 1 - npages];
            }
        }
        c->first_empty = first;
    }
    return nullptr;
}

Page *Heap::take_page(Space &s, unsigned cls, bool pointers, unsigned layout) {
    const SizeClass &sc = kSizeClasses[cls];
    // A page with free objects, skipping those a kernel holds (they stay listed).
    for (Page *p = s.partial[page_list(pointers, layout)][cls]; p; p = p->next) {
        if (held(*p->chunk)) continue;
        unlist_page(p);
        return p;
    }
    Chunk *c = nullptr;
    Page *p = empty_run(s, 1, &c);
    if (!p) {
        c = grow(s, kChunkBytes, false);
        if (!c) return nullptr;
        p = first_free_page(*c);
    }
    --c->empty_pages;
    p->kind = PageKind::small;
    p->cls = static_cast<uint8_t>(cls);
    p->pointers = pointers;
    p->layout = static_cast<uint8_t>(layout);
    for (unsigned w = 0; w < kMaskWords; ++w) {
        p->free[w] = full_mask(sc, w);
        p->swept[w].store(0, std::memory_order_relaxed);
    }
    return p;
}

void Heap::return_page(Page *p, const uint64_t *free) {
    const SizeClass &sc = kSizeClasses[p->cls];
    bool any = false, all = true;
    for (unsigned w = 0; w < kMaskWords; ++w) {
        p->free[w] = free[w] | p->swept[w].exchange(0, std::memory_order_acq_rel);
        any |= p->free[w] != 0;
        all &= p->free[w] == full_mask(sc, w);
    }
    p->cache_mask = nullptr;
    if (all) make_empty(*p->chunk, *p);
    else if (any) list_page(p);
}

void Heap::list_page(Page *p) {
    if (p->listed || p->kind != PageKind::small || p->cache_mask) return;
    Page *&head = p->chunk->space->partial[page_list(p->pointers, p->layout)][p->cls];
    p->listed = true;
    p->prev = nullptr;
    p->next = head;
    if (head) head->prev = p;
    head = p;
}

void Heap::unlist_page(Page *p) {
    if (!p->listed) return;
    Page *&head = p->chunk->space->partial[page_list(p->pointers, p->layout)][p->cls];
    if (p->prev) p->prev->next = p->next;
    else head = p->next;
    if (p->next) p->next->prev = p->prev;
    p->prev = p->next = nullptr;
    p->listed = false;
}

void Heap::make_empty(Chunk &c, Page &p) {
    unlist_page(&p);
    p.kind = PageKind::empty;
    p.layout = 0;
    p.dirty = true;
    p.npages = 0;
    p.bytes = 0;
    for (unsigned w = 0; w < kMaskWords; ++w) {
        p.free[w] = 0;
        p.mark[w].store(0, std::memory_order_relaxed);  // (marks outlive collections: see Collector)
    }
    ++c.empty_pages;
    if (uint32_t i = c.page_index(&p); i < c.first_empty) c.first_empty = i;
}

void *Heap::alloc_large(Space &s, size_t bytes, bool pointers, bool *zero, unsigned layout) {
    if (bytes > kMaxLarge) {
        Chunk *c = grow(s, bytes, true);
        if (!c) return nullptr;
        Page &p = c->pages[0];
        p.kind = PageKind::large;
        p.pointers = pointers;
        p.layout = static_cast<uint8_t>(layout);
        p.npages = static_cast<uint32_t>(c->bytes >> kPageShift);
        p.bytes = bytes;
        handed_out += c->bytes;
        *zero = false;
        return reinterpret_cast<void *>(c->base);
    }
    uint32_t npages = static_cast<uint32_t>((bytes + kPageBytes - 1) >> kPageShift);
    Chunk *c = nullptr;
    Page *head = empty_run(s, npages, &c);
    if (!head) {
        c = grow(s, kChunkBytes, false);
        if (!c) return nullptr;
        head = first_free_page(*c);
    }
    bool dirty = false;
    uint32_t h = c->page_index(head);
    for (uint32_t i = 0; i < npages; ++i) {
        Page &p = c->pages[h + i];
        dirty |= p.dirty;
        p.kind = i ? PageKind::tail : PageKind::large;
        p.head = h;
        p.dirty = true;
    }
    c->empty_pages -= npages;
    head->pointers = pointers;
    head->layout = static_cast<uint8_t>(layout);
    head->npages = npages;
    head->bytes = bytes;
    handed_out += size_t(npages) << kPageShift;
    *zero = dirty && pointers;
    return reinterpret_cast<void *>(c->page_address(head));
}

void Heap::rebuild_lists() {
    for (Space *s : spaces_)
        for (auto &byclass : s->partial)
            for (Page *&head : byclass) head = nullptr;
    for (Space *s : spaces_)
        for (Chunk *c : s->chunks) {
            if (c->huge) continue;
            for (uint32_t i = 0; i < kPagesPerChunk; ++i) {
                Page *p = &c->pages[i];
                p->listed = false;
                p->prev = p->next = nullptr;
                if (p->kind != PageKind::small || p->cache_mask) continue;
                bool any = false;
                for (unsigned w = 0; w < kMaskWords; ++w) any |= p->free[w] != 0;
                if (any) list_page(p);
            }
        }
}

void Heap::release_chunks(const std::vector<Chunk *> &dead, uint64_t keep) {
    std::vector<Chunk *> gone = dead;
    uint64_t spare = 0;
    for (Chunk *c : chunks_) {
        if (c->huge || c->empty_pages != kPagesPerChunk || held(*c)) continue;
        if (spare + c->bytes <= keep) spare += c->bytes;
        else gone.push_back(c);
    }
    for (Chunk *c : gone) {
        map_.set(*c, nullptr);
        for (size_t i = 0; i < chunks_.size(); ++i)
            if (chunks_[i] == c) {
                chunks_[i] = chunks_.back();
                chunks_.pop_back();
                break;
            }
        for (Space *s : spaces_)
            for (size_t i = 0; i < s->chunks.size(); ++i)
                if (s->chunks[i] == c) {
                    s->chunks[i] = s->chunks.back();
                    s->chunks.pop_back();
                    break;
                }
        heap_bytes_ -= c->bytes;
        sanitizer_roots(c, false);
        Status st = manager_.free(reinterpret_cast<void *>(c->base), false, true);
        if (st != adsmSuccess)
            ADSM_LOG(warn, "collector: could not return a chunk at %p: %s", reinterpret_cast<void *>(c->base),
                last_detail());
        free_chunk_meta(c);
    }
    if (!gone.empty()) rebuild_lists();
}

}  // namespace adsm::gc
