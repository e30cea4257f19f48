// Sequential read-ahead: an object the CPU reads block after block (a
// result read back whole, an array updated in place from start to end)
// would fault once per block, each fault a synchronous copy.  Once two faults come in
// order, the blocks after them are fetched in the background, a window
// that doubles while the CPU keeps on, as a file system reads ahead.
//
// The first block of each window lands closed: the CPU's touch there (a
// fault with no copy) says it reached the window, and asks for the next
// while it reads the rest, opened as they land.  Faults out of order end
// it.
//
// The plan is made under the object's lock, in the fault handler: no heap,
// no locks of its own.
#pragma once

#include <cstdint>

namespace adsm {

struct ReadAhead {
    static constexpr uint32_t kNone = UINT32_MAX;
    uint32_t last = kNone;    // the block of the last fault that needed data
    uint32_t marker = kNone;  // the first block of the last window
    uint32_t blocks = 0;      // the window, in blocks (0: not reading ahead)
};

// After a fault that needed data in block k (fetched now, or found landed)
// of an object of nblocks: the blocks to fetch ahead, [*first, *end), or
// false.  `start` and `most` bound the window, in blocks; most 0 turns
// read-ahead off.
bool plan_read_ahead(ReadAhead &a, uint32_t k, uint32_t nblocks, uint32_t start, uint32_t most, uint32_t *first,
                     uint32_t *end);

}  // namespace adsm
