// A set of addresses kept as disjoint half-open ranges, merged where they
// touch: which parts of a window a device has committed, for instance,
// whatever pieces the commits and decommits came in.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

namespace adsm {

class RangeSet {
public:
    void add(uintptr_t lo, uintptr_t hi);
    void remove(uintptr_t lo, uintptr_t hi);
    bool contains(uintptr_t a) const;
    bool empty() const { return ranges_.empty(); }
    void clear() { ranges_.clear(); }
    // Calls f(lo, hi) for each range, in address order.
    template <typename F>
    void for_each(F &&f) const {
        for (const auto &[lo, hi] : ranges_) f(lo, hi);
    }

    // Calls f(b, e, inside) for consecutive pieces covering [lo, hi), each
    // wholly inside the set or wholly outside it.
    template <typename F>
    void pieces(uintptr_t lo, uintptr_t hi, F &&f) const {
        auto it = ranges_.upper_bound(lo);
        if (it != ranges_.begin() && std::prev(it)->second > lo) --it;
        for (uintptr_t x = lo; x < hi;) {
            if (it == ranges_.end() || it->first >= hi) {
                f(x, hi, false);
                return;
            }
            if (it->first > x) {
                f(x, it->first, false);
                x = it->first;
            }
            uintptr_t e = it->second < hi ? it->second : hi;
            f(x, e, true);
            x = e;
            ++it;
        }
    }

private:
    std::map<uintptr_t, uintptr_t> ranges_;  // start -> end
};

}  // namespace adsm
