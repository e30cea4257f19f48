// How a block protocol finds what the CPU wrote, so that a release sends it
// to the device: by protection faults (a block's first write faults, or
// each written page does), or by asking the userfaultfd tracker at the
// release, with no fault at all.  BlockProtocol keeps the block states and
// asks its WriteDetection what they mean for protections, faults and
// releases.  None sees the runtime's own writes through the alias view:
// those blocks are marked kForced and go whole.
//
// Everything but watch() and collect() may run in the fault handler, under
// r.lock: no allocation, no std::mutex, no stdio.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "protocols/shared_object.h"
#include "support/status.h"

namespace adsm {

namespace os {
class UffdTracker;
}

// Byte ranges of a region to send, [begin, end) from its start.
using ByteRuns = std::vector<std::pair<size_t, size_t>>;

class WriteDetection {
public:
    virtual ~WriteDetection() = default;

    // The state a block takes when it opens: Dirty for a write; for a read,
    // ReadOnly if a later write must fault to be seen, or Dirty if writes
    // go unseen until the release anyway.  Fresh memory starts so too.
    virtual uint8_t open_state(bool write) const { return write ? block::kDirty : block::kReadOnly; }
    // The protection of a block's pages in the user view, for its state.
    int protection(uint8_t state) const;
    // Starts watching a new region, whose blocks are all in open_state(false).
    virtual Status watch(SharedObject &) { return adsmSuccess; }

    // ---- faults.  An error asks the caller to open the whole region
    // (SharedObject::coarse): its protection cannot be split any more.
    // Invalid block k has just opened Dirty for a write to `page`.
    virtual Status opened_on_write(SharedObject &, uint32_t /*k*/, size_t /*page*/) { return adsmSuccess; }
    // Whether a write to `page` of an open block is one this detection has
    // not seen yet, for page_written() to handle (not the block's state).
    virtual bool page_unseen(const SharedObject &, size_t /*page*/) const { return false; }
    virtual Status page_written(SharedObject &, uint32_t /*k*/, size_t /*page*/) { return adsmSuccess; }
    // Invalid block k holds the device's bytes again (fetched, or landed)
    // and is about to open: nothing the CPU wrote is in it.
    virtual void refilled(SharedObject &, uint32_t /*k*/) {}
    // Another thread resolved the fault at `page` first: makes the
    // protection there agree with block k's state.
    virtual Status agree(SharedObject &r, uint32_t k, size_t page);
    // Dirty blocks [first, last), read-only for a while (a fork's hold),
    // take the protection their state and what was written give them.
    virtual Status reopen(SharedObject &r, uint32_t first, uint32_t last);

    // ---- releases, with r closed (PROT_NONE) and r.lock held.
    // Whether a Dirty block goes whole (nothing says which of its pages were
    // written) rather than only where collect() says.
    virtual bool sends_dirty_whole() const { return false; }
    // What was written since the last release: byte ranges added to `runs`,
    // or written blocks marked kForced.  Watching starts afresh.
    virtual void collect(SharedObject &, ByteRuns &) {}
    // Dirty block k is about to be sent ahead in the background: watching
    // it starts afresh, so that later writes are found again.  *written
    // says whether it was written since it was last watched.  False: that
    // is unknown, and the block stays Dirty for the release.
    virtual bool rewatch(SharedObject &r, uint32_t k, bool *written);

protected:
    // A Dirty block's protection.
    virtual int dirty_protection() const;
};

// The ways, one per line of a protocol's choice:
// Without a tracker, a ReadOnly block's first write faults and the block
// goes whole at the release.
std::unique_ptr<WriteDetection> fault_on_first_write();
// Without a tracker, a block's first written page opens alone and faults
// again for a second, which opens the block: a release sends the pages
// written, or the blocks written in more than one page whole.
std::unique_ptr<WriteDetection> fault_on_written_pages();
// Open blocks stay writable and a release asks the kernel what was
// written: the blocks, sent whole, or the pages alone.
std::unique_ptr<WriteDetection> track_written_blocks(os::UffdTracker *tracker);
std::unique_ptr<WriteDetection> track_written_pages(os::UffdTracker *tracker);
// A block's first write after each release still faults, so that the
// protocol learns the order in which blocks turn dirty; the kernel says
// which Dirty blocks were written since one was last sent.
std::unique_ptr<WriteDetection> fault_on_first_write_then_track(os::UffdTracker *tracker);

}  // namespace adsm
