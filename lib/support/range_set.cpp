#include "support/range_set.h"

#include <iterator>

namespace adsm {

void RangeSet::add(uintptr_t lo, uintptr_t hi) {
    if (lo >= hi) return;
    // Absorb every range that overlaps or touches [lo, hi).
    auto it = ranges_.upper_bound(lo);
    if (it != ranges_.begin() && std::prev(it)->second >= lo) --it;
    while (it != ranges_.end() && it->first <= hi) {
        if (it->first < lo) lo = it->first;
        if (it->second > hi) hi = it->second;
        it = ranges_.erase(it);
    }
    ranges_.emplace(lo, hi);
}

void RangeSet::remove(uintptr_t lo, uintptr_t hi) {
    if (lo >= hi) return;
    auto it = ranges_.upper_bound(lo);
    if (it != ranges_.begin() && std::prev(it)->second > lo) --it;
    while (it != ranges_.end() && it->first < hi) {
        uintptr_t b = it->first, e = it->second;
        it = ranges_.erase(it);
        if (b < lo) ranges_.emplace(b, lo);
        if (e > hi) {
            ranges_.emplace(hi, e);
            break;
        }
    }
}

bool RangeSet::contains(uintptr_t a) const {
    auto it = ranges_.upper_bound(a);
    return it != ranges_.begin() && std::prev(it)->second > a;
}

}  // namespace adsm
