// A context is a virtual accelerator: a stream of kernel calls, the regions
// those calls release and acquire, and the lock that orders them.  Each host
// thread gets its own on first use (as in GMAC's HPE model); threads share one
// by binding to it.  A context lives while a thread is bound to it, a region
// belongs to it, or the thread it was created for is alive.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/device.h"
#include "memory/region.h"
#include "os/deferred_signals.h"
#include "os/futex_lock.h"
#include "protocols/shared_object.h"

namespace adsm {

struct Context : ReleaseGroup {
    // Calls, syncs, frees and the region list.  The fault handler takes it
    // too (a racing access waits for the kernels), so it is held only
    // through ContextGuard, with asynchronous signals held back.
    os::FutexLock mu;
    // Read without `mu` by the fault handler, hence atomic.
    std::atomic<uint64_t> calls{0};           // kernels launched, ever
    std::atomic<uint64_t> unsynced_calls{0};  // kernels launched since the last sync
    // Calls up to this number have finished and their objects are back on
    // the host.  Unlike calls - unsynced_calls, never ahead of the truth
    // while a launch is half-way (the collector reads it without `mu`).
    std::atomic<uint64_t> synced_calls{0};
    // The last call that released every object (adsmCall), and the objects
    // calls that named theirs (adsmCallWith) released since the last sync,
    // in order, with whether their kernel may write them.  Changed under
    // `mu`; the fault handler reads whole_call.
    std::atomic<uint64_t> whole_call{0};
    struct Released {
        Region *region;
        bool written;
    };
    std::vector<Released> released;
    // The last call whose kernel reached the device (its number in
    // `calls`).  A call whose launch failed released its objects all the
    // same (the next sync gives them back), but ran no kernel that a CPU
    // access could race.  Read without `mu` by the fault handler.
    std::atomic<uint64_t> launched_call{0};
    bool has_stream = false;
    StreamId stream = 0;
    // The collector's kernel heaps of this context not closed yet: only
    // while some are does a launch naming no collected object take the
    // collector's lock (to close those its last sync finished), which a
    // collection holds throughout.
    std::atomic<uint32_t> open_kernel_heaps{0};
    // adsmPrefetch to the host queued copies of its objects since its last
    // sync, which waits for them to land.
    std::atomic<bool> host_prefetches{false};
    // A kernel error seen by an implicit wait (adsmDeviceFree, a racing
    // CPU access), kept for the next adsmSync so that it is reported once.
    Status deferred = adsmSuccess;
    char deferred_detail[256] = {};

    // Identity in the context table; handles carry both.
    uint32_t slot = 0;
    uint32_t generation = 0;
    std::atomic<int> refs{0};
    // Of those, the ones threads hold (the thread it was made for, threads
    // bound to it): when the last such thread ends, nobody is left to sync.
    std::atomic<int> thread_refs{0};
    std::atomic<bool> live{false};

    // Whether a kernel of a call since the last sync may be running.
    bool kernels_may_run() const {
        return launched_call.load(std::memory_order_acquire) > synced_calls.load(std::memory_order_acquire);
    }
    // Between a call and the next sync, the regions that call released
    // belong to the device: every one that existed then, or the ones it
    // named.
    bool holds(const Region &r) const {
        if (unsynced_calls.load(std::memory_order_acquire) == 0 || r.birth_call >= calls.load(std::memory_order_acquire))
            return false;
        uint64_t synced = synced_calls.load(std::memory_order_acquire);
        return whole_call.load(std::memory_order_acquire) > synced ||
               r.named_call.load(std::memory_order_acquire) > synced;
    }
};

inline Context *Region::owner() const { return static_cast<Context *>(group); }

// The contexts whose locks this thread holds (two at most, ContextPairGuard).
// Read by the fault handler: a fault this thread takes while it holds the
// object's context's lock (a GPU driver reading the program's memory inside
// a launch) must not wait for that lock.
inline __attribute__((tls_model("initial-exec"))) thread_local const Context *t_locked_contexts[2] = {nullptr, nullptr};

inline bool holds_context_lock(const Context &c) { return t_locked_contexts[0] == &c || t_locked_contexts[1] == &c; }

// Holds a context's lock.  No asynchronous signal can run on this thread
// meanwhile: a handler of the program's that touched shared memory would
// fault into the runtime and wait for this very lock.
class ContextGuard {
public:
    explicit ContextGuard(Context &c) { lock(c); }
    ContextGuard() = default;  // holds nothing (yet): see lock()
    ~ContextGuard() { unlock(); }
    ContextGuard(const ContextGuard &) = delete;
    ContextGuard &operator=(const ContextGuard &) = delete;
    void lock(Context &c) {
        unlock();
        c.mu.lock();
        held(&c);
    }
    // Takes c's lock if no thread (this one included) holds it.
    bool try_lock(Context &c) {
        unlock();
        if (!c.mu.try_lock()) return false;
        held(&c);
        return true;
    }
    void unlock() {
        if (!c_) return;
        for (const Context *&slot : t_locked_contexts)
            if (slot == c_) {
                slot = nullptr;
                break;
            }
        c_->mu.unlock();
        c_ = nullptr;
    }

private:
    void held(Context *c) {
        c_ = c;
        for (const Context *&slot : t_locked_contexts)
            if (!slot) {
                slot = c;
                break;
            }
    }

    os::DeferredSignals deferred_;
    Context *c_ = nullptr;
};

// Two contexts' locks (either may be null, or both the same one), always in
// slot order: whatever holds two at once takes them through here, so no two
// threads can each hold one and wait for the other's.
class ContextPairGuard {
public:
    ContextPairGuard(Context *a, Context *b) {
        if (a == b) b = nullptr;
        if (a && b && b->slot < a->slot) std::swap(a, b);
        if (a) first_.lock(*a);
        if (b) second_.lock(*b);
    }

private:
    ContextGuard first_, second_;
};

}  // namespace adsm
