// Page-precise write detection without a tracker.  A Dirty block stays
// read-only and its pages open one by one as they are written, each noted
// in the region's dirty-page map; a release sends those pages alone.  A
// second written page in one block is taken as a sign of more to come: the
// block opens whole and goes whole (kForced), so a block costs two write
// faults at most.
#include <sys/mman.h>

#include <cstring>
#include <new>

#include "os/vm.h"
#include "protocols/protection.h"
#include "protocols/write_detection.h"

namespace adsm {
namespace {

using namespace block;

bool bit(const uint64_t *bits, size_t i) { return bits[i / 64] >> (i % 64) & 1; }
void set_bit(uint64_t *bits, size_t i) { bits[i / 64] |= uint64_t(1) << (i % 64); }
void clear_bit(uint64_t *bits, size_t i) { bits[i / 64] &= ~(uint64_t(1) << (i % 64)); }
size_t map_words(const SharedObject &r) { return (r.span / os::kPageSize + 63) / 64; }

class WrittenPageFaults final : public WriteDetection {
public:
    Status watch(SharedObject &r) override {
        r.dirty_pages = new (std::nothrow) uint64_t[map_words(r)]();
        if (!r.dirty_pages) return fail(adsmErrorMemoryAllocation, "no memory for a dirty-page map");
        return adsmSuccess;
    }

    Status opened_on_write(SharedObject &r, uint32_t k, size_t page) override {
        set_bit(r.dirty_pages, page);
        if (protect_page(r, page, PROT_READ | PROT_WRITE) == adsmSuccess) return adsmSuccess;
        // Pages cannot open one by one: the block goes whole.
        r.blocks[k] |= kForced;
        return protect_blocks(r, k, k + 1, PROT_READ | PROT_WRITE);
    }

    bool page_unseen(const SharedObject &r, size_t page) const override { return !bit(r.dirty_pages, page); }

    Status page_written(SharedObject &r, uint32_t k, size_t page) override {
        set_bit(r.dirty_pages, page);
        if (r.state(k) == kDirty) {
            // A second page of the block: stop paying a fault per page and
            // send the block whole.
            r.blocks[k] |= kForced;
            return protect_blocks(r, k, k + 1, PROT_READ | PROT_WRITE);
        }
        if (protect_page(r, page, PROT_READ | PROT_WRITE) == adsmSuccess) {
            r.set_state(k, kDirty);
            return adsmSuccess;
        }
        // The page cannot open alone: the block turns Dirty as a whole (and
        // opens at its next write fault, as a second page).
        r.blocks[k] |= kForced;
        if (Status s = protect_blocks(r, k, k + 1, protection(kDirty)); s != adsmSuccess) return s;
        r.set_state(k, kDirty);
        return adsmSuccess;
    }

    Status agree(SharedObject &r, uint32_t k, size_t page) override {
        if (r.state(k) == kDirty && (r.blocks[k] & kForced)) return protect_blocks(r, k, k + 1, PROT_READ | PROT_WRITE);
        if (r.state(k) == kDirty && bit(r.dirty_pages, page)) return protect_page(r, page, PROT_READ | PROT_WRITE);
        return WriteDetection::agree(r, k, page);
    }

    // A forced block is writable whole; any other, in its written pages.
    Status reopen(SharedObject &r, uint32_t first, uint32_t last) override {
        for (uint32_t k = first; k < last; ++k) {
            if (r.blocks[k] & kForced) {
                if (Status s = protect_blocks(r, k, k + 1, PROT_READ | PROT_WRITE); s != adsmSuccess) return s;
                continue;
            }
            for (size_t p = r.block_begin(k) / os::kPageSize; p < r.block_end(k) / os::kPageSize; ++p)
                if (bit(r.dirty_pages, p))
                    if (Status s = protect_page(r, p, PROT_READ | PROT_WRITE); s != adsmSuccess) return s;
        }
        return adsmSuccess;
    }

    void collect(SharedObject &r, ByteRuns &runs) override {
        size_t pages = r.span / os::kPageSize;
        for (size_t p = 0; p < pages;) {
            if (!bit(r.dirty_pages, p)) {
                ++p;
                continue;
            }
            size_t q = p;
            while (q < pages && bit(r.dirty_pages, q)) ++q;
            runs.emplace_back(p * os::kPageSize, q * os::kPageSize);
            p = q;
        }
        memset(r.dirty_pages, 0, map_words(r) * sizeof(uint64_t));
    }

    // The block goes whole now; its pages start unwritten again.
    bool rewatch(SharedObject &r, uint32_t k, bool *written) override {
        if (!WriteDetection::rewatch(r, k, written)) return false;
        for (size_t p = r.block_begin(k) / os::kPageSize; p < r.block_end(k) / os::kPageSize; ++p)
            clear_bit(r.dirty_pages, p);
        return true;
    }

protected:
    int dirty_protection() const override { return PROT_READ; }
};

}  // namespace

std::unique_ptr<WriteDetection> fault_on_written_pages() { return std::make_unique<WrittenPageFaults>(); }

}  // namespace adsm
