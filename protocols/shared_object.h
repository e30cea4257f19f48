// What a coherence protocol sees of the memory manager's objects.  A shared
// allocation (the manager's Region) is a SharedObject: where its two copies
// live, and the coherence state the protocol keeps for it.  A context (the
// manager's Context) is a ReleaseGroup: the objects one adsmCall releases and
// one adsmSync acquires, and the protocol's state for them.  The manager's
// types derive from these, so the protocols never see the layer above them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/device.h"
#include "os/futex_lock.h"
#include "os/invariant.h"
#include "protocols/read_ahead.h"

namespace adsm {

struct ReleaseGroup;

// One byte per block: a state in the low bits and flags above.
namespace block {
constexpr uint8_t kInvalid = 0;   // host stale, device current; CPU access faults
constexpr uint8_t kReadOnly = 1;  // both current; CPU may read
constexpr uint8_t kDirty = 2;     // host may be newer; CPU may write
constexpr uint8_t kStateMask = 3;
constexpr uint8_t kForced = 1 << 2;    // written through the alias: flush it whole, whatever the tracker saw
constexpr uint8_t kIncoming = 1 << 3;  // a prefetch is filling it
constexpr uint8_t kLanded = 1 << 4;    // Invalid but filled by a prefetch: opening it needs no copy
// How many more syncs to fetch the block ahead of the CPU (0: none): set
// when the CPU needs it, cleared when a prefetch of it went unused.
constexpr unsigned kConfidenceShift = 5;
constexpr uint8_t kConfidenceMask = 0xe0;
}  // namespace block

struct ObjectStats {
    std::atomic<uint64_t> read_faults{0};
    std::atomic<uint64_t> write_faults{0};
    std::atomic<uint64_t> h2d_bytes{0};
    std::atomic<uint64_t> d2h_bytes{0};
    std::atomic<uint64_t> transfers{0};
    void clear() {
        read_faults.store(0, std::memory_order_relaxed);
        write_faults.store(0, std::memory_order_relaxed);
        h2d_bytes.store(0, std::memory_order_relaxed);
        d2h_bytes.store(0, std::memory_order_relaxed);
        transfers.store(0, std::memory_order_relaxed);
    }
    void moved(bool to_device, uint64_t bytes) {
        (to_device ? h2d_bytes : d2h_bytes).fetch_add(bytes, std::memory_order_relaxed);
        transfers.fetch_add(1, std::memory_order_relaxed);
    }
};

// Where an object's device copy lives (adsmAllocEx).  Objects at home in
// a discrete device's memory follow the process's protocol; the others (and
// those on an integrated device, whose memory is the host's) keep a
// coherence of their own (protocols/placed.cpp) and sit apart in their
// group (ReleaseGroup::placed), so the protocols never see them.
enum class Home : uint8_t {
    device,        // its group's device memory, the protocol moving the data
    host,          // host memory that kernels reach directly: never copied
    every_device,  // a copy in every device's memory, read-only to kernels
};

struct SharedObject {
    static constexpr uint32_t kInlineBlocks = 8;

    // ---- set by the manager
    uintptr_t host = 0;          // CPU address (0 for device memory)
    uintptr_t dev = 0;           // device address
    size_t size = 0;             // bytes the program asked for
    size_t span = 0;             // bytes reserved at host and at dev (whole pages)
    uint8_t *alias = nullptr;    // always-writable view of the host copy
    // Whose memory holds the device copy: its group's device, or the one it
    // is kept on (a preferred device, whose memory the group's kernels
    // reach over a peer link).
    Device *device = nullptr;
    // Device memory is committed for it on `device` (on every device for a
    // replicated one; never for a host-resident one).  An object that is not
    // (device memory was full when it was allocated, or it was evicted to
    // make room) is current on the host, all of it; the next call of its
    // owner commits memory for it again and the release sends it.  No
    // background copy goes to a device copy that is not there.  (Atomic,
    // like last_release: an eviction's search for victims reads both
    // without the owner's lock, and checks again under it; changed under
    // `lock`.)
    std::atomic<bool> resident{true};
    // Kernels only read it (adsmAdvise): a whole-context call releases it as
    // a call naming it read-only would (Protocol::release_object).
    bool read_mostly = false;
    Home home = Home::device;
    // every_device: bumped by each change to the host copy; replicas[d] is
    // the version device d's copy holds (0: none).  protocols/placed.cpp.
    std::atomic<uint64_t> version{0};
    uint64_t *replicas = nullptr;
    ReleaseGroup *group = nullptr;  // whose calls release this object
    SharedObject *prev = nullptr;   // the group's list
    SharedObject *next = nullptr;
    // Identity of the slot, so that a late completion (a prefetch landing, a
    // rolling eviction) can tell whether the object is still the one it
    // started on: `generation` changes each time the slot is reused.
    uint32_t id = 0;
    uint32_t generation = 0;
    std::atomic<bool> live{false};
    ObjectStats stats;

    // Coherence of its own (protocols/placed.cpp), not the process's
    // protocol's: placed outside device memory, or on an integrated device
    // (one copy that the CPU and the kernels share).  Changes only while the
    // object is out of its group's lists (Manager::relocate).
    bool own_coherence() const { return home != Home::device || (device && device->integrated()); }

    // ---- coherence: changed under `lock` by the protocol
    os::FutexLock lock;
    bool on_device = false;     // batch: the device holds the newest copy
    // The userfaultfd tracker has not protected its pages yet: it had none
    // when it was made, and protects them at its first release
    // (protocols/tracked_writes.cpp).
    bool unwatched_pages = false;
    uint64_t block_size = 0;    // bytes per block (a page multiple; lazy: the whole object, past 4 GiB too)
    uint32_t nblocks = 0;
    uint8_t *blocks = nullptr;  // nblocks states (inline_blocks when few)
    uint8_t inline_blocks[kInlineBlocks] = {};
    uint64_t *dirty_pages = nullptr;  // one bit per page, for protocols that track pages by faults
    // Copies filling kIncoming blocks end by this ticket.  Raised by the
    // submitter without the lock, so that one holding it (coarsen()) can
    // wait for them.
    std::atomic<uint64_t> prefetch_ticket{0};
    // Asynchronous stores into the device copy alone (an I/O call's) end by
    // this ticket; till the next release no closed block is fetched for a
    // store, which could read the device copy before they land.
    uint64_t stores_ticket = 0;
    // Runs marked kIncoming (under the lock) whose copies have no ticket in
    // prefetch_ticket yet (being submitted): until then a wait for
    // prefetch_ticket says nothing about them.
    std::atomic<uint32_t> prefetches_unticketed{0};
    // Prefetch runs whose copies landed while the lock was held, waiting for
    // its next holder to open their blocks (BlockProtocol::land_handed_off).
    // Kept across a reuse of the slot: a late one finds a new generation.
    std::atomic<uint32_t> handed_off_runs{0};
    // The last prefetch runs with their tickets (a ring, newest last, a
    // hint): a touch of a block still coming waits for its own run's copy
    // first, not for every prefetch queued since (read-ahead queues the
    // next window while the CPU reads the last).
    struct IncomingRun {
        uint32_t first = 0, last = 0;
        uint64_t ticket = 0;
    };
    static constexpr uint32_t kIncomingRuns = 8;
    IncomingRun incoming_runs[kIncomingRuns];
    uint32_t incoming_next = 0;
    // The newest of incoming_runs that holds block k, or null.
    const IncomingRun *incoming_run(uint32_t k) const {
        for (uint32_t i = 1; i <= kIncomingRuns; ++i) {
            const IncomingRun &run = incoming_runs[(incoming_next - i) % kIncomingRuns];
            if (run.ticket && k >= run.first && k < run.last) return &run;
        }
        return nullptr;
    }
    // A fork's hold took write access from its pages (Protocol::hold_writes).
    // (Changed under `lock`; the fault handler looks without it.)
    std::atomic<bool> writes_held{false};
    // The system refused to split this object's protection (too many
    // mappings): its blocks open and close together from then on.
    bool coarse = false;
    // Released read-only (Protocol::release_object): a kernel may be reading
    // the device copy while the CPU writes the host copy, so nothing goes to
    // the device in the background until its group's acquire.
    std::atomic<bool> kernel_reads{false};
    // A background flush failed: blocks that look current on the device may
    // not be, so the next release sends every open block whole.  Set without
    // the lock (the copy's completion may run under it).
    std::atomic<bool> resend{false};
    // Background flushes of its blocks not landed yet.  A synchronous write
    // to the device copy meanwhile could be overtaken by one carrying older
    // bytes (they run on another queue), so stores write the host copy only
    // and leave the block to the release, which waits for them first.
    std::atomic<uint32_t> flushes_in_flight{0};
    // Threads waiting for those to land before they close the object
    // (BlockProtocol::lock_flushed): no new one starts meanwhile, or a
    // stream of writes sending blocks ahead could keep them waiting.
    std::atomic<uint32_t> flushes_awaited{0};
    ReadAhead ahead;  // faults in order fetch what follows (read_ahead.h)
    // Stores that went to the device alone because the CPU had never made
    // their pages (BlockProtocol::store) since the object was last flushed:
    // [device_stores_begin, device_stores_end).  A fault in there means the
    // CPU reads what it stored before any kernel could: the bytes crossed
    // the link twice.  From then on `cpu_reads_stores` keeps the object's
    // stores on the host.
    size_t device_stores_begin = 0, device_stores_end = 0;
    bool cpu_reads_stores = false;

    // Clears everything but identity, the lock and the live flag, for a reused slot.
    void reset_object() {
        host = dev = 0;
        size = span = 0;
        alias = nullptr;
        device = nullptr;
        read_mostly = false;
        home = Home::device;
        version.store(0, std::memory_order_relaxed);
        replicas = nullptr;
        group = nullptr;
        prev = next = nullptr;
        on_device = false;
        block_size = nblocks = 0;
        blocks = nullptr;
        dirty_pages = nullptr;
        prefetch_ticket.store(0, std::memory_order_relaxed);
        stores_ticket = 0;
        prefetches_unticketed.store(0, std::memory_order_relaxed);
        for (IncomingRun &run : incoming_runs) run = IncomingRun{};
        incoming_next = 0;
        coarse = false;
        writes_held.store(false, std::memory_order_relaxed);
        resend.store(false, std::memory_order_relaxed);
        flushes_in_flight.store(0, std::memory_order_relaxed);
        flushes_awaited.store(0, std::memory_order_relaxed);
        ahead = ReadAhead{};
        device_stores_begin = device_stores_end = 0;
        cpu_reads_stores = false;
        kernel_reads.store(false, std::memory_order_relaxed);
        stats.clear();
    }

    bool contains_host(uintptr_t a) const { return a >= host && a - host < span; }
    bool contains_dev(uintptr_t a) const { return a >= dev && a - dev < span; }

    // Block k covers [block_begin(k), block_end(k)) of the object's pages;
    // block_data_end(k) stops at the object's last byte.
    size_t block_begin(uint32_t k) const { return size_t(k) * block_size; }
    size_t block_end(uint32_t k) const {
        size_t e = size_t(k + 1) * block_size;
        return e < span ? e : span;
    }
    size_t block_data_end(uint32_t k) const {
        size_t e = block_end(k);
        return e < size ? e : size;
    }
    uint32_t block_of(size_t offset) const { return static_cast<uint32_t>(offset / block_size); }
    uint8_t state(uint32_t k) const {
        ADSM_INVARIANT(k < nblocks, "a block of this object");
        return blocks[k] & block::kStateMask;
    }
    void set_state(uint32_t k, uint8_t s) {
        ADSM_INVARIANT(k < nblocks, "a block of this object");
        blocks[k] = static_cast<uint8_t>((blocks[k] & ~block::kStateMask) | s);
    }
};

struct ReleaseGroup {
    SharedObject *objects = nullptr;  // SharedObject::next/prev
    // Both lists' objects; changed under the owner's lock, read without it
    // as a hint (whether a group has any to hand over).
    std::atomic<size_t> nobjects{0};
    // Objects not at home in device memory (SharedObject::home): the
    // group's calls release them through their own coherence.
    SharedObject *placed = nullptr;
    // Where the group's kernels run and its objects' device copies live
    // (each object's `device` is this one's while it belongs to the group,
    // unless the object is kept on a preferred device).
    Device *device = nullptr;

    // The CPU read back what a store had put on the device alone
    // (SharedObject::cpu_reads_stores): stores into any of the group's
    // objects stay on the host, until a call drops it (call_made).
    std::atomic<bool> stores_read_back{false};
    // Calls in a row at which stores_read_back was set.
    uint32_t read_back_calls = 0;

    // At each of the group's calls, under its lock.  A kernel may read what
    // is stored next, so stores go to the device alone again; but a program
    // whose every phase reads its input, checks it and calls a kernel would
    // learn anew in each phase, and each phase's first input would make the
    // round trip (all of it, read with one call and parsed).  So what was
    // learnt is kept while the CPU goes on reading stores back, and dropped
    // now and then to see whether it still does: at the first, second,
    // fourth... call in a row that finds it, and every 64th from the 64th.
    void call_made() {
        if (!stores_read_back.load(std::memory_order_relaxed)) {
            read_back_calls = 0;
            return;
        }
        ++read_back_calls;
        if ((read_back_calls & (read_back_calls - 1)) == 0 || read_back_calls % 64 == 0)
            stores_read_back.store(false, std::memory_order_relaxed);
    }

    // The protocol's own state for the group (rolling's dirty list), under
    // its own async-signal-safe lock because the fault handler changes it.
    os::FutexLock protocol_lock;
    void *protocol_state = nullptr;

    void link(SharedObject *o) {
        SharedObject *&head = o->own_coherence() ? placed : objects;
        o->prev = nullptr;
        o->next = head;
        if (head) head->prev = o;
        head = o;
        nobjects.fetch_add(1, std::memory_order_relaxed);
    }
    void unlink(SharedObject *o) {
        SharedObject *&head = o->own_coherence() ? placed : objects;
        if (o->prev) o->prev->next = o->next;
        else head = o->next;
        if (o->next) o->next->prev = o->prev;
        o->prev = o->next = nullptr;
        nobjects.fetch_sub(1, std::memory_order_relaxed);
    }
};

}  // namespace adsm
