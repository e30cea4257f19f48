// The bundled collector: conservative, non-moving, mark-sweep, its heap
// made of shared regions (heap.h), so every object it returns is valid on
// the CPU and in kernels at the same address.
//
// A collection stops the world (world.h) but never waits for a kernel.
// What a kernel may reach stays alive until its context syncs: every
// object in a chunk its context released (Context::holds), everything the
// arguments of its unsynced launches point to, and what those reach.
// Blocks whose current copy is on the device are read from a copy of the
// device's taken just before the world stopped, as well as from the host's.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "adsm.h"
#include "gc/heap.h"
#include "gc/kernel_heap.h"
#include "gc/mark.h"
#include "gc/range_buffer.h"
#include "gc/registry.h"
#include "gc/thread_cache.h"
#include "gc/world.h"
#include "support/status.h"

namespace adsm {
class Device;
}

namespace adsm::gc {

struct GcConfig {
    uint64_t max_heap = 0;      // ADSM_GC_MAX_HEAP: 0, the window is the limit
    uint64_t trigger = 8 << 20; // ADSM_GC_TRIGGER: bytes allocated between collections, at least
    double growth = 1.0;        // ADSM_GC_GROWTH: ...and at least this times the live bytes
    unsigned markers = 0;       // ADSM_GC_MARKERS: 0, one per CPU (at most 8)
    bool automatic = true;      // ADSM_GC=auto; off: only adsmGcCollect collects
};

class Collector {
public:
    Collector(Manager &manager, RegionTable &table, AddressSpace &space, Device &device, GcConfig config);
    ~Collector() = delete;  // lives as long as the process
    Status init();

    void *alloc(size_t n, bool pointers) {
        if (void *p = alloc_fast(n, pointers)) return p;
        return alloc_slow(n, pointers);
    }
    Status free(void *obj);
    Status collect();

    // The object that holds p: its start and usable size; false if none.
    bool find(const void *p, void **base, size_t *size);

    Status add_roots(void *start, size_t n);
    Status remove_roots(void *start, size_t n);
    Status set_finalizer(void *obj, adsmGcCallback fn, void *data);
    Status add_weak(void **link, const void *obj);
    Status remove_weak(void **link);
    Status pin(void *obj);
    Status unpin(void *obj);
    Status release(void *obj, adsmGcCallback fn, void *data);
    void stats(adsmGcStats *out);

    // A kernel is about to be launched in ctx with these argument bytes; an
    // error when they pass a kernel heap the launch may not use.  The heaps
    // they pass stay usable only while ctx's synced_calls is at most
    // *synced_limit (UINT64_MAX when they pass none): a sync in another
    // thread before the launch's call closes them, and Manager::call, under
    // the context's lock, refuses the launch then.
    Status note_launch(Context *ctx, const void *args, size_t n, uint64_t *synced_limit);

    // Allocation inside kernels (kernel_alloc.cpp).
    Status create_kernel_heap(size_t budget, const adsmGcKernelHeapOptions *options, adsmGcKernelHeap **out);
    Status kernel_heap_info(adsmGcKernelHeap *heap, adsmGcKernelHeapInfo *out, const char *what);
    Status check_kernel_heap(adsmGcKernelHeap *heap);
    // The calling thread now works in another context.
    void context_switched();

private:
    void *alloc_slow(size_t n, bool pointers);
    bool refill(ThreadCache &tc, CacheSlot &s, unsigned cls, bool pointers);
    void *alloc_large(ThreadCache &tc, size_t n, bool pointers, bool *zero);
    void flush(ThreadCache &tc);
    ThreadCache *cache();
    static void thread_exit(void *tc);
    bool due() const;

    // With the heap's lock held.
    void collect_locked();
    Status start_markers();
    void take_device_copies();
    void snapshot_live();
    void mark_roots();
    void mark_kernel_reachable();
    void mark_all();
    void settle_weak_links();
    void find_ready();
    void sweep();
    void after_world_restarts();
    bool marked(uintptr_t obj);
    bool object_at(uintptr_t p, Chunk **c, Page **page, uintptr_t *start, size_t *size, unsigned *idx);
    Status live_object(void *obj, const char *what, Chunk **c = nullptr, Page **page = nullptr, unsigned *idx = nullptr);
    void run_finalizers();
    static void *marker_main(void *self);

    // Kernel heaps whose context synced since they opened become ordinary
    // objects (all of them, or ctx's); with the heap's lock held, the world running.
    void adopt_finished(Context *only);
    bool adopt_kernel_heap(KernelArena &a);
    void discard_kernel_heap(KernelArena &a);

    Manager &manager_;
    AddressSpace &space_;
    Device &device_;
    GcConfig config_;
    Heap heap_;
    World world_;
    Registry registry_;
    std::vector<LaunchRecord> launches_;
    KernelHeaps kernel_heaps_;
    ThreadCache *caches_ = nullptr;  // every thread's, under the heap's lock
    pthread_key_t exit_key_;

    // One collection's state.
    bool collecting_ = false;
    RangeBuffer roots_;       // data segments, taken before the world stops
    RangeBuffer threads_;     // stacks and registers, while it is stopped
    RangeBuffer ready_;       // [object, +1): its finalizer is due; [object, +2): its release callback
    RangeBuffer links_;       // [link, +1): weak links to clear once the world runs
    RangeBuffer dropped_;     // [link, +1): weak links to forget
    std::vector<Chunk *> dead_chunks_;
    std::vector<Callback> due_finalizers_;  // (run outside the lock)
    std::vector<std::pair<uintptr_t, Callback>> due_calls_;
    std::vector<uintptr_t> due_frees_;
    uint64_t live_bytes_ = 0;

    // Marker threads: marker 0 is the collecting thread.
    MarkPool pool_;
    std::vector<std::unique_ptr<Marker>> markers_;
    std::vector<pid_t> marker_tids_;
    std::atomic<uint32_t> mark_epoch_{0};
    std::atomic<unsigned> markers_done_{0};
    std::atomic<unsigned> markers_up_{0};     // started (hands out their indices)
    std::atomic<unsigned> markers_ready_{0};  // with their thread ids published
    pid_t markers_pid_ = 0;

    struct {
        std::atomic<uint64_t> allocated{0}, collections{0}, last_pause{0}, max_pause{0}, total_pause{0}, freed{0},
            finalizers{0}, weak_cleared{0}, kept_for_kernels{0};
    } stats_;
    std::atomic<bool> finalizing_{false};
};

}  // namespace adsm::gc
