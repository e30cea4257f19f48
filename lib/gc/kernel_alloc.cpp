// Allocation inside kernels, the collector's side: a kernel heap is made
// from the collector's pages like a large object, its descriptor written
// the way the program would write shared memory, and, once its context has
// synced, its objects are adopted from the bitmap its kernels left.
//
// Adoption happens at the first of: the context's next launch (before that
// launch hands the chunk to the device, so that the closed state reaches
// any later kernel), the next collection, or a question about the heap.
// Until then the heap is kept whole, which is always safe.
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "gc/collector.h"
#include "memory/manager.h"
#include "os/vm.h"
#include "support/log.h"

namespace adsm::gc {

namespace {

void add_object(void *arena, uint64_t offset, uint64_t bytes) {
    auto *a = static_cast<KernelArena *>(arena);
    a->add_object(a->eden_start() + offset, bytes);
}

adsmGcKernelHeap *descriptor(const KernelArena &a) { return reinterpret_cast<adsmGcKernelHeap *>(a.base); }

}  // namespace

Status Collector::create_kernel_heap(size_t budget, const adsmGcKernelHeapOptions *options, adsmGcKernelHeap **out) {
    if (!out) return fail(adsmErrorInvalidValue, "adsmGcKernelHeapCreate: heap is NULL");
    *out = nullptr;
    KernelHeapLayout l;
    if (Status s = plan_kernel_heap(budget, options, &l); s != adsmSuccess) return s;
    if (l.total_bytes > space_.size())
        return fail(adsmErrorMemoryAllocation, "adsmGcKernelHeapCreate: %zu bytes is more than the shared window holds",
                    l.total_bytes);
    Context *ctx = manager_.current();
    if (!ctx) return fail(adsmErrorMemoryAllocation, "collector: cannot create a context");
    auto *a = new (std::nothrow) KernelArena;
    std::vector<uint8_t> image;
    if (!a) return fail(adsmErrorMemoryAllocation, "collector: no memory for a kernel heap's record");
    image.resize(l.bitmap_off);
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        adopt_finished(ctx);  // what finished heaps did not use serves this one
        Space &s = *heap_.space_for(ctx);
        bool zero = false;
        if (due()) collect_locked();
        void *p = heap_.alloc_large(s, l.total_bytes, true, &zero);
        if (!p && config_.automatic && heap_.handed_out) {
            collect_locked(Scope::full);
            p = heap_.alloc_large(s, l.total_bytes, true, &zero);
        }
        if (!p) {
            delete a;
            return fail(adsmErrorMemoryAllocation,
                        "collector: the heap cannot grow to hold a kernel heap of %zu bytes (%llu bytes of chunks%s)",
                        l.total_bytes, static_cast<unsigned long long>(heap_.heap_bytes()),
                        config_.max_heap ? ", ADSM_GC_MAX_HEAP" : "");
        }
        Chunk *c = heap_.chunk_of(reinterpret_cast<uintptr_t>(p));
        a->chunk = c;
        a->base = reinterpret_cast<uintptr_t>(p);
        a->bytes = l.total_bytes;
        a->ctx = ctx;
        a->layout = l;
        a->info.budget = l.eden_bytes;
        // Pages a large object would have had: the arena's from now on.
        uint32_t first = c->page_index(c->page_of(a->base)), n = c->huge ? 1 : static_cast<uint32_t>(l.total_bytes >> kPageShift);
        for (uint32_t i = 0; i < n; ++i) {
            c->pages[first + i].kind = PageKind::kernel;
            c->pages[first + i].arena = a;
        }
        kernel_heaps_.add(a);
    }
    run_finalizers();

    // No kernel holds the chunk: a new launch of the context would have to
    // come first, and the program has no pointer to the heap yet.
    format_kernel_heap(l, a->base, image.data());
    void *base = reinterpret_cast<void *>(a->base);
    Status st = manager_.program_write(base, image.data(), image.size());
    if (st == adsmSuccess) st = manager_.program_fill(static_cast<uint8_t *>(base) + l.bitmap_off, 0, l.bitmap_bytes);

    std::lock_guard<std::mutex> lock(heap_.lock());
    if (st != adsmSuccess) {
        std::string why = last_detail();
        discard_kernel_heap(*a);
        return fail(st, "adsmGcKernelHeapCreate: could not write the heap's descriptor: %s", why.c_str());
    }
    a->created_calls = ctx->calls.load(std::memory_order_acquire);
    a->state = KernelArena::State::open;
    kernel_heaps_.opened(*ctx);
    *out = descriptor(*a);
    return adsmSuccess;
}

void Collector::discard_kernel_heap(KernelArena &a) {
    Chunk *c = a.chunk;
    if (!c->huge) {
        for (uint32_t i = 0; i < c->npages; ++i) {
            Page &p = c->pages[i];
            if (p.kind != PageKind::kernel || p.arena != &a) continue;
            p.arena = nullptr;
            heap_.make_empty(*c, p);
        }
    }
    a.dead = true;
    forget_dead_arenas();
    if (c->huge) release_huge(c);
}

void Collector::adopt_finished(Context *only) {
    // (Not while markers run: adoption rewrites the arena's bitmaps they
    // read.  The collection that finishes their work adopts first.)
    if (!kernel_heaps_.open() || marking_) return;
    for (KernelArena *a : kernel_heaps_.arenas())
        if ((!only || a->ctx == only) && a->finished() && !heap_.held(*a->chunk)) adopt_kernel_heap(*a);
}

bool Collector::adopt_kernel_heap(KernelArena &a) {
    const KernelHeapLayout &l = a.layout;
    size_t n = l.meta_bytes();
    void *meta = os::map_anon(n, PROT_READ | PROT_WRITE);
    if (meta == MAP_FAILED) {
        ADSM_LOG(warn, "collector: no memory to read kernel heap %p back; it stays whole for now", descriptor(a));
        return false;
    }
    // Through the protocol: after the sync the current bytes may be the device's.
    if (manager_.program_read(descriptor(a), meta, n) != adsmSuccess || !a.make_bitmaps()) {
        ADSM_LOG(warn, "collector: could not read kernel heap %p back (%s); it stays whole for now", descriptor(a),
                 last_detail());
        os::unmap(meta, n);
        return false;
    }
    a.add_object(a.base, kKernelHeapHeaderBytes);
    KernelHeapReport r;
    parse_kernel_heap(l, a.base, static_cast<const uint8_t *>(meta), &r, add_object, &a);
    os::unmap(meta, n);
    if (r.dropped)
        ADSM_LOG(warn,
                 "collector: kernel heap %p: %llu entries of its bitmap make no whole object handed out (a kernel "
                 "that failed half-way, or wrote over the heap's metadata); they are not objects",
                 descriptor(a), static_cast<unsigned long long>(r.dropped));
    adsmGcKernelHeapInfo &i = a.info;
    i.closed = 1;
    i.objects = r.objects;
    i.bytes = r.bytes;
    i.failed = r.failed;
    i.failed_bytes = r.failed_bytes;
    i.too_large = r.too_large;
    i.late = r.late;
    i.tlabs = r.tlabs;
    i.overflows = r.overflows;
    i.eden_objects = r.eden_objects;
    i.unused_bytes = r.unused_bytes;
    // Adopted objects start old (marked): while the heap was open every
    // collection kept them and traced what they point to (its eden, once a
    // kernel may have run), so no young object is reached only through
    // them, unless a kernel ran since the last collection, in which case
    // their chunk is traced whole by the next minor one (scan_written).
    // Starting young instead, they would be freed by a minor collection
    // that does not trace the objects pointing to them: the kernel's
    // stores reached those through the runtime's view, unseen.
    for (uint64_t w = 0; w < (a.granules + 63) / 64; ++w) a.marks[w].store(a.starts[w], std::memory_order_relaxed);
    a.state = KernelArena::State::adopted;
    kernel_heaps_.closed(*a.ctx);
    stats_.allocated.fetch_add(r.bytes, std::memory_order_relaxed);
    a.release_pages(heap_);  // what no kernel used, and the metadata; the descriptor stays
    // Kernels that reach the heap from now on get NULL.
    unsigned long long closed = ADSM_GC_KERNEL_HEAP_CLOSED;
    if (manager_.program_write(&descriptor(a)->state, &closed, sizeof closed, nullptr, false) != adsmSuccess)
        ADSM_LOG(warn, "collector: could not mark kernel heap %p closed: %s", descriptor(a), last_detail());
    return true;
}

Status Collector::kernel_heap_info(adsmGcKernelHeap *heap, adsmGcKernelHeapInfo *out, const char *what) {
    if (!out) return fail(adsmErrorInvalidValue, "%s: info is NULL", what);
    bool reread = false;
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        KernelArena *a = kernel_heaps_.find(heap_, reinterpret_cast<uintptr_t>(heap));
        if (!a || a->state == KernelArena::State::opening)
            return fail(adsmErrorInvalidPointer, "%s: %p is not a kernel heap (from adsmGcKernelHeapCreate)", what,
                        static_cast<void *>(heap));
        if (a->finished() && !heap_.held(*a->chunk)) {
            // Markers read the arena's bitmaps, which adoption rewrites: the
            // collection that finishes their work comes first (and adopts).
            if (marking_) {
                collect_locked();
                a = kernel_heaps_.find(heap_, reinterpret_cast<uintptr_t>(heap));
                if (!a)
                    return fail(adsmErrorInvalidPointer, "%s: the kernel heap %p went away", what,
                                static_cast<void *>(heap));
            }
            if (!marking_ && !a->adopted() && a->finished() && !heap_.held(*a->chunk)) adopt_kernel_heap(*a);
        }
        *out = a->info;
        reread = a->adopted() && !heap_.held(*a->chunk);
    }
    if (reread) {
        // Kernels that reached the heap after it closed counted themselves there.
        unsigned long long late = 0;
        if (manager_.program_read(&heap->late, &late, sizeof late) == adsmSuccess) out->late = late;
    }
    return adsmSuccess;
}

Status Collector::check_kernel_heap(adsmGcKernelHeap *heap) {
    adsmGcKernelHeapInfo i;
    if (Status s = kernel_heap_info(heap, &i, "adsmGcKernelHeapCheck"); s != adsmSuccess) return s;
    void *h = static_cast<void *>(heap);
    if (!i.closed)
        return fail(adsmErrorBusy, "kernel heap %p: its kernels may still run (its context has not synced since one was launched)",
                    h);
    if (i.failed)
        return fail(adsmErrorMemoryAllocation,
                    "kernel heap %p: %llu allocations in its kernels returned NULL (%llu bytes asked for%s): the budget of "
                    "%llu bytes was not enough; give the heap more, or allocate those on the host",
                    h, static_cast<unsigned long long>(i.failed), static_cast<unsigned long long>(i.failed_bytes),
                    i.too_large ? ", some of them single objects larger than the whole budget" : "",
                    static_cast<unsigned long long>(i.budget));
    if (i.late)
        return fail(adsmErrorInvalidValue,
                    "kernel heap %p: kernels tried it %llu times after it closed at its context's sync (a heap serves "
                    "only the kernels launched before that sync)",
                    h, static_cast<unsigned long long>(i.late));
    return adsmSuccess;
}

}  // namespace adsm::gc
