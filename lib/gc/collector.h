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

#include <pthread.h>
#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "adsm.h"
#include "gc/heap.h"
#include "gc/kernel_heap.h"
#include "gc/mark.h"
#include "gc/range_buffer.h"
#include "gc/roots.h"
#include "gc/registry.h"
#include "gc/thread_cache.h"
#include "gc/world.h"
#include "support/status.h"

namespace adsm {
namespace os {
class UffdTracker;
}
}  // namespace adsm

namespace adsm::gc {

struct GcConfig {
    uint64_t max_heap = 0;      // ADSM_GC_MAX_HEAP: 0, the window is the limit
    uint64_t trigger = 8 << 20; // ADSM_GC_TRIGGER: bytes allocated between collections, at least
    double growth = 1.0;        // ADSM_GC_GROWTH: ...and at least this times the live bytes
    unsigned markers = 0;       // ADSM_GC_MARKERS: 0, one per CPU (at most 8)
    bool automatic = true;      // ADSM_GC=auto; off: only adsmGcCollect collects
    // Minor collections (ADSM_GC_GENERATIONAL): the kernel's record of the
    // pages written, shared with the protocol; null: full collections only.
    os::UffdTracker *writes = nullptr;
    unsigned full_every = 8;    // ADSM_GC_FULL_EVERY
    // ADSM_GC_CONCURRENT: automatic full collections mark while the world
    // runs (concurrent.cpp), where minor collections work and markers > 1.
    bool concurrent = true;
};

class Collector {
public:
    Collector(Manager &manager, RegionTable &table, AddressSpace &space, GcConfig config);
    ~Collector() = delete;  // lives as long as the process
    Status init();

    void *alloc(size_t n, bool pointers) {
        if (void *p = alloc_fast(n, pointers)) return p;
        return alloc_slow(n, pointers);
    }
    Status free(void *obj) { return free_object(obj, false); }
    // A full collection traces every reachable object.  A minor one (with
    // GcConfig::writes) keeps every object that survived the last
    // collection without tracing it, and traces the objects allocated
    // since from the roots and from what was written since, so its work
    // follows what the program changed, not the heap's size.  Old objects
    // that died, and their finalizers, weak links and release callbacks,
    // wait for the next full collection.  Automatic collections are minor
    // but for every full_every-th one.
    enum class Scope { automatic, minor, full };
    Status collect(Scope scope = Scope::full);
    bool generational() const;

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

    // ---- what programs written for other collectors expect (interpose/bdwgc)

    // An object of a layout the program describes (layouts.h), zeroed.
    void *alloc_laid_out(size_t n, unsigned layout);
    // A finalizer with an order; *old (if given) gets the one it replaces,
    // fn null when there was none.  A null cb.fn removes the finalizer.
    Status set_finalizer(void *obj, const Callback &cb, Callback *old);
    // As add_weak; *replaced says whether the link was registered already
    // (it now stands for obj).
    Status add_weak(void **link, const void *obj, bool *replaced);
    enum class LinkMove { moved, not_found, taken };
    LinkMove move_weak(void **from, void **to);

    // Finalizers run after the collection that finds them due (the
    // default), or on demand: invoke_finalizers runs them and `notify` is
    // called (outside the lock) after a collection that made some due.
    void set_finalize_on_demand(bool on, void (*notify)());
    size_t invoke_finalizers();
    bool finalizers_due();

    // No collection at all while disabled (counted: each disable() needs an enable()).
    void disable() { disabled_.fetch_add(1); }
    void enable() { disabled_.fetch_sub(1); }
    bool disabled() const { return disabled_.load() > 0; }
    // Collects if allocation since the last collection calls for it.
    bool collect_if_due();
    // Called at every step of each collection with the heap's lock held
    // (between world_stopped and restart_world, with the world stopped): it
    // must not allocate or take locks.
    // A concurrent full collection (GcConfig::concurrent) starts with a
    // stop of its own: marking_concurrently follows its restart, the
    // markers running; the collection that finishes it sends the rest.
    enum class Event { start, stop_world, world_stopped, mark_start, mark_end, sweep_start, sweep_end,
                       restart_world, world_restarted, end, marking_concurrently };
    void set_event_hook(void (*hook)(Event, void *), void *arg);

    // New objects go to `ctx`, whichever thread allocates them (nullptr:
    // the calling thread's context).  A routed GPU program that uses
    // bdwgc's API knows no contexts: its own launches, in the program
    // context, release the objects it hands them only if they are there.
    void allocate_in(Context *ctx) { fixed_context_.store(ctx, std::memory_order_release); }

    // The heap never grows past `bytes` (0: the window is the limit).
    void set_max_heap(uint64_t bytes);
    // Room for `bytes` more before a collection is due: false when the heap
    // limit does not allow it.
    bool expand(uint64_t bytes);
    // Allocation is counted by the page (small objects) and the object (large).
    struct Usage {
        uint64_t heap_bytes = 0, live_bytes = 0, allocated_bytes = 0, allocated_since_collection = 0, collections = 0;
        uint64_t abandoned = 0;  // collections that freed nothing (device_copies_stale, mark stack overflow)
        uint64_t concurrent = 0;  // full collections marked while the world ran, finished or not
        uint64_t assists = 0;         // times a thread that allocated helped their markers
        uint64_t assisted_bytes = 0;  // what those threads marked
    };
    void usage(Usage *out);
    // Whether p is in a chunk of the heap (an object or not).
    bool in_heap(const void *p) const;
    // Whether p is in a range added with add_roots.
    bool in_roots(const void *p);
    // Removes every range added with add_roots that lies within [lo, hi).
    size_t remove_roots_within(const void *lo, const void *hi);
    struct ObjectInfo {
        void *base = nullptr;
        size_t size = 0;
        bool pointers = false;
        unsigned layout = 0;
        bool pinned = false;
    };
    // The allocated object that holds p; false if none.
    bool describe(const void *p, ObjectInfo *out);
    // Runs fn with the heap's lock held: no collection starts meanwhile, and
    // weak links are not cleared under fn's feet.  fn must not allocate.
    void *with_lock(void *(*fn)(void *), void *arg);

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
    Context *allocating_context(size_t *n);
    void *alloc_slow(size_t n, bool pointers);
    void use_context(ThreadCache &tc, Context *ctx);
    bool refill(ThreadCache &tc, CacheSlot &s, unsigned cls, bool pointers, unsigned layout = 0);
    void *alloc_large(ThreadCache &tc, size_t n, bool pointers, bool *zero);
    void flush(ThreadCache &tc);
    ThreadCache *cache();
    static void thread_exit(void *tc);
    bool due() const;
    void before_taking(ThreadCache &tc);
    uint64_t due_bytes() const;  // what handed_out reaches when a collection is due

    // A full collection's marking while the world runs (concurrent.cpp).
    void maybe_start_concurrent();
    bool start_concurrent();
    void arm_live(Chunk &c);
    void end_concurrent_marking();
    bool concurrent_marking_done() const;
    bool take_assist();
    void assist_if_asked();
    // Frees arenas with no object left, and huge chunks freed, unless
    // markers running while the world runs may read them: then the
    // collection that finishes their work does.
    void forget_dead_arenas();
    void release_huge(Chunk *c);
    void note_pause(uint64_t ns, bool full);

    // With the heap's lock held.
    void collect_locked(Scope scope = Scope::automatic);
    void drop_stale_launches();
    // What every collection (and a concurrent one's start) reads before it
    // stops the world: launches still holding objects, the loaded objects'
    // data segments as roots.
    void gather_roots();
    Status start_markers();
    void take_device_copies();
    void read_device_blocks(Chunk &c);
    bool device_copy_outdated(const Chunk &c) const;
    bool device_copies_stale() const;
    void snapshot_live(bool full);
    void snapshot_chunk(Chunk &c, bool full);
    bool scan_written();
    bool kernels_wrote_most() const;
    void arm_survivors(bool full);
    void trace_old(Chunk &c, uintptr_t lo, uintptr_t hi);
    void mark_roots(Marker &m);
    void mark_kernel_reachable(Marker &m);
    void mark_all();
    void steer_markers();
    static void program_cpus(cpu_set_t *out);
    void settle_weak_links();
    void find_ready();
    void push_children(uintptr_t obj, bool skip_self);
    void event(Event e) {
        if (event_hook_) event_hook_(e, event_arg_);
    }
    // What one marker's share of a sweep found, for marker 0 to apply.
    struct alignas(128) SweepTally {
        uint64_t freed = 0, live = 0;
        RangeBuffer emptied;  // [first Page *, past the last): pages to make empty
        RangeBuffer dead;     // [Chunk *, +1): huge chunks whose object died
    };
    void sweep();
    void sweep_chunk(Chunk &c, SweepTally &t);
    void after_world_restarts(bool full);
    bool marked(uintptr_t obj);
    bool object_at(uintptr_t p, Chunk **c, Page **page, uintptr_t *start, size_t *size, unsigned *idx);
    Status live_object(void *obj, const char *what, Chunk **c = nullptr, Page **page = nullptr, unsigned *idx = nullptr);
    void run_finalizers();
    // `released`: run_due's own free of a released object after its callback.
    Status free_object(void *obj, bool released);
    // Runs the callbacks that are due; `asked`, those waiting for the
    // program to ask as well (finalization on demand).
    size_t run_due(bool asked);
    bool runs_now(const Callback &cb) const { return !cb.on_demand || !on_demand_.load(std::memory_order_relaxed); }
    // Work the marker threads share (markers.cpp), the world stopped.
    enum class Job : uint8_t { mark, snapshot_full, snapshot_minor, sweep };
    static void *marker_main(void *self);
    // Runs job on every marker, this thread as marker 0; returns when all are done.
    void run_on_markers(Job job);
    // Starts marking on markers 1 and up, and returns; wait_for_markers
    // waits until they are done.
    void mark_in_background();
    void wait_for_markers();
    void do_job(unsigned marker);

    // Kernel heaps whose context synced since they opened become ordinary
    // objects (all of them, or ctx's); with the heap's lock held, the world running.
    void adopt_finished(Context *only);
    bool adopt_kernel_heap(KernelArena &a);
    void discard_kernel_heap(KernelArena &a);

    Manager &manager_;
    AddressSpace &space_;
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
    // A concurrent full collection's markers are running (or done, not
    // yet finished by a collection).
    bool marking_ = false;
    bool finishing_ = false;  // this collection finishes one
    // The last collection asked for could not stop the world (adsmGcCollect
    // says so), and why.
    Status unstoppable_ = adsmSuccess;
    std::string unstoppable_why_;
    // A chunk's device copy could not be read for this collection (or the
    // concurrent marking it finishes): it frees nothing.
    bool device_copy_missing_ = false;
    // A thread that allocates is helping the markers, as marker 0.
    std::atomic<bool> assisting_{false};
    // Huge chunks freed meanwhile: given back once no marker may read them.
    std::vector<Chunk *> freed_while_marking_;
    RangeBuffer roots_;       // data segments, taken before the world stops
    LoadedObjects loaded_;    // the objects they belong to
    RangeBuffer threads_;     // stacks and registers, while it is stopped
    RangeBuffer ready_;       // [object, +1): its finalizer is due; [object, +2): its release callback
    RangeBuffer links_;       // [link, +1): weak links to clear once the world runs
    RangeBuffer dropped_;     // [link, +1): weak links to forget
    RangeBuffer written_;     // pages written since the last collection
    bool need_full_ = true;   // no collection, or no marks to trust, since the last full one
    unsigned since_full_ = 0; // minor collections since the last full one
    uint64_t live_at_full_ = 0;  // live_bytes_ after the last full one
    uint64_t cycle_peak_ = 0;    // the heap's largest size since the last full one
    std::vector<Chunk *> dead_chunks_;
    std::vector<Callback> due_finalizers_;  // (run outside the lock)
    std::vector<std::pair<uintptr_t, Callback>> due_calls_;
    // due_calls_ has entries: read without the lock, so that the allocations
    // that found no free object do not each take the heap's lock again.
    std::atomic<bool> calls_due_{false};
    std::vector<std::pair<uintptr_t, Callback>> running_;  // the batch run_finalizers is calling
    std::vector<uintptr_t> due_frees_;
    // Released objects found unreachable and not yet freed: only run_due
    // frees them, after their callbacks (adsmGcFree of one is a double
    // free, and must not free another object that took its place).
    std::unordered_set<uintptr_t> releasing_;
    uint64_t live_bytes_ = 0;

    // Marker threads: marker 0 is the collecting thread.
    MarkPool pool_;
    std::vector<std::unique_ptr<Marker>> markers_;
    std::vector<pid_t> marker_tids_;
    std::atomic<uint32_t> job_epoch_{0};  // bumped for each job: a futex word
    std::atomic<unsigned> markers_done_{0};
    std::atomic<unsigned> markers_up_{0};     // started (hands out their indices)
    std::atomic<unsigned> markers_ready_{0};  // with their thread ids published
    pid_t markers_pid_ = 0;
    std::vector<pthread_t> marker_threads_;  // markers 1 and up
    cpu_set_t marker_cpus_;                  // where they may run
    int steered_from_ = -1;                  // the CPU they were last kept off
    Job job_ = Job::mark;                    // set before job_epoch_ moves
    std::atomic<size_t> next_chunk_{0};      // the next of heap_.chunks() a marker takes
    std::vector<SweepTally> tallies_;        // one per marker

    struct {
        std::atomic<uint64_t> allocated{0}, collections{0}, last_pause{0}, max_pause{0}, total_pause{0}, freed{0},
            finalizers{0}, weak_cleared{0}, kept_for_kernels{0}, minor_collections{0}, minor_pause{0},
            max_minor_pause{0}, max_full_pause{0}, written_pages{0}, abandoned{0}, concurrent{0},
            assists{0}, assisted_bytes{0};
    } stats_;
    std::atomic<bool> finalizing_{false};
    std::atomic<bool> on_demand_{false};
    std::atomic<Context *> fixed_context_{nullptr};  // allocate_in
    std::atomic<bool> notify_due_{false};  // a collection made finalizers due since the last notice
    std::atomic<void (*)()> notify_{nullptr};
    std::atomic<int> disabled_{0};
    void (*event_hook_)(Event, void *) = nullptr;
    void *event_arg_ = nullptr;
    uint64_t handed_out_before_ = 0;  // Heap::handed_out of every collection before the last
};

}  // namespace adsm::gc
