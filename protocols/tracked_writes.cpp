// Write detection by the userfaultfd tracker (os/uffd.h): the kernel notes
// every page the CPU writes without a signal, and a release asks it which.
// Open blocks can thus stay writable; the release sends the written blocks
// whole, or only the written pages.
#include <cstring>

#include "os/error_text.h"
#include "os/uffd.h"
#include "os/vm.h"
#include "protocols/write_detection.h"

namespace adsm {
namespace {

using namespace block;

class TrackedWrites : public WriteDetection {
public:
    enum class Unit { blocks, pages };
    TrackedWrites(os::UffdTracker *tracker, Unit unit) : tracker_(tracker), unit_(unit) {}

    // Writes go unseen until the release: an open block is writable.
    uint8_t open_state(bool) const override { return kDirty; }

    Status watch(SharedObject &r) override {
        // Protecting a page that does not exist yet leaves a marker, and
        // the CPU's first write there then faults twice: once to make the
        // page, mapped protected, and once more to note the write (a loop
        // that mallocs, fills and frees an 8 MiB buffer took 68 ms a round,
        // against 33 without markers).  Fresh memory is left unprotected
        // until its first release, which asks about the pages that exist
        // (collect_made): a page made meanwhile counts as written, as one
        // the CPU only read does too (the zeros it read go once).  A device
        // that pins the mirror has the manager enter pages into the view
        // for reading, ahead of the CPU: those must be protected first.
        r.unwatched_pages = !r.device->pins_host_memory() && !os::any_page_made(reinterpret_cast<void *>(r.host), r.span);
        if (r.unwatched_pages) {
            tracker_->forget(r.host, r.span);
            return adsmSuccess;
        }
        if (int e = tracker_->arm(r.host, r.span))
            return fail(adsmErrorInitialization, "userfaultfd write-protect of %zu bytes: %s", r.span,
                        os::error_text(e));
        return adsmSuccess;
    }

    // Until its first release an object's made pages count as written
    // (watch): a block fetched back from the device would go to it again
    // at that release (a store sent ahead, then read by the CPU, crossed
    // three times).  Watched from here on, its pages count only once written.
    // (Where the kernel refuses, they count as before.)
    void refilled(SharedObject &r, uint32_t k) override {
        if (r.unwatched_pages) (void)tracker_->arm(r.host + r.block_begin(k), r.block_end(k) - r.block_begin(k));
    }

    void collect(SharedObject &r, ByteRuns &runs) override {
        Found f{&r, unit_, &runs};
        if (scan(r, r.host, r.span, &TrackedWrites::found, &f) != 0) {
            // Which pages were written is unknown: every open block goes whole.
            for (uint32_t k = 0; k < r.nblocks; ++k)
                if (r.state(k) != kInvalid) r.blocks[k] |= kForced;
        }
        // From the first release on, a page the CPU only reads must not
        // count as written: the device's output, read back, would go again
        // at every release.  (Where this fails, pages made later count as
        // written, and it is tried again at the next release.)
        if (r.unwatched_pages && tracker_->arm(r.host, r.span) == 0) r.unwatched_pages = false;
    }

    // The kernel says whether anything was written since the block was last
    // watched, and starts watching afresh; the block stays writable, and
    // later writes are found again at the release.
    bool rewatch(SharedObject &r, uint32_t k, bool *written) override {
        size_t b = r.block_begin(k), e = r.block_end(k);
        *written = r.blocks[k] & kForced;
        if (scan(r, r.host + b, e - b, [](void *p, uintptr_t, size_t) { *static_cast<bool *>(p) = true; }, written) ==
            0)
            return true;
        // The batches the tracker read before the failure watch afresh, and
        // their writes would be found by nobody: the block goes whole at the
        // release.
        r.blocks[k] |= kForced;
        return false;
    }

private:
    int scan(SharedObject &r, uintptr_t addr, size_t len, os::UffdTracker::RunFn fn, void *arg) {
        return r.unwatched_pages ? tracker_->collect_made(addr, len, fn, arg) : tracker_->collect(addr, len, fn, arg);
    }

    struct Found {
        SharedObject *r;
        Unit unit;
        ByteRuns *runs;
    };
    static void found(void *arg, uintptr_t start, size_t len) {
        auto *f = static_cast<Found *>(arg);
        size_t b = start - f->r->host, e = b + len;
#if ADSM_CHECK_INVARIANTS
        // The CPU cannot write a closed block: a page found written there
        // is a stale report, and sending it would put the host copy's
        // older bytes over the device's.
        for (uint32_t k = f->r->block_of(b); k <= f->r->block_of(e - 1); ++k)
            ADSM_INVARIANT(f->r->state(k) != kInvalid, "only an open block's pages are found written");
#endif
        if (f->unit == Unit::pages) {
            f->runs->emplace_back(b, e);
        } else {
            for (uint32_t k = f->r->block_of(b); k <= f->r->block_of(e - 1); ++k) f->r->blocks[k] |= kForced;
        }
    }

    os::UffdTracker *tracker_;
    Unit unit_;
};

// Faults are back for the first write to each block, as without a tracker;
// the tracker then only tells which Dirty blocks were written since they
// were last sent.
class FaultThenTrack final : public TrackedWrites {
public:
    explicit FaultThenTrack(os::UffdTracker *tracker) : TrackedWrites(tracker, Unit::blocks) {}
    uint8_t open_state(bool write) const override { return WriteDetection::open_state(write); }
};

}  // namespace

std::unique_ptr<WriteDetection> track_written_blocks(os::UffdTracker *tracker) {
    return std::make_unique<TrackedWrites>(tracker, TrackedWrites::Unit::blocks);
}

std::unique_ptr<WriteDetection> track_written_pages(os::UffdTracker *tracker) {
    return std::make_unique<TrackedWrites>(tracker, TrackedWrites::Unit::pages);
}

std::unique_ptr<WriteDetection> fault_on_first_write_then_track(os::UffdTracker *tracker) {
    return std::make_unique<FaultThenTrack>(tracker);
}

}  // namespace adsm
