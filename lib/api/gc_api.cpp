// The collector's C API (adsm.h): argument checks and error bookkeeping
// around gc::Collector.
#include "adsm.h"
#include "api/entry.h"

using namespace adsm;

namespace {

#define ADSM_COLLECTOR(c)                                                          \
    ADSM_RUNTIME(rt_);                                                             \
    gc::Collector *c = nullptr;                                                    \
    if (Status _s = collector(*rt_, &c); _s != adsmSuccess) return record(_s)

void *alloc(size_t size, bool pointers) {
    if (void *p = gc::alloc_fast(size, pointers)) return p;
    adsm::Inside scope_;
    Runtime *rt = nullptr;
    if (Status s = runtime(&rt); s != adsmSuccess) return record_ptr(s, nullptr);
    gc::Collector *c = rt->collector.load(std::memory_order_acquire);
    if (!c && collector(*rt, &c) != adsmSuccess) return record_ptr(adsmErrorInitialization, nullptr);
    void *p = c->alloc(size, pointers);
    if (!p) record(adsmErrorMemoryAllocation);
    return p;
}

}  // namespace

extern "C" {

void *adsmGcAlloc(size_t size) { return alloc(size, true); }
void *adsmGcAllocAtomic(size_t size) { return alloc(size, false); }

adsmError_t adsmGcFree(void *obj) {
    if (!obj) return adsmSuccess;
    ADSM_COLLECTOR(c);
    return record(c->free(obj));
}

adsmError_t adsmGcCollect(void) {
    ADSM_COLLECTOR(c);
    return record(c->collect(gc::Collector::Scope::full));
}

adsmError_t adsmGcCollectMinor(void) {
    ADSM_COLLECTOR(c);
    return record(c->collect(gc::Collector::Scope::minor));
}

void *adsmGcBase(const void *p) {
    adsm::Inside scope_;
    Runtime *rt = started_runtime();
    gc::Collector *c = rt ? rt->collector.load(std::memory_order_acquire) : nullptr;
    void *base = nullptr;
    size_t size = 0;
    if (!c || forked_child() || !c->find(p, &base, &size)) return nullptr;
    return base;
}

size_t adsmGcSize(const void *p) {
    adsm::Inside scope_;
    Runtime *rt = started_runtime();
    gc::Collector *c = rt ? rt->collector.load(std::memory_order_acquire) : nullptr;
    void *base = nullptr;
    size_t size = 0;
    if (!c || forked_child() || !c->find(p, &base, &size)) return 0;
    return size;
}

adsmError_t adsmGcAddRoots(void *start, size_t size) {
    ADSM_COLLECTOR(c);
    return record(c->add_roots(start, size));
}

adsmError_t adsmGcRemoveRoots(void *start, size_t size) {
    ADSM_COLLECTOR(c);
    return record(c->remove_roots(start, size));
}

adsmError_t adsmGcRegisterFinalizer(void *obj, adsmGcCallback fn, void *data) {
    ADSM_COLLECTOR(c);
    return record(c->set_finalizer(obj, fn, data));
}

adsmError_t adsmGcRegisterWeak(void **link, const void *obj) {
    ADSM_COLLECTOR(c);
    return record(c->add_weak(link, obj));
}

adsmError_t adsmGcUnregisterWeak(void **link) {
    ADSM_COLLECTOR(c);
    return record(c->remove_weak(link));
}

adsmError_t adsmGcPin(void *obj) {
    ADSM_COLLECTOR(c);
    return record(c->pin(obj));
}

adsmError_t adsmGcUnpin(void *obj) {
    ADSM_COLLECTOR(c);
    return record(c->unpin(obj));
}

adsmError_t adsmGcRelease(void *obj, adsmGcCallback fn, void *data) {
    ADSM_COLLECTOR(c);
    return record(c->release(obj, fn, data));
}

adsmError_t adsmGcGetStats(adsmGcStats *stats) {
    if (!stats) return record(fail(adsmErrorInvalidValue, "stats is NULL"));
    ADSM_COLLECTOR(c);
    c->stats(stats);
    return adsmSuccess;
}

adsmError_t adsmGcKernelHeapCreate(size_t budget, const adsmGcKernelHeapOptions *options, adsmGcKernelHeap **heap) {
    if (heap) *heap = nullptr;
    ADSM_COLLECTOR(c);
    return record(c->create_kernel_heap(budget, options, heap));
}

adsmError_t adsmGcKernelHeapGetInfo(adsmGcKernelHeap *heap, adsmGcKernelHeapInfo *info) {
    ADSM_COLLECTOR(c);
    return record(c->kernel_heap_info(heap, info, "adsmGcKernelHeapGetInfo"));
}

adsmError_t adsmGcKernelHeapCheck(adsmGcKernelHeap *heap) {
    ADSM_COLLECTOR(c);
    return record(c->check_kernel_heap(heap));
}

}  // extern "C"
