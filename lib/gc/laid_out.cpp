// Allocation of objects whose layout the program describes (layouts.h).
// No marker may see such an object before it is zeroed: its scan function
// would read whatever the memory held before (a mark procedure that finds
// a nonsense type field may abort).  So a small one is cleared while its
// slot still looks free, before the thread takes it from its own page; a
// large one is taken as an object without pointers (never read), cleared,
// and given its layout only then, its address on this thread's stack all
// along.
#include <cstring>
#include <new>

#include "gc/collector.h"
#include "memory/manager.h"

namespace adsm::gc {

void *Collector::alloc_laid_out(size_t n, unsigned layout) {
    if (layout == 0 || layout >= kMaxLayouts || !gc::layout(layout).scan) {
        fail(adsmErrorInvalidValue, "collector: %u is not a registered layout", layout);
        return nullptr;
    }
    Context *ctx = allocating_context(&n);
    if (!ctx) return nullptr;
    void *p = nullptr;
    if (n <= kMaxSmall) {
        unsigned cls = size_class_of(n);
        CacheSlot *s = nullptr;
        {
            std::lock_guard<std::mutex> lock(heap_.lock());
            ThreadCache *tc = cache();
            CacheSlot *slots = tc ? tc->laid_out[layout] : nullptr;
            if (tc && !slots) slots = tc->laid_out[layout] = new (std::nothrow) CacheSlot[kClasses];
            if (slots) {
                use_context(*tc, ctx);
                s = &slots[cls];
                if (!s->peek() && !refill(*tc, *s, cls, true, layout)) s = nullptr;
            }
        }
        // Only this thread takes objects from its slot: what peek() shows
        // is what pop() returns.
        if (s) {
            memset(s->peek(), 0, s->size);
            p = s->pop();
        }
    } else {
        Page *head = nullptr;
        bool zero = false;
        {
            std::lock_guard<std::mutex> lock(heap_.lock());
            if (ThreadCache *tc = cache()) {
                use_context(*tc, ctx);
                p = alloc_large(*tc, n, true, &zero);
            }
            if (p) {
                head = heap_.chunk_of(reinterpret_cast<uintptr_t>(p))->page_of(reinterpret_cast<uintptr_t>(p));
                head->pointers = false;
            }
        }
        if (p) {
            if (zero) memset(p, 0, n);
            std::lock_guard<std::mutex> lock(heap_.lock());
            head->pointers = true;
            head->layout = static_cast<uint8_t>(layout);
        }
    }
    if (p) stats_.allocated.fetch_add(n, std::memory_order_relaxed);
    assist_if_asked();
    run_finalizers();
    if (!p)
        fail(adsmErrorMemoryAllocation, "collector: the heap cannot grow to hold %zu more bytes (%llu bytes of chunks%s)", n,
             static_cast<unsigned long long>(heap_.heap_bytes()), heap_.max_heap() ? ", a heap limit" : "");
    return p;
}

}  // namespace adsm::gc
