// What a block protocol expects the CPU to read after a sync.  At each
// acquire BlockProtocol fetches the predicted blocks in the background
// (PrefetchRun), and as each lands it opens it or leaves it closed, as the
// prediction says; the prediction learns from the CPU's read faults and
// ages at each release.  It keeps what it learns in the confidence bits of
// the block table (block::kConfidenceMask).
//
// Everything but invalidated() may run in the fault handler, under r.lock:
// no allocation, no std::mutex, no stdio.
#pragma once

#include <cstdint>
#include <memory>

#include "protocols/shared_object.h"

namespace adsm {

// This base predicts nothing.
class ReadPrediction {
public:
    virtual ~ReadPrediction() = default;

    // Whether anything is ever fetched ahead: if not, an acquire does nothing.
    virtual bool predicts() const { return false; }
    // The CPU faulted on Invalid block k, which opens now.
    virtual void touched(SharedObject &, uint32_t /*k*/, bool /*write*/) {}
    // A release has made every block of r Invalid (and sent what the CPU
    // wrote): writes the block table afresh for the next round.
    virtual void invalidated(SharedObject &r);
    // The next run [*first, *last) of blocks from `from` on to fetch ahead:
    // predicted ones, closed, that no prefetch has filled or is filling.
    // False if there is none.
    virtual bool next_run(const SharedObject &, uint32_t /*from*/, uint32_t * /*first*/, uint32_t * /*last*/) const {
        return false;
    }
    // Prefetched block k has landed: whether it opens now, or stays closed
    // for the CPU's touch (a cheap fault) to confirm the prediction.
    virtual bool open_on_landing(const SharedObject &, uint32_t /*k*/) const { return false; }
};

std::unique_ptr<ReadPrediction> predict_nothing();
// The blocks the CPU read after past syncs: repeated read patterns (a
// stencil's halo, a histogram's bins) find their data already there.
std::unique_ptr<ReadPrediction> predict_repeated_reads();

}  // namespace adsm
