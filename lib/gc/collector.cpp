#include "gc/collector.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "backend/device.h"
#include "gc/roots.h"
#include "memory/manager.h"
#include "memory/region_table.h"
#include "os/clock.h"
#include "os/raw_syscall.h"
#include "os/uffd.h"
#include "support/log.h"
#include "support/stats.h"

namespace adsm::gc {

__thread ThreadCache *tls_cache __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
pid_t gettid_raw() { return static_cast<pid_t>(os::raw_syscall(SYS_gettid)); }
}  // namespace

Collector::Collector(Manager &manager, RegionTable &table, AddressSpace &space, GcConfig config)
    : manager_(manager),
      space_(space),
      config_(config),
      heap_(manager, table, space, HeapLimits{config.max_heap}) {}

bool Collector::generational() const {
    return config_.writes && config_.writes->usable();
}

Status Collector::init() {
    if (Status s = heap_.init(); s != adsmSuccess) return s;
    if (Status s = World::init(); s != adsmSuccess) return s;
    if (pthread_key_create(&exit_key_, &Collector::thread_exit) != 0)
        return fail(adsmErrorInitialization, "collector: no thread key left");
    if (!config_.markers) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        config_.markers = n < 1 ? 1 : n > 8 ? 8 : static_cast<unsigned>(n);
    }
    return adsmSuccess;
}

// ---- allocation

namespace {
Collector *g_exiting_owner = nullptr;  // for thread_exit, which gets only the cache
}

ThreadCache *Collector::cache() {
    if (tls_cache) return tls_cache;
    ThreadCache *tc = new (std::nothrow) ThreadCache;
    if (!tc) return nullptr;
    tc->tid = gettid_raw();
    g_exiting_owner = this;
    pthread_setspecific(exit_key_, tc);
    tc->next = caches_;
    if (caches_) caches_->prev = tc;
    caches_ = tc;
    tls_cache = tc;
    return tc;
}

void Collector::thread_exit(void *p) {
    auto *tc = static_cast<ThreadCache *>(p);
    // A fork child's thread ending: the cache is the parent's, which the
    // child dropped (gc::tls_cache), and its heap's lock may have been held
    // by a thread that is not there.
    if (tls_cache != tc) return;
    Collector *self = g_exiting_owner;
    std::lock_guard<std::mutex> lock(self->heap_.lock());
    self->flush(*tc);
    if (tc->prev) tc->prev->next = tc->next;
    else self->caches_ = tc->next;
    if (tc->next) tc->next->prev = tc->prev;
    tls_cache = nullptr;
    delete tc;
}

void Collector::flush(ThreadCache &tc) {
    auto give_back = [&](CacheSlot &s) {
        if (s.page) heap_.return_page(s.page, s.mask);
        s = CacheSlot{};
    };
    for (auto &byclass : tc.slots)
        for (CacheSlot &s : byclass) give_back(s);
    for (CacheSlot *slots : tc.laid_out)
        for (unsigned c = 0; slots && c < kClasses; ++c) give_back(slots[c]);
}

void Collector::context_switched() {
    ThreadCache *tc = tls_cache;
    if (!tc) return;
    std::lock_guard<std::mutex> lock(heap_.lock());
    flush(*tc);
    tc->ctx = nullptr;
}

uint64_t Collector::due_bytes() const {
    uint64_t grown = static_cast<uint64_t>(config_.growth * static_cast<double>(live_bytes_));
    return grown > config_.trigger ? grown : config_.trigger;
}

bool Collector::due() const {
    if (!config_.automatic) return false;
    if (concurrent_marking_done()) return true;
    // Markers still at work are helped up to twice the usual point (take_assist).
    return heap_.handed_out >= (marking_ ? 2 : 1) * due_bytes();
}

// Before an allocation takes memory from the heap, its lock held.
void Collector::before_taking(ThreadCache &tc) {
    if (due()) collect_locked();
    else if (take_assist()) tc.assist = true;
    else maybe_start_concurrent();
}

bool Collector::refill(ThreadCache &tc, CacheSlot &s, unsigned cls, bool pointers, unsigned layout) {
    const SizeClass &sc = kSizeClasses[cls];
    if (s.page) {
        // What a collection freed on the page meanwhile.
        bool any = false;
        for (unsigned w = 0; w < kMaskWords; ++w) {
            s.mask[w] |= s.page->swept[w].exchange(0, std::memory_order_acq_rel);
            any |= s.mask[w] != 0;
        }
        if (any) return true;
        heap_.return_page(s.page, s.mask);
        s = CacheSlot{};
    }
    before_taking(tc);
    Page *p = heap_.take_page(*tc.space, cls, pointers, layout);
    if (!p && config_.automatic && heap_.handed_out) {
        collect_locked(Scope::full);  // the heap is at its limit: old garbage counts too
        p = heap_.take_page(*tc.space, cls, pointers, layout);
    }
    if (!p) return false;
    s.page = p;
    s.base = p->chunk->page_address(p);
    s.size = sc.size;
    unsigned n = 0;
    for (unsigned w = 0; w < kMaskWords; ++w) {
        s.mask[w] = p->free[w];
        p->free[w] = 0;
        n += popcount(s.mask[w]);
    }
    p->cache_mask = s.mask;
    heap_.handed_out += uint64_t(n) * sc.size;
    return true;
}

void *Collector::alloc_large(ThreadCache &tc, size_t n, bool pointers, bool *zero) {
    before_taking(tc);
    void *p = heap_.alloc_large(*tc.space, n, pointers, zero);
    if (!p && config_.automatic && heap_.handed_out) {
        collect_locked(Scope::full);  // the heap is at its limit: old garbage counts too
        p = heap_.alloc_large(*tc.space, n, pointers, zero);
    }
    return p;
}

// The context for an allocation of *n bytes (0 becomes 1, a unique
// address, as malloc(0) gives): the calling thread's, unless allocate_in
// says otherwise; nullptr with the reason.
Context *Collector::allocating_context(size_t *n) {
    if (*n == 0) *n = 1;
    if (*n > space_.size()) {
        fail(adsmErrorMemoryAllocation, "collector: %zu bytes is more than the shared window holds", *n);
        return nullptr;
    }
    Context *ctx = fixed_context_.load(std::memory_order_acquire);
    if (!ctx) ctx = manager_.current();
    if (!ctx) fail(adsmErrorMemoryAllocation, "collector: cannot create a context");
    return ctx;
}

void *Collector::alloc_slow(size_t n, bool pointers) {
    Context *ctx = allocating_context(&n);
    if (!ctx) return nullptr;
    void *p = nullptr;
    size_t clear = 0;
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        ThreadCache *tc = cache();
        if (!tc) {
            fail(adsmErrorMemoryAllocation, "collector: no memory for a thread cache");
            return nullptr;
        }
        use_context(*tc, ctx);
        if (n <= kMaxSmall) {
            unsigned cls = size_class_of(n);
            CacheSlot &s = tc->slots[pointers][cls];
            p = s.pop();
            if (!p && refill(*tc, s, cls, pointers)) p = s.pop();
            clear = pointers ? s.size : 0;
        } else {
            bool zero = false;
            p = alloc_large(*tc, n, pointers, &zero);
            clear = zero ? n : 0;
        }
        if (p) stats_.allocated.fetch_add(n, std::memory_order_relaxed);
    }
    assist_if_asked();
    run_finalizers();
    if (!p) {
        fail(adsmErrorMemoryAllocation, "collector: the heap cannot grow to hold %zu more bytes (%llu bytes of chunks%s)", n,
             static_cast<unsigned long long>(heap_.heap_bytes()), config_.max_heap ? ", ADSM_GC_MAX_HEAP" : "");
        return nullptr;
    }
    if (clear) memset(p, 0, clear);
    return p;
}

void Collector::use_context(ThreadCache &tc, Context *ctx) {
    uint64_t calls = ctx->calls.load(std::memory_order_acquire);
    if (tc.ctx != ctx || calls != tc.calls_seen) {
        // A launch since the pages were taken may have handed them to the device.
        if (tc.ctx) flush(tc);
        tc.ctx = ctx;
        tc.space = heap_.space_for(ctx);
        tc.calls_seen = calls;
    }
}

// ---- objects

bool Collector::object_at(uintptr_t a, Chunk **cp, Page **pp, uintptr_t *start, size_t *size, unsigned *idx) {
    Chunk *c = heap_.chunk_of(a);
    if (!c || a - c->base >= c->bytes) return false;
    Page *p = c->page_of(a);
    if (p->kind == PageKind::tail) p = &c->pages[p->head];
    if (p->kind == PageKind::large) {
        uintptr_t s = c->page_address(p);
        if (a - s >= p->bytes) return false;
        *cp = c, *pp = p, *start = s, *size = p->bytes, *idx = 0;
        return true;
    }
    if (p->kind == PageKind::kernel) {
        // Objects of a heap still open are its kernels', not yet the program's.
        KernelArena *arena = p->arena;
        uintptr_t s;
        size_t n;
        if (!arena || !arena->adopted() || !arena->object_at(a, &s, &n)) return false;
        *cp = c, *pp = c->page_of(s), *start = s, *size = n, *idx = 0;
        return true;
    }
    if (p->kind != PageKind::small) return false;
    const SizeClass &sc = kSizeClasses[p->cls];
    unsigned i = object_index(static_cast<uint32_t>(a & (kPageBytes - 1)), sc);
    if (i >= sc.objects) return false;
    uint64_t bit = uint64_t(1) << (i & 63);
    uint64_t free = p->cache_mask ? p->cache_mask[i >> 6] | p->swept[i >> 6].load(std::memory_order_relaxed)
                                  : p->free[i >> 6];
    if (free & bit) return false;
    *cp = c, *pp = p, *start = (a & ~(uintptr_t(kPageBytes) - 1)) + uintptr_t(i) * sc.size, *size = sc.size, *idx = i;
    return true;
}

bool Collector::find(const void *p, void **base, size_t *size) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    Chunk *c;
    Page *page;
    uintptr_t s;
    unsigned i;
    if (!object_at(reinterpret_cast<uintptr_t>(p), &c, &page, &s, size, &i)) return false;
    *base = reinterpret_cast<void *>(s);
    return true;
}

Status Collector::live_object(void *obj, const char *what, Chunk **cp, Page **pp, unsigned *ip) {
    Chunk *c;
    Page *page;
    uintptr_t s;
    size_t size;
    unsigned i;
    uintptr_t a = reinterpret_cast<uintptr_t>(obj);
    if (!obj) return fail(adsmErrorInvalidValue, "%s: the object is NULL", what);
    if (!object_at(a, &c, &page, &s, &size, &i)) {
        if (heap_.chunk_of(a))
            return fail(adsmErrorInvalidPointer, "%s: %p is not an allocated collected object (freed already?)", what, obj);
        return fail(adsmErrorInvalidPointer, "%s: %p is not in the collected heap (it did not come from adsmGcAlloc)",
                    what, obj);
    }
    if (s != a)
        return fail(adsmErrorInvalidPointer, "%s: %p points %zu bytes into the object at %p; pass its start", what, obj,
                    static_cast<size_t>(a - s), reinterpret_cast<void *>(s));
    if (cp) *cp = c;
    if (pp) *pp = page;
    if (ip) *ip = i;
    return adsmSuccess;
}

Status Collector::free_object(void *obj, bool released) {
    if (!obj) return adsmSuccess;
    bool huge = false;
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        Chunk *c;
        Page *p;
        unsigned i;
        uintptr_t a = reinterpret_cast<uintptr_t>(obj);
        if (released) releasing_.erase(a);  // (whatever comes of it: the mark goes)
        if (Status s = live_object(obj, "adsmGcFree", &c, &p, &i); s != adsmSuccess) return s;
        if (!released && !releasing_.empty() && releasing_.count(a))
            return fail(adsmErrorInvalidPointer,
                        "adsmGcFree: %p was given to adsmGcRelease and is unreachable; the collector frees it after "
                        "its callback (double free?)",
                        obj);
        registry_.forget(a);
        if (p->kind == PageKind::kernel) {
            KernelArena *arena = p->arena;
            arena->drop_object(a);
            if (arena->release_pages(heap_)) {
                arena->dead = true;
                huge = c->huge;
                forget_dead_arenas();
            }
        } else if (p->kind == PageKind::large) {
            if (c->huge) {
                huge = true;
                p->live[0] = 0;
                p->mark[0].store(0, std::memory_order_relaxed);
                p->kind = PageKind::empty;
            } else {
                uint32_t h = c->page_index(p), n = p->npages;
                for (uint32_t k = 0; k < n; ++k) heap_.make_empty(*c, c->pages[h + k]);
            }
        } else if (p->cache_mask) {
            p->mark[i >> 6].fetch_and(~(uint64_t(1) << (i & 63)), std::memory_order_relaxed);
            ThreadCache *tc = tls_cache;
            CacheSlot *mine = tc ? &tc->slots[p->pointers][p->cls] : nullptr;
            if (mine && mine->page == p) mine->mask[i >> 6] |= uint64_t(1) << (i & 63);
            else p->swept[i >> 6].fetch_or(uint64_t(1) << (i & 63), std::memory_order_acq_rel);
        } else {
            p->mark[i >> 6].fetch_and(~(uint64_t(1) << (i & 63)), std::memory_order_relaxed);
            p->free[i >> 6] |= uint64_t(1) << (i & 63);
            bool all = true;
            for (unsigned w = 0; w < kMaskWords; ++w) all &= p->free[w] == Heap::full_mask(kSizeClasses[p->cls], w);
            if (all) heap_.make_empty(*c, *p);
            else heap_.list_page(p);
        }
        stats_.freed.fetch_add(1, std::memory_order_relaxed);
        if (huge) release_huge(c);
    }
    return adsmSuccess;
}

// ---- registrations

Status Collector::add_roots(void *start, size_t n) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(start);
    if (!start || !n) return fail(adsmErrorInvalidValue, "adsmGcAddRoots: an empty range (%p, %zu bytes)", start, n);
    if (lo + n < lo) return fail(adsmErrorSizeOverflow, "adsmGcAddRoots: %p + %zu bytes wraps around", start, n);
    std::lock_guard<std::mutex> lock(heap_.lock());
    registry_.roots[lo] = lo + n;
    return adsmSuccess;
}

Status Collector::remove_roots(void *start, size_t n) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(start);
    std::lock_guard<std::mutex> lock(heap_.lock());
    auto it = registry_.roots.find(lo);
    if (it == registry_.roots.end() || it->second != lo + n)
        return fail(adsmErrorInvalidValue, "adsmGcRemoveRoots: [%p, +%zu) was not registered as a root range", start, n);
    registry_.roots.erase(it);
    return adsmSuccess;
}

Status Collector::set_finalizer(void *obj, adsmGcCallback fn, void *data) {
    return set_finalizer(obj, Callback{fn, data}, nullptr);
}

Status Collector::set_finalizer(void *obj, const Callback &cb, Callback *old) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (Status s = live_object(obj, "adsmGcRegisterFinalizer"); s != adsmSuccess) return s;
    uintptr_t a = reinterpret_cast<uintptr_t>(obj);
    auto it = registry_.finalizers.find(a);
    if (old) *old = it != registry_.finalizers.end() ? it->second : Callback{};
    if (cb.fn) registry_.finalizers[a] = cb;
    else if (it != registry_.finalizers.end()) registry_.finalizers.erase(it);
    return adsmSuccess;
}

Status Collector::add_weak(void **link, const void *obj) { return add_weak(link, obj, nullptr); }

Status Collector::add_weak(void **link, const void *obj, bool *replaced) {
    if (!link) return fail(adsmErrorInvalidValue, "adsmGcRegisterWeak: the link is NULL");
    if (reinterpret_cast<uintptr_t>(link) % alignof(void *))
        return fail(adsmErrorInvalidValue, "adsmGcRegisterWeak: the link %p is not aligned to a pointer", static_cast<void *>(link));
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (Status s = live_object(const_cast<void *>(obj), "adsmGcRegisterWeak"); s != adsmSuccess) return s;
    auto [it, added] = registry_.weak.insert_or_assign(reinterpret_cast<uintptr_t>(link), reinterpret_cast<uintptr_t>(obj));
    if (replaced) *replaced = !added;
    return adsmSuccess;
}

Status Collector::remove_weak(void **link) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (!registry_.weak.erase(reinterpret_cast<uintptr_t>(link)))
        return fail(adsmErrorInvalidValue, "adsmGcUnregisterWeak: %p is not a registered weak link", static_cast<void *>(link));
    return adsmSuccess;
}

Status Collector::pin(void *obj) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (Status s = live_object(obj, "adsmGcPin"); s != adsmSuccess) return s;
    ++registry_.pins[reinterpret_cast<uintptr_t>(obj)];
    return adsmSuccess;
}

Status Collector::unpin(void *obj) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (Status s = live_object(obj, "adsmGcUnpin"); s != adsmSuccess) return s;
    auto it = registry_.pins.find(reinterpret_cast<uintptr_t>(obj));
    if (it == registry_.pins.end()) return fail(adsmErrorInvalidValue, "adsmGcUnpin: %p is not pinned", obj);
    if (--it->second == 0) registry_.pins.erase(it);
    return adsmSuccess;
}

Status Collector::release(void *obj, adsmGcCallback fn, void *data) {
    if (!fn) return fail(adsmErrorInvalidValue, "adsmGcRelease: the callback is NULL");
    std::lock_guard<std::mutex> lock(heap_.lock());
    if (Status s = live_object(obj, "adsmGcRelease"); s != adsmSuccess) return s;
    uintptr_t a = reinterpret_cast<uintptr_t>(obj);
    if (registry_.releases.count(a))
        return fail(adsmErrorInvalidValue, "adsmGcRelease: %p was released already", obj);
    registry_.releases[a] = Callback{fn, data};
    return adsmSuccess;
}

void Collector::stats(adsmGcStats *out) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    out->heap_bytes = heap_.heap_bytes();
    out->live_bytes = live_bytes_;
    out->allocated_bytes = stats_.allocated.load();
    out->collections = stats_.collections.load();
    out->last_pause_ns = stats_.last_pause.load();
    out->max_pause_ns = stats_.max_pause.load();
    out->total_pause_ns = stats_.total_pause.load();
    out->objects_freed = stats_.freed.load();
    out->finalizers_run = stats_.finalizers.load();
    out->weak_cleared = stats_.weak_cleared.load();
    out->kept_for_kernels = stats_.kept_for_kernels.load();
    out->minor_collections = stats_.minor_collections.load();
    out->minor_pause_ns = stats_.minor_pause.load();
    out->max_minor_pause_ns = stats_.max_minor_pause.load();
    out->max_full_pause_ns = stats_.max_full_pause.load();
    out->written_pages = stats_.written_pages.load();
    out->generational = generational();
}

Status Collector::note_launch(Context *ctx, const void *args, size_t n, uint64_t *synced_limit) {
    *synced_limit = UINT64_MAX;
    // Only arguments that point into the heap matter; most launches have none.
    bool any = false;
    const uint8_t *b = static_cast<const uint8_t *>(args);
    for (size_t off = 0; off + sizeof(uintptr_t) <= n && !any; off += sizeof(uintptr_t)) {
        uintptr_t w;
        memcpy(&w, b + off, sizeof w);
        any = heap_.chunk_of(w) != nullptr;
    }
    // (Only this context's open heaps count: with any context's, every
    // launch waited for the collections meanwhile, for good once a thread
    // left a heap open and never synced.)
    if (!any && ctx->open_kernel_heaps.load(std::memory_order_acquire) == 0) return adsmSuccess;
    // Another context's chunk is that context's calls' to release: this
    // kernel would read the device's old copy of what the CPU wrote.  (One
    // copy on an integrated device: nothing to release.)
    auto refuse_foreign = [&](uintptr_t w) -> Status {
        const Chunk *c = heap_.chunk_of(w);
        if (!c || c->owner == ctx || ctx->device->integrated()) return adsmSuccess;
        if (ctx == manager_.existing_program_context())
            return fail(adsmErrorInvalidValue,
                        "collected object %p belongs to a thread's context (adsmGcAlloc), which the program's own "
                        "GPU launches do not release: launch its kernels with adsmCall in that context (a program "
                        "using bdwgc's API has its objects where its own launches release them)",
                        reinterpret_cast<void *>(w));
        return fail(adsmErrorInvalidValue,
                    "collected object %p was allocated in another context than this launch's, whose calls alone move "
                    "it to the device: allocate it in this context (adsmSetContext)",
                    reinterpret_cast<void *>(w));
    };
    std::lock_guard<std::mutex> lock(heap_.lock());
    // A kernel heap whose context synced closes before this launch hands
    // its chunk to the device again, so that no later kernel allocates there.
    adopt_finished(ctx);
    if (!any) return adsmSuccess;
    for (size_t off = 0; off + sizeof(uintptr_t) <= n; off += sizeof(uintptr_t)) {
        uintptr_t w;
        memcpy(&w, b + off, sizeof w);
        KernelArena *a = kernel_heaps_.find(heap_, w);
        if (!a) {
            if (Status s = refuse_foreign(w); s != adsmSuccess) return s;
            continue;
        }
        // Finished but not adopted yet: a kernel of the context holds its chunk.
        if (a->adopted() || a->finished())
            return fail(adsmErrorInvalidValue,
                        "kernel heap %p was closed by its context's sync: a heap serves only the kernels launched "
                        "before that sync; create another for this launch", reinterpret_cast<void *>(w));
        if (a->ctx != ctx)
            return fail(adsmErrorInvalidValue,
                        "kernel heap %p belongs to another context: launch its kernels in the context that created it",
                        reinterpret_cast<void *>(w));
        // A sync past its creation, in another thread before this launch's
        // call, would close it: the call checks under the context's lock.
        if (a->state == KernelArena::State::open && a->created_calls < *synced_limit)
            *synced_limit = a->created_calls;
    }
    // Records otherwise wait for the next collection to go: a program that
    // launches often between collections would pile them up.
    if (launches_.size() >= 64) drop_stale_launches();
    launches_.push_back(LaunchRecord{ctx, ctx->calls.load() + 1, std::vector<uint8_t>(b, b + n)});
    return adsmSuccess;
}

// ---- finalizers and callbacks, outside the lock

void Collector::run_finalizers() {
    bool fresh = notify_due_.exchange(false);
    run_due(false);
    if (void (*notify)() = notify_.load(); fresh && notify && on_demand_.load(std::memory_order_relaxed)) notify();
}

size_t Collector::run_due(bool asked) {
    if (!asked && !calls_due_.load(std::memory_order_acquire)) return 0;
    if (finalizing_.exchange(true)) return 0;  // one thread runs them; a finalizer that allocates does not recurse
    size_t ran = 0;
    for (;;) {
        // The batch stays where collections find it (mark_roots) until its
        // callbacks have returned: a collection meanwhile must not free the
        // objects still waiting their turn.
        std::vector<uintptr_t> frees;
        {
            std::lock_guard<std::mutex> lock(heap_.lock());
            if (asked) {
                running_.swap(due_calls_);
            } else {
                // Those waiting for the program to ask stay, kept alive there.
                size_t keep = 0;
                for (auto &call : due_calls_) {
                    if (runs_now(call.second)) running_.push_back(call);
                    else due_calls_[keep++] = call;
                }
                due_calls_.resize(keep);
            }
            calls_due_.store(false, std::memory_order_relaxed);
            frees.swap(due_frees_);
        }
        if (running_.empty()) break;
        for (auto &[obj, cb] : running_) {
            cb.fn(reinterpret_cast<void *>(obj), cb.data);
            stats_.finalizers.fetch_add(1, std::memory_order_relaxed);
            ++ran;
        }
        for (uintptr_t obj : frees) (void)free_object(reinterpret_cast<void *>(obj), true);
        std::lock_guard<std::mutex> lock(heap_.lock());
        running_.clear();
    }
    finalizing_.store(false);
    return ran;
}

Status Collector::collect(Scope scope) {
    bool stopped;
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        unstoppable_ = adsmSuccess;
        collect_locked(scope);
        stopped = unstoppable_ == adsmSuccess;
    }
    run_finalizers();
    if (stopped) return adsmSuccess;
    std::lock_guard<std::mutex> lock(heap_.lock());
    return fail(unstoppable_, "collector: could not stop the world, so nothing was collected: %s",
                unstoppable_why_.c_str());
}

}  // namespace adsm::gc
