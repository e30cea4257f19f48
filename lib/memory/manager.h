// The memory manager: owns regions and contexts, and is the one place where
// allocation, coherence (through the protocol) and kernel calls meet.
// Validation of user pointers happens here, so every entry point reports
// bad input the same way.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "backend/device.h"
#include "memory/address_space.h"
#include "memory/context.h"
#include "memory/context_table.h"
#include "memory/kept_blocks.h"
#include "memory/region_table.h"
#include "memory/victims.h"
#include "protocols/protocol.h"
#include "support/config.h"

namespace adsm {

namespace os {
class UffdTracker;
}

// One object a kernel uses, for a call that names them.
struct ObjectUse {
    const void *ptr;
    bool read_only;
};

class Manager {
public:
    // devices: every device of the process, device 0 first.
    Manager(const Config &config, AddressSpace &space, RegionTable &table, std::vector<Device *> devices,
            Protocol &protocol);

    // ---- contexts
    // The calling thread's context, created on first use; nullptr on failure.
    Context *current() { return contexts_.current(); }
    adsmContext_t handle(Context *c) const { return contexts_.handle(c); }
    Status bind(adsmContext_t handle) { return contexts_.bind(handle); }  // nullptr: back to the thread's own context
    // One context for the whole program, never ending: an unmodified program
    // knows nothing of contexts, and the GPU APIs it calls are process-wide,
    // so its interposed allocations, launches and syncs share this one.
    Context *program_context() { return contexts_.program_context(); }
    Context *existing_program_context() { return contexts_.existing_program_context(); }

    // ---- devices
    size_t device_count() const { return devices_.size(); }
    Device &device(size_t i) { return *devices_[i]; }
    // The index of c's device.
    size_t device_index(const Device &d) const;
    size_t device_index(const Context *c) const { return device_index(*c->device); }
    // Device d of the process, or nullptr.
    Device *device_at(int d) const {
        return d >= 0 && static_cast<size_t>(d) < devices_.size() ? devices_[static_cast<size_t>(d)] : nullptr;
    }
    // Moves c (the calling thread's context when null) with all its shared
    // objects to device `to`, as GMAC's gmacMigrate: its next kernels run
    // there.  Refused with adsmErrorBusy while its kernels may run, and with
    // adsmErrorMemoryAllocation when its device memory does not fit there.
    // Shared objects that do not fit wait on the host for the call that
    // needs them.
    Status move_context(size_t to, Context *c = nullptr);
    // Hands the shared allocation that starts at ptr to context `to`, its
    // device copy moving to `to`'s device (its address unchanged): `to`'s
    // calls release it from then on.  Device to device where the back-end
    // can, else through the host copy; onto the host alone when `to`'s
    // device is full.  Refused with adsmErrorBusy while a kernel of its
    // owner may be using it.
    Status migrate(void *ptr, adsmContext_t to);
    // The malloc'd objects of the program context (routed GPU calls'), when
    // it has launched nothing yet, become the calling thread's context's,
    // on the same device: a program launching its kernels with the API
    // launched its first (note_api_launch).  What cannot move stays.
    void adopt_program_mallocs();
    // In a process whose GPU calls are routed, kernels launch in two
    // contexts: the program's own launches in the program context, adsmCall
    // in the calling thread's.  A kernel of either kind may use what the
    // program made for the other (memory from adsmAlloc passed to
    // cuLaunchKernel, managed memory or an early malloc to adsmCall), which
    // the other's releases alone would move.  So a whole call in one first
    // takes the other's objects (its kernels waited for first): this call
    // releases them and its sync brings them back.
    void gather_companion(Context &c);
    // A preloaded program's mallocs are the program's, not a thread's: a
    // buffer one thread filled goes to another thread's kernel.  A whole
    // call of c that is given one of another context's in its arguments
    // takes it (same device, no kernel of its owner holding it), so that
    // its release moves it; check_arguments_owned refuses what is left.
    void adopt_argument_mallocs(Context &c, const LaunchDesc &launch);

    // ---- shared memory
    // In `in`, or the calling thread's context when null; at a multiple of
    // `align` (a power of two; 0: a page).
    // With `place` (nullptr: priority 0 and ADSM_SPILL) for the device
    // being full.
    Status alloc(size_t size, bool zero, void **out, Context *in = nullptr, RegionOrigin origin = RegionOrigin::api,
                 size_t align = 0, const Placement *place = nullptr);
    Spill default_spill() const { return spill_; }
    Status safe_alloc(size_t size, void **out);
    // free; with wait, an object a kernel may still use is freed after that
    // kernel (as cudaFree does) instead of refused with adsmErrorBusy.
    // The collector's chunks are refused unless `collector` says it frees them.
    Status free(void *ptr, bool wait = false, bool collector = false);
    Status safe(const void *cpu_addr, void **dev_addr);
    // realloc within the pages a malloc'd object already spans: whether its
    // size is now n.  Not where a kernel may be using it, nor where n would
    // leave most of its pages unused (the caller moves it then).
    bool resize(void *ptr, size_t n);
    // Frees the blocks free() kept for reuse (kept_blocks.h): how many.
    int trim_kept();
    size_t size_of(const void *ptr);
    // The live shared allocation that holds ptr (anywhere inside it).
    // `identity`, if asked for, tells this allocation from a later one at
    // the same base (its slot's id and generation).
    Status range_of(const void *ptr, void **base, size_t *size, uint64_t *identity = nullptr);
    // Whether ptr is the start of a live shared allocation made for `origin`.
    bool allocated_for(const void *ptr, RegionOrigin origin);
    Status memset(void *ptr, int value, size_t n);
    Status memcpy(void *dst, const void *src, size_t n);

    // The runtime moving data for the program (interposed I/O and bulk
    // memory): [p, p+n) must lie in one shared allocation.  A kernel that may
    // be using it is waited for first, as for a racing CPU access.
    // With `ticket` the device copies may still run on return (see
    // Protocol::read_out); wait with wait_copies.  A ticket names one
    // device's copies (its index in the top byte): where a piece lies on
    // another device than the ticket's, or on several, its copy is
    // synchronous.
    Status program_read(const void *src, void *dst, size_t n, uint64_t *ticket = nullptr);
    // Without `wait`, a kernel that may be using it makes the write fail with
    // adsmErrorBusy instead (the collector never waits for one).
    Status program_write(void *dst, const void *src, size_t n, uint64_t *ticket = nullptr, bool wait = true);
    Status program_fill(void *dst, int value, size_t n);
    // Returns once the copies up to `ticket` (of program_read/write) have
    // landed, with the first error of an asynchronous copy since the last wait.
    Status wait_copies(uint64_t ticket);

    // Moves [p, p+n) of one shared allocation ahead of use (adsmPrefetch):
    // to the host copy (kHost), so the CPU's next accesses find it there (in
    // the background where the protocol can; its owner's next sync waits),
    // or to its owner's device, so its next call has nothing of it to send.
    // adsmErrorBusy while a kernel may use it.
    static constexpr int kHost = -1;
    Status prefetch(const void *p, size_t n, int device);
    // As a prefetch to the host, done when it returns.
    Status fetch_to_host(const void *p, size_t n);
    // Advice on the shared allocation that holds [p, p+n) (adsmAdvise).
    enum class Advice { read_mostly, not_read_mostly, prefer_host, no_preference };
    Status advise(const void *p, size_t n, Advice advice);

    // Chaos mode: a release and an acquire of every context now.  Under a
    // protocol that takes no faults the fault handler must be installed
    // (writes are held by faults meanwhile).
    void chaos_cycle();

    // ---- device memory
    Status device_alloc(size_t size, void **out);
    Status device_free(void *ptr);
    Status copy_to_device(void *dev_dst, const void *src, size_t n);
    Status copy_to_host(void *dst, const void *dev_src, size_t n);
    Status device_memset(void *dev, int value, size_t n);

    // ---- kernels
    // In `in`, or the calling thread's context when null.  Refused when the
    // context's synced_calls is past synced_limit: a kernel heap the launch
    // passes was closed by a sync in another thread after the collector
    // checked it (Collector::note_launch).
    // With `uses` (n of them), the call releases only those objects, each
    // named by any address inside it, and its sync acquires only those not
    // read-only (GMAC's argument annotation); they must belong to the
    // context.  Without, every object of the context.
    Status call(const LaunchDesc &launch, Context *in = nullptr, uint64_t synced_limit = UINT64_MAX,
                const ObjectUse *uses = nullptr, size_t n = 0);
    // A call's release of the whole context for work the driver runs
    // itself (a routed program's regular command list, its kernels in it):
    // no launch of the runtime's, and the copies the release started have
    // landed when it returns, since nothing orders the driver's work after
    // them.  The next sync acquires as after a call.
    Status release_for_driver(Context *in);
    // The same for work the driver queues on one of the program's streams
    // (a CUDA graph's launch, made by `launch`): after it, the context's
    // stream waits for that stream, so that the next sync, whichever stream
    // the program synchronizes, and its acquire come after the work.
    Status release_for_driver_launch(Context *in, void *program_stream, const std::function<Status()> &launch);
    Status sync(Context *in = nullptr);
    // Waits for c's kernels and gives its regions back to the CPU, as a sync
    // would; a kernel error waits for the next adsmSync.  For a CPU access
    // that raced with a kernel (called from the fault handler).
    void settle(Context *c);
    // c's last thread ended without syncing its calls (ContextTable's
    // orphan handler): settles it, as that thread's adsmSync would have.
    static void orphaned(Context &c, void *manager);
    // At a CPU fault at host address a in r (`first`: its first on r),
    // before the protocol handles it: a device that pins mirror pages at
    // their first use pins those around the block the protocol opens now.
    // Returns the host range whose pages then exist but are not in the view
    // yet (len 0: none), for enter_mirror once the protocol has opened the
    // block.  Runs in the fault handler.
    struct MirrorRange {
        uintptr_t start = 0;
        size_t len = 0;
        uintptr_t block = 0;  // the faulting block's part of it, entered first
        size_t block_len = 0;
    };
    MirrorRange ready_mirror(Region &r, uintptr_t a, bool first);
    // Enters those pages into the view, after the protocol opened the
    // block: pages entered while the block was still read-only take a
    // slower first write each (twice the time of a write to a page entered
    // writable, measured on a 32 MiB memfd), and a closed block on the way
    // would stop the call short of the open one, so that one goes first.
    void enter_mirror(const MirrorRange &m);

    // In the child of a fork: turns every live shared region into ordinary
    // private memory holding what the region held, and lets go of the device.
    void become_fork_child();
    // In the parent, just before a fork: every object whose data only a
    // device that cannot serve the child holds (serves_fork_child) is brought
    // to the host, so the child's copy of it is whole.  An object a kernel
    // is using stays where it is (the child gets what the host had).
    // Whether any region is live (the child then may have objects to copy).
    bool before_fork();
    // In the forking thread, after before_fork: while the child copies the
    // objects, the parent's other threads wait at their next write to one
    // (os/write_hold.h), so that the copy holds the objects as they were at
    // the fork.  Whether the hold is on (not where no other thread runs,
    // nor when a change under way did not end within a second).
    bool hold_writes();
    // Once the child's copy is done: the objects are writable as before.
    void resume_writes();

    Protocol &protocol() { return protocol_; }
    // The runtime's writes for the program (above) are noted here from now
    // on, for the tracker's readers that cannot see them (os/uffd.h).
    void set_write_log(os::UffdTracker *t) { write_log_.store(t, std::memory_order_release); }

private:
    // Every object's pages read-only, writes then fault and wait while
    // os/write_hold.h holds them (the hold already on).
    void close_to_writes();
    // Takes r, which no kernel uses, out of its owner's objects and the
    // protocol's (owner locked); retire and unref follow, unlocked.
    void end_locked(Region &r, Context &owner);
    // Freed blocks of the malloc family kept for reuse (kept_blocks.h).
    // Whether free may keep r; keeps it (r's owner locked): its entry.
    bool keeps(const Region &r) const;
    KeptBlocks::Entry keep_locked(Region &r, Context &owner);
    // Lists a block kept, freeing those it pushes out.
    void keep(const KeptBlocks::Entry &e);
    // Frees a kept block (none of its owner's locks held).
    void drop_kept(const KeptBlocks::Entry &e);
    // A kept block of c's for a malloc of `size`, or nullptr.
    void *reuse_kept(size_t size, Context &c);
    void *reborn(Region &r, Context &c, size_t size);

    // A region's addresses, with device memory committed on `on`.
    // (A replicated one on every device, a host-resident one on none.)
    Status carve(size_t size, RegionKind kind, Device &on, Region **out, size_t align = 0,
                 Placement place = Placement());
    // The bytes carve reserves for `size` (false: they overflow).
    bool span_for(size_t size, size_t *span) const;
    // Device memory for a new object at [dev, dev+span) as `place` says;
    // may change place->home (spill::next) and sets *resident.
    // (*split: the object's memory split in equal parts, Spill::split.)
    Status commit_placed(Device &on, uintptr_t dev, uint64_t span, RegionKind kind, Placement *place, bool *resident,
                         SplitDevice **split);
    // [dev, dev+span) in equal parts over `first`, then the other devices,
    // then host memory: as few parts as fit, each part's memory committed
    // and reached by every other device.
    Status split_object(Device &first, uintptr_t dev, uint64_t span, SplitDevice **out);
    void release_split(SplitDevice *s, bool resident);
    Status commit_split(Region &r, Context &c, uint64_t needed);
    // Kernels on every device but `holder` reach [dev, dev+span) in holder's
    // memory, or in the host's (holder null); all or none.
    Status map_everywhere(Device *holder, uintptr_t dev, uint64_t span);
    // Gives back what commit_placed took.
    void uncommit_placed(Device &on, uintptr_t dev, uint64_t span, Home home, bool pinned, bool resident);
    // Moves r's device copy from its device to `to`, which has memory
    // committed for it already; r's owner is locked and no kernel uses r.
    // Not committed (no room there): r waits on the host for `to`, its
    // device copy brought back.
    Status move_object(Region &r, Device &to, bool committed = true);
    // relocate to a device that shares r's device's addresses: r's device
    // memory, current, is handed over whole.
    Status hand_over(Region &r, Device &to);
    // Moves c's device memory (adsmDeviceAlloc) to `to`, all of it or none;
    // c's lock is held and no kernel of c runs.
    Status move_device_memory(Context &c, Device &to);
    // Makes `to` r's device, moving its device copy there if it fits, else
    // leaving it on the host alone; r's owner is locked, no kernel uses r.
    Status relocate(Region &r, Device &to);
    // relocate between a discrete device and an integrated one: the host
    // copy becomes the only one, or the process's protocol takes the object
    // over with its host copy current.
    Status change_memory_kind(Region &r, Device &to);
    // Before a release of c (c's lock held): every object of c resident on
    // c's device, evicting others' idle objects to make room, and stamped
    // with the release clock.
    Status gather_objects(Context &c);
    // A call's release of c (named objects, or all of them), counted as a
    // call; c's lock held.
    Status release_for_call(Context &c, const ObjectUse *uses, size_t n);
    // The same for the driver's work, its copies landed; c's lock held.
    Status release_driver_work(Context &c);
    // r with device memory on `to` for a call of c, whose objects stamped
    // `needed` (Region::last_release) stay.
    Status make_resident(Region &r, Device &to, Context &c, uint64_t needed);
    // Commits [dev, +span) on d; when d is full, evicts idle objects to
    // their host copies, lower priorities first and the least recently
    // released first among equals, but none stamped `needed`
    // (kNothingNeeded: none is) and none above `below` in priority.  The
    // calling thread holds `held`'s lock, or none (nullptr).
    static constexpr uint64_t kNothingNeeded = UINT64_MAX;
    Status commit_evicting(Device &d, uintptr_t dev, uint64_t span, Context *held = nullptr,
                           uint64_t needed = kNothingNeeded, int below = INT32_MAX);
    // Evicts v from d if no kernel may be using it, this call does not need
    // it, and its owner's lock is free (or `held`); false if it could not.
    enum class Eviction { done, refused, contended };
    Eviction evict_object(Region &v, Device &d, Context *held, uint64_t needed, uint64_t *freed);
    static constexpr uint64_t kContendedWaitNs = 2'000'000'000;  // 2 s
    Status migrate_to(void *ptr, Context *to);
    // Moves r from `from`'s list to `to`'s, both locked: `to`'s calls
    // release it from now on (none it launched before saw it).  The caller
    // drops `from`'s reference for it once both locks are let go.
    void hand_over_locked(Region &r, Context &from, Context &to);
    void retire(Region *r);
    Status start_coherence(Region &r, bool zeroed);
    void publish(Region &r, Context &c);
    Status wait_for_kernels(Context *c);
    // Releases the objects `uses` names (all of c's); c's lock is held.
    Status release_named(Context &c, const ObjectUse *uses, size_t n);
    // The live shared object whose bytes on the host hold a, or nullptr.
    Region *host_object_at(uintptr_t a) const;
    // Refuses a whole call of c whose arguments point into another
    // context's object: c's release would not move it; c's lock is held.
    Status check_arguments_owned(Context &c, const LaunchDesc &launch);
    // Hands back to the CPU what c's calls since its last sync released;
    // c's lock is held.  Async-signal-safe (settle).
    Status acquire_released(Context &c);
    static void defer_error(Context &c, Status st);

    Status owned_range(const void *p, size_t n, bool device_side, Region **out);
    // Runs f(region, offset of p) on the shared allocation that holds all of
    // [p, p+n), under its owner's lock and while no kernel of that owner may
    // be using it.  Such a kernel is waited for first with `wait` (as for a
    // racing CPU access); without, the call is refused with adsmErrorBusy.
    template <class F>
    Status with_idle(const void *p, size_t n, bool wait, F &&f);
    // As cudaMemcpy: the calling thread's kernels may still use the device
    // memory a copy or fill reaches, so wait for them first.
    Status wait_for_own_kernels();
    Status copy_shared(Region &rd, size_t doff, Region &rs, size_t soff, size_t n);
    Status write_in(Region &r, size_t off, const void *src, size_t n, uint64_t *ticket = nullptr);
    // Runs copy(ticket) for a program copy on r with the caller's `ticket`
    // (see program_read): the device's own ticket goes in, the tagged one
    // comes out; nullptr where the copy must be synchronous.
    template <class Copy>
    Status with_ticket(Region &r, uint64_t *ticket, Copy &&copy);
    static constexpr unsigned kTicketDeviceShift = 56;
    Status fill(Region &r, size_t off, int value, size_t n);
    // Runs write(), a store into [off, off+n) of r for the program, with
    // the bookkeeping around it that the write tracker and the collector need.
    template <class Write>
    Status program_store(Region &r, size_t off, size_t n, Write &&write);

    Config config_;
    AddressSpace &space_;
    RegionTable &table_;
    std::vector<Device *> devices_;
    // Every device works on the host's own pages: there is one memory, so
    // every kind of placement is the same (a mixed list keeps them apart).
    bool one_memory_ = false;
    // Some devices share the window's addresses (GPUs of one driver): an
    // object takes whole granules of this size, so that each granule is
    // one device's (0: pages will do).
    uint64_t apart_ = 0;
    std::vector<std::unique_ptr<VictimList>> victims_;  // one per device, as devices_
    Protocol &protocol_;
    ContextTable contexts_;
    std::atomic<os::UffdTracker *> write_log_{nullptr};
    std::atomic<uint64_t> release_clock_{0};
    Spill spill_;
    KeptBlocks kept_;
};

}  // namespace adsm
