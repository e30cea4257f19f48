// What the fault-driven protocols (lazy, rolling, delta) share: each region
// is cut into blocks, each block is Invalid, ReadOnly or Dirty, and the
// state decides the protection of the block's pages in the user view.
//
//   Invalid  --read fault-->   ReadOnly   (filled from the device first)
//   Invalid  --write fault-->  Dirty      (filled first)
//   ReadOnly --write fault-->  Dirty
//   any      --release-->      Invalid    (Dirty data flushed first)
//
// A block is always filled through the alias view while its user pages are
// still closed, and opened only afterwards, so no thread ever sees a half
// filled page.  All transitions of a region happen under its lock; two
// threads faulting on one block find it already done the second time, so
// the data moves once.
//
// Each protocol builds one from its choices (BlockPolicy): how big a block
// is, how writes are found (WriteDetection: by protection faults, or by
// the userfaultfd tracker at the release), and what the CPU is expected to
// read after a sync (ReadPrediction), which is then fetched ahead.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <memory>

#include "protocols/protocol.h"
#include "protocols/read_prediction.h"
#include "protocols/write_detection.h"

namespace adsm {

struct BlockPolicy {
    bool whole_object = false;  // one block per object, whatever ADSM_BLOCK_SIZE says
    std::unique_ptr<WriteDetection> writes;
    std::unique_ptr<ReadPrediction> reads = predict_nothing();
};

// A prefetch in flight: which blocks its landing opens.  Taken from a fixed
// pool, since an acquire can run in the fault handler (a racing access waits
// for the kernels there) where the heap is off limits.
struct PrefetchRun {
    class BlockProtocol *protocol;
    SharedObject *region;
    uint32_t id, generation, first, last;
    bool open;  // each block opens as it lands (adsmPrefetch), whatever the read prediction says
    std::atomic<bool> busy{false};
    // Landed while its object stayed locked: the copy is in the host copy,
    // and the next holder of the lock opens its blocks (handed_off_status).
    std::atomic<bool> handed_off{false};
    Status handed_off_status = adsmSuccess;
};

class BlockProtocol : public Protocol {
public:
    BlockProtocol(const ProtocolEnv &env, BlockPolicy policy);

    bool uses_faults() const override { return true; }
    Status on_alloc(SharedObject &r, bool zeroed) override;
    void on_free(SharedObject &r) override;
    Status release(ReleaseGroup &c) override;
    Status acquire(ReleaseGroup &c) override;
    Status read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) override;
    Status write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) override;
    Status fill(SharedObject &r, size_t off, int value, size_t len) override;
    Status release_object(SharedObject &r, bool read_only) override;
    Status acquire_object(SharedObject &r, bool written) override;
    Status settle_on_device(SharedObject &r) override;
    Status evict(SharedObject &r) override;
    Status fetch_range(SharedObject &r, size_t off, size_t len) override;
    Status prefetch_range(SharedObject &r, size_t off, size_t len) override;
    FaultOutcome on_fault(SharedObject &r, uintptr_t addr, bool write) override;
    Status snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held) override;
    Status hold_writes(SharedObject &r) override;
    Status resume_writes(SharedObject &r) override;
    // (Only its dirty blocks are writable.)
    bool holds_by_span(const SharedObject &) const override { return false; }

protected:
    // Policy hooks, called without any region lock held.  dirtied: a write
    // turned the block Dirty (a write fault, or a store of the runtime's);
    // where open blocks take writes unseen (track_written_*), only the
    // blocks a write opens are reported.
    virtual void dirtied(SharedObject &, uint32_t /*block*/) {}
    virtual void released(ReleaseGroup &) {}

    // Starts sending a Dirty block to the device in the background, whole;
    // the block stays usable.  Caller holds r.lock.
    void flush_block_async(SharedObject &r, uint32_t k);

    const ProtocolEnv &env() const { return env_; }
    // (ProtocolEnv::kernels_expected.)
    bool kernels_expected() const {
        return !env_.kernels_expected || env_.kernels_expected->load(std::memory_order_relaxed);
    }

private:
    Status fetch(SharedObject &r, uint32_t first, uint32_t last);
    // Invalid -> ReadOnly or Dirty once its data is in place; a block whose
    // protection cannot be changed alone opens with its whole region.
    Status open_block(SharedObject &r, uint32_t k, bool write, bool *newly_dirty);
    // Opens Invalid block k by itself; false where the region is, or would
    // have to turn, coarse.  (A prefetch's landing opens so: coarsening
    // waits for the copy engine, whose thread the landing runs on.)
    bool open_alone(SharedObject &r, uint32_t k, bool write);
    // ReadOnly -> Dirty.
    Status dirty_block(SharedObject &r, uint32_t k, bool *newly_dirty);
    Status coarsen(SharedObject &r);
    // Debug builds: no Invalid block is open, which would let the CPU see
    // stale data (the kernel is asked, on each block's first page).  The
    // other way round is allowed: a valid block left closed after a failed
    // protection change opens at its next fault.  Caller holds r.lock.
    void check_protections(const SharedObject &r) const;
    // With r.lock held and nothing incoming (lock_settled): the object's
    // copy ticket counted its device's copies; the next device (or the
    // host, for an evicted object) counts its own.
    void forget_prefetch_ticket(SharedObject &r);
    // Takes r.lock once no block in [first, last) is being prefetched.
    void lock_settled(SharedObject &r, uint32_t first, uint32_t last);
    // lock_settled over the whole object, once no background flush of it
    // (rolling's, sent ahead) is on its way either.  A release, a settle
    // and an eviction wait so before they change the blocks' states: a
    // flush that another thread's fault starts while a release goes
    // through its objects leaves its block to that copy, and once the
    // release closed the block a fetch could overtake the copy and bring
    // back the device's older bytes (the CPU's writes lost).  Waiting for
    // every copy of the device once, before all objects, left that window
    // open.  (`waited`: the caller has just waited for every copy of r's
    // device.)
    void lock_flushed(SharedObject &r, bool waited = false);
    void resend_open_blocks(SharedObject &r, uint32_t k, uint32_t j);
    // With r.lock held (released while waiting): waits for the prefetch
    // filling block k.  One that ended without landing (its copy failed)
    // leaves k Invalid and closed, for a fetch of its own.
    void wait_incoming(SharedObject &r, uint32_t k);
    // Writes bytes [b, e) of r's host copy with put(alias + b, e - b).
    template <class Put>
    void put_on_host(SharedObject &r, size_t b, size_t e, Put &&put);
    // write_in and fill: `put(dst, begin, end)` writes bytes [begin, end) of
    // the region at dst (the alias or the device view).
    template <class HostPut, class DevicePut>
    Status store(SharedObject &r, size_t off, size_t len, HostPut &&host, DevicePut &&device);
    Status flush_region(SharedObject &r);
    Status copy_out(SharedObject &r, size_t begin, size_t end, bool async);
    void keep_open(SharedObject &r, uint32_t first, uint32_t last);
    Status prefetch(SharedObject &r);
    // The next run [*first, *last) of blocks in [lo, hi) from `from` on
    // that are closed and that no prefetch fills; false if none.  Under r.lock.
    static bool next_missing_run(const SharedObject &r, uint32_t from, uint32_t lo, uint32_t hi, uint32_t *first,
                                 uint32_t *last);
    // Read-ahead (read_ahead.h) after a fault that needed data in block k:
    // the blocks to fetch, [*first, *end), the window's first block (left
    // closed, its marker) first.  Under r.lock.
    bool plan_ahead(SharedObject &r, uint32_t k, uint32_t *first, uint32_t *end);
    void read_ahead(SharedObject &r, uint32_t first, uint32_t end);
    // Queues the runs of blocks next_run(from, &first, &last, &open) gives
    // (open: the run's blocks open as they land), in batches: marked
    // incoming under r.lock, copied outside it.  *stopped: the block where
    // it stopped for want of a free PrefetchRun, else UINT32_MAX.
    template <class NextRun>
    void prefetch_runs(SharedObject &r, NextRun &&next_run, uint32_t *stopped);
    PrefetchRun *take_run();
    static void prefetched(void *arg, Status status);
    // What a landing does to its blocks, under r.lock.
    static void land(PrefetchRun &run, Status status);
    // With r.lock held: lands the runs whose landings found it taken, and
    // gives their slots back.
    void land_handed_off(SharedObject &r);
    static constexpr uint64_t kLandingPatienceNs = 200000;
    // A store this large into a block whose host copy is not wanted goes to
    // the device only (see store()).
    static constexpr size_t kDeviceOnlyStore = size_t{64} << 10;
    // A store into the host copy this large makes and maps its pages in one
    // call each (put_on_host); smaller ones fault them in.
    static constexpr size_t kPagesInOneCall = size_t{64} << 10;
    static void flushed(void *arg, Status status);
    static void stored(void *arg, Status status);

    ProtocolEnv env_;
    bool whole_object_;
    std::unique_ptr<WriteDetection> writes_;
    std::unique_ptr<ReadPrediction> reads_;
    size_t block_size_;
    uint64_t read_ahead_;  // ADSM_READ_AHEAD
    static constexpr unsigned kRuns = 1024;
    PrefetchRun runs_[kRuns];
    std::atomic<unsigned> next_run_{0};
};

}  // namespace adsm
