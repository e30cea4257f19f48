#include "protocols/read_ahead.h"

#include <algorithm>

namespace adsm {

bool plan_read_ahead(ReadAhead &a, uint32_t k, uint32_t nblocks, uint32_t start, uint32_t most, uint32_t *first,
                     uint32_t *end) {
    const bool in_order = (a.last != ReadAhead::kNone && k == a.last + 1) || k == a.marker;
    a.last = k;
    if (most == 0 || !in_order) {
        a.blocks = 0;
        a.marker = ReadAhead::kNone;
        return false;
    }
    a.blocks = a.blocks ? std::min(a.blocks * 2, most) : std::min(std::max(start, 1u), most);
    // The window goes on from the last one's end: blocks already coming or
    // open are skipped by the fetch.
    *first = k + 1;
    *end = static_cast<uint32_t>(std::min<uint64_t>(uint64_t(k) + 1 + a.blocks, nblocks));
    return *first < *end;
}

}  // namespace adsm
