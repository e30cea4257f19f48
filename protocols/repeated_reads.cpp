// A block the CPU read after a sync is fetched ahead at the next syncs.  Its
// confidence starts at kConfidenceOnFault and drops by one at each release;
// while it is at least kOpenAhead the prefetch also opens the block, so the
// CPU reads it without any fault.  Below that the block lands closed, and
// the CPU's touch (a cheap fault, nothing to copy) confirms the prediction
// and renews it, while an untouched landed block ends the prediction at
// once.  A block read every time thus faults once every three syncs, and a
// wrong guess costs at most three fetches.
#include "protocols/read_prediction.h"

namespace adsm {
namespace {

using namespace block;

constexpr uint8_t kConfidenceOnFault = 4;
constexpr uint8_t kOpenAhead = 2;

uint8_t confidence(uint8_t b) { return static_cast<uint8_t>((b & kConfidenceMask) >> kConfidenceShift); }
uint8_t with_confidence(uint8_t b, uint8_t c) {
    return static_cast<uint8_t>((b & ~kConfidenceMask) | (c << kConfidenceShift));
}

class RepeatedReads final : public ReadPrediction {
public:
    bool predicts() const override { return true; }

    // Reads teach the prefetcher; a write would have faulted anyway.
    void touched(SharedObject &r, uint32_t k, bool write) override {
        if (!write) r.blocks[k] = with_confidence(r.blocks[k], kConfidenceOnFault);
    }

    // Every block becomes Invalid; a prediction weakens by one sync, and
    // ends at once if its prefetch went unused.
    void invalidated(SharedObject &r) override {
        for (uint32_t k = 0; k < r.nblocks; ++k) {
            uint8_t c = confidence(r.blocks[k]);
            bool unused_prefetch = (r.blocks[k] & kLanded) != 0;
            r.blocks[k] = with_confidence(kInvalid, unused_prefetch || c == 0 ? 0 : static_cast<uint8_t>(c - 1));
        }
    }

    bool next_run(const SharedObject &r, uint32_t from, uint32_t *first, uint32_t *last) const override {
        auto wanted = [&](uint32_t i) {
            return r.state(i) == kInvalid && !(r.blocks[i] & (kLanded | kIncoming)) && confidence(r.blocks[i]) > 0;
        };
        while (from < r.nblocks && !wanted(from)) ++from;
        if (from >= r.nblocks) return false;
        uint32_t j = from + 1;
        while (j < r.nblocks && wanted(j)) ++j;
        *first = from;
        *last = j;
        return true;
    }

    bool open_on_landing(const SharedObject &r, uint32_t k) const override {
        return confidence(r.blocks[k]) >= kOpenAhead;
    }
};

}  // namespace

std::unique_ptr<ReadPrediction> predict_repeated_reads() { return std::make_unique<RepeatedReads>(); }

}  // namespace adsm
