// Device memory behind a GPU's window, as every driver with a
// virtual-memory API makes it: physical allocations of the driver's
// granularity (2 MiB on current GPUs) mapped at the window's addresses.
// Allocations are page-sized, so several share a granule; a granule lives
// while any allocation overlaps it.  The driver's part (make, map, pin) is
// a GranuleDriver; the sharing, the undoing of half-made commits and the
// pinning policy are here, once for every driver.
//
// A granule's host mirror may be pinned too (registered with the driver
// through the runtime's alias, since the window address is the device's),
// so copies run at pinned speed; its pages stay put until the granule goes.
// By default mirror pages are pinned at their first use (the CPU's first
// fault in the object, else the first copy through the granule), not when
// they are backed: pinning makes every page it covers (about 375 us per MiB
// on an H100 host), and much of a mirror is never used (a grid whose halo
// rows alone the CPU writes).  Only pages of allocations are pinned, never
// a granule's free rest: a 400 KiB object alone in its granule pins 400 KiB,
// not 2 MiB.  The first fault or copy in a granule pins its allocated pages,
// a registration per run of them (not one per block).
//
// Several GPUs of one driver share one table (a process has one address
// space for all its GPUs): each granule is one GPU's memory (its owner, a
// GranuleDriver per GPU), host registrations serve them all, and a
// granule's memory can be handed over to another GPU at the same address.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/stats.h"
#include "support/status.h"

namespace adsm::gpu {

// When mirror granules are pinned (ADSM_CUDA_PIN).
enum class Pinning { lazy, eager, off };

class GranuleDriver {
public:
    virtual ~GranuleDriver() = default;
    // Makes device memory for [va, va+size) and maps it there, usable by
    // the device; all or nothing.  *handle is the driver's, for unback.
    virtual Status back(uintptr_t va, uint64_t size, uint64_t *handle) = 0;
    // Unmaps and frees what back made; false (said in the log) when the
    // driver would not unmap it: the memory stays, to be tried again.
    virtual bool unback(uintptr_t va, uint64_t size, uint64_t handle) = 0;
    // Pins host memory for copies; false when the driver cannot (copies
    // then go through pageable memory from then on).
    virtual bool pin(void *host, uint64_t size) = 0;
    virtual void unpin(void *host) = 0;
    // For a hand-over (Granules::hand_over), where the driver can: device
    // addresses outside the window to make the new memory at while the old
    // still holds the window's, and moving a mapping from there to `va`.
    virtual Status reserve_scratch(uint64_t size, uintptr_t *va);
    virtual void free_scratch(uintptr_t va, uint64_t size);
    virtual Status remap(uintptr_t from, uintptr_t va, uint64_t size, uint64_t handle);
    // Whether work the runtime queued on the device may still be running.
    // Where the driver's unmap waits for it (CUDA's cuMemUnmap does), a
    // granule no allocation uses any more waits mapped until it is over:
    // a collection that gives a chunk back must not wait for a kernel.
    virtual bool work_may_run() { return false; }

    // Granules of this driver's device in the table (Granules counts them).
    std::atomic<uint64_t> granules{0};
};

class Granules {
public:
    // Before init: when mirror granules are pinned.
    void set_pinning(Pinning p) { pinning_ = p; }
    // Before init: how many threads make the pages of a first use before
    // they are pinned (os/page_makers.h): a copy's granules, or at the CPU's
    // first fault in a granule, the granules of its object from there on
    // (kMakeAhead at most); 1: the pinning thread makes each granule's as it
    // pins it (ADSM_CUDA_PIN_THREADS).
    void set_page_makers(unsigned threads) { page_makers_ = threads ? threads : 1; }
    Pinning pinning() const { return pinning_; }
    // `pins` registers host memory (for every GPU sharing the table).
    void init(GranuleDriver *pins, uint64_t granularity, uintptr_t base, int host_fd, uint8_t *host_alias);
    bool initialized() const { return driver_ != nullptr; }

    // Backs and frees one granule of `owner`'s, so that the driver's one-time costs of its
    // first physical allocation and host registration (7 to 9 ms on an H100)
    // fall on start-up rather than on the program's first allocation; a
    // driver that cannot back the window fails here, before the program runs.
    Status warm_up(GranuleDriver *owner);

    // Backs [addr, addr+bytes) with `owner`'s device memory (null: the
    // pinning driver's, a table of one GPU); all or nothing.  A granule
    // another GPU holds is refused: objects of different GPUs lie granules
    // apart.
    Status commit(uintptr_t addr, uint64_t bytes, GranuleDriver *owner = nullptr);
    // Whether `bytes` more can fit `owner`'s device of `capacity` bytes: hopeless
    // requests fail before anything is mapped or pinned, in words that name
    // the back-end, the device and the driver's own code for it.
    Status room_for(uint64_t bytes, uint64_t capacity, const GranuleDriver *owner, const char *backend,
                    const char *device, const char *driver_code) const;
    // The device memory a commit of [addr, addr+bytes) makes: its granules
    // not backed yet, whole (an object across a granule boundary takes two,
    // one sharing a backed granule takes none there).  For room_for.
    uint64_t unbacked(uintptr_t addr, uint64_t bytes);
    // Lets go of `owner`'s share of [addr, addr+bytes); granules another
    // GPU holds are left alone.  The host pages stay (an evicted object's
    // host copy is its only one).
    void decommit(uintptr_t addr, uint64_t bytes, GranuleDriver *owner = nullptr);
    // `owner`'s device goes: lets go of every granule it holds, and once no
    // granule is left, of every host registration.
    void release(GranuleDriver *owner);
    // `owner`'s device goes without its driver being asked (it was lost):
    // its granules stay as they are, and nothing here calls its driver
    // again (other GPUs' commits look at idle granules).
    void abandon(const GranuleDriver *owner);
    // The host copy of [addr, addr+bytes) is garbage (its allocation was
    // freed): gives its pages back to the system, but for pinned ones.
    void forget_host(uintptr_t addr, uint64_t bytes);
    // Hands the granules of [addr, addr+bytes), all `from`'s and each
    // wholly the range's, over to `to` at the same addresses: `to`'s memory
    // is made at scratch addresses, copy(scratch, addr, bytes) fills it
    // from `from`'s, and it then replaces `from`'s in the window.  All or
    // nothing: a failure before the swap leaves `from`'s memory in place.
    // Counted as a device-to-device transfer of `bytes`.
    template <class Copy>
    Status hand_over(uintptr_t addr, uint64_t bytes, GranuleDriver *from, GranuleDriver *to, Copy copy);

    // Before a copy through host memory [host, host+n): pins the mirror
    // granules it touches that are not pinned yet (lazy pinning).  Memory
    // outside the mirror is the caller's, left as it is.
    void pin_for_copy(const void *host, size_t n);
    // Before the CPU uses window addresses [*start, *start + *len) of an
    // object at [lo, hi): pins the granules holding them, widens the range
    // to those granules (within the object) and returns whether the CPU
    // uses any of them for the first time.
    bool pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len);
    // Whether some backed granule has not been used by the CPU yet.  (Pages
    // allocated in a granule after its first use are pinned by their first
    // copy instead.)
    bool cpu_has_unseen() const { return unseen_.load(std::memory_order_relaxed) != 0; }

    uint64_t granularity() const { return granularity_; }
    uint64_t used() const { return granules_in_use_.load(std::memory_order_relaxed) * granularity_; }
    uint64_t used_by(const GranuleDriver *owner) const {
        return owner->granules.load(std::memory_order_relaxed) * granularity_;
    }
    bool pinned() const { return pinning_ != Pinning::off && !pin_failed_.load(std::memory_order_relaxed); }

private:
    static constexpr uint64_t kPage = 4096;
    // Bitmaps over a granule's pages.
    struct Granule {
        GranuleDriver *owner = nullptr;
        uint64_t handle = 0;
        uint32_t users = 0;
        bool cpu_seen = false;         // the CPU has faulted in it (pin_for_cpu)
        bool has_unpinned = false;     // allocated pages not pinned yet (counted in unpinned_)
        bool made = false;             // make_pages made its allocated pages
        std::vector<uint64_t> used;    // pages of allocations
        std::vector<uint64_t> pinned;  // pages registered with the driver
    };
    // Host pages registered with the driver in one call, which may span
    // granules: each call costs up to about 0.1 ms on an H100 host besides
    // its pages (made pages of a 2 MiB granule registered alone, of 64 MiB
    // in one call: 87-141 and 77-98 us per MiB), and a first use of an
    // object pins all its granules at once.
    // A registration is undone only when every granule it spans is gone;
    // until then a gone granule's pages in it stay in the memfd, pinned, and
    // a granule made there again finds them pinned.
    struct Registration {
        uint64_t pages;  // from its first page (the key in registrations_)
        uint32_t live;   // granules it spans that exist
    };
    Status create(uint64_t index, Granule *g, GranuleDriver *owner);  // under mu_
    // The granules of [addr, addr+bytes) ready for a hand-over from
    // `from`, or why not.  Under mu_.
    Status check_hand_over(uint64_t first, uint64_t last, uintptr_t addr, uint64_t bytes,
                           const GranuleDriver *from) const;
    void destroy(uint64_t index, Granule &g);   // under mu_
    // A granule no allocation uses any more: destroyed and forgotten.
    using GranuleMap = std::unordered_map<uint64_t, Granule>;
    GranuleMap::iterator drop(GranuleMap::iterator it);  // under mu_
    // Pins the allocated, unpinned pages of granules [first, last], a
    // registration per run of them (a run goes on across granules).
    // Under mu_.
    void pin_granules(uint64_t first, uint64_t last);
    // Calls fn(first page, registration) for each registration overlapping
    // granule i (pages numbered from the window's base).  Under mu_.
    template <class Fn>
    void for_each_registration_in(uint64_t i, Fn fn);
    // Calls fn(first page, end page) for each run of allocated, unpinned
    // pages of g in [from, to).  Under mu_.
    template <class Fn>
    void for_each_unpinned_run(const Granule &g, uint64_t from, uint64_t to, Fn fn) const;
    // Before pin_granules(first, last): makes the unpinned pages of
    // those not made yet with page_makers_ threads.  Under mu_.
    void make_pages(uint64_t first, uint64_t last);
    // Granules made ahead of the CPU's first fault in one (within its
    // object): a fill that goes on through the object finds them made, and
    // an object larger than the host's memory is not made whole.
    static constexpr uint64_t kMakeAhead = 64;
    void mark_used(Granule &g, uint64_t from, uint64_t to, bool used);  // under mu_
    void recount(Granule &g);                                          // under mu_
    uint64_t pages_per_granule() const { return granularity_ / kPage; }
    // The pages of granule i that [addr, addr+bytes) covers, as [from, to).
    std::pair<uint64_t, uint64_t> pages_in(uint64_t i, uintptr_t addr, uint64_t bytes) const {
        const uintptr_t g_lo = base_ + i * granularity_;
        const uintptr_t lo = std::max(addr / kPage * kPage, g_lo);
        const uintptr_t hi = std::min((addr + bytes + kPage - 1) / kPage * kPage, g_lo + granularity_);
        return {(lo - g_lo) / kPage, hi > lo ? (hi - g_lo) / kPage : (lo - g_lo) / kPage};
    }

    GranuleDriver *driver_ = nullptr;
    uint64_t granularity_ = 0;
    uintptr_t base_ = 0;
    int host_fd_ = -1;
    uint8_t *alias_ = nullptr;
    Pinning pinning_ = Pinning::lazy;
    unsigned page_makers_ = 1;
    // Allocation, free and first copies of a granule; never held across a
    // copy or a launch, and never by code that touches the window (so a
    // fault handler's copy cannot find it held by its own thread).
    std::mutex mu_;
    GranuleMap granules_;
    // A granule no allocation uses that is still mapped: its addresses
    // hold its old memory until it is unmapped.
    struct Left {
        uint64_t index;
        uint64_t handle;
        GranuleDriver *owner;
    };
    // Those the driver would not unmap (GranuleDriver::unback): tried
    // again before a granule is made, and when their device goes.
    std::vector<Left> stuck_;
    void unstick(const GranuleDriver *owner);  // under mu_; owner null: all
    // Granules given up while their device's work may run (work_may_run):
    // still mapped, their memory no longer counted as used.  Unmapped once
    // the device is idle (looked at by each commit and decommit), at once
    // when device memory runs short or the device goes, and made usable
    // again as they are when their addresses are committed again.
    std::vector<Left> idle_;
    void unmap_idle(const GranuleDriver *owner, bool wait);  // under mu_; owner null: all
    bool revive(uint64_t index, Granule *g, GranuleDriver *owner);  // under mu_
    std::map<uint64_t, Registration> registrations_;
    std::atomic<uint64_t> granules_in_use_{0};
    std::atomic<uint64_t> unpinned_{0};    // granules with allocated pages not pinned yet: copies skip the lock at 0
    std::atomic<uint64_t> unseen_{0};      // backed granules the CPU has not used yet: faults skip it at 0
    std::atomic<bool> pin_failed_{false};  // a registration failed: copies go pageable from then on
};

template <class Copy>
Status Granules::hand_over(uintptr_t addr, uint64_t bytes, GranuleDriver *from, GranuleDriver *to, Copy copy) {
    if (bytes == 0 || from == to) return adsmSuccess;
    const uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    const uint64_t n = last - first + 1, size = n * granularity_;
    const uintptr_t lo = base_ + first * granularity_;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (Status s = check_hand_over(first, last, addr, bytes, from); s != adsmSuccess) return s;
    }
    // The new memory is made and filled off the lock (never held across a
    // copy): the granules are the range's alone, and its owner, who asked
    // for the move, frees nothing meanwhile.
    uintptr_t scratch = 0;
    if (Status s = to->reserve_scratch(size, &scratch); s != adsmSuccess) return s;
    std::vector<uint64_t> made(n, 0);
    uint64_t k = 0;
    Status s = adsmSuccess;
    for (; k < n && s == adsmSuccess; ++k) s = to->back(scratch + k * granularity_, granularity_, &made[k]);
    if (s != adsmSuccess) --k;
    if (s == adsmSuccess) s = copy(scratch, lo, size);
    std::lock_guard<std::mutex> lock(mu_);
    if (s == adsmSuccess) s = check_hand_over(first, last, addr, bytes, from);
    if (s != adsmSuccess) {
        for (uint64_t j = 0; j < k; ++j) to->unback(scratch + j * granularity_, granularity_, made[j]);
        to->free_scratch(scratch, size);
        return s;
    }
    for (uint64_t j = 0; j < n; ++j) {
        Granule &g = granules_[first + j];
        const uintptr_t va = lo + j * granularity_;
        from->unback(va, granularity_, g.handle);
        from->granules.fetch_sub(1, std::memory_order_relaxed);
        g.owner = to;
        g.handle = made[j];
        to->granules.fetch_add(1, std::memory_order_relaxed);
        // Past the swap there is no way back: a granule left unmapped here
        // faults its object's next kernel, which reports it.
        if (Status r = to->remap(scratch + j * granularity_, va, granularity_, made[j]);
            r != adsmSuccess && s == adsmSuccess)
            s = r;
    }
    to->free_scratch(scratch, size);
    if (s == adsmSuccess) {
        stats().add(Counter::d2d_transfers);
        stats().add(Counter::d2d_bytes, bytes);
    }
    return s;
}

}  // namespace adsm::gpu
