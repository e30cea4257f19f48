// The eviction candidates of one device, coldest first (lower priorities
// first, then least recently released), kept between evictions: a full
// device under many objects evicts one or a few per call, and scanning and
// sorting every live object for each of those made a call's cost grow with
// the number of objects.  The list is refilled when it runs dry, and before
// it hands out an object of a higher priority than the last (one of a lower
// priority may have come to the device since it was filled); an object
// released since it was listed is passed over (it is no longer that cold).
// Objects that came since rank after the listed ones of their priority, as
// they were released later.  Whoever takes one still checks under its
// owner's lock that it is idle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "memory/region.h"

namespace adsm {

class VictimList {
public:
    struct Victim {
        int priority;
        uint64_t released;  // its last_release when listed
        Region *r;
    };

    enum class Take {
        got,         // *out: the next candidate
        none,        // no candidate of priority `below` or lower is listed
        look_again,  // the next ranks higher than the last: refill first
    };
    // The next candidate of priority `below` or lower that no call has
    // released since it was listed.  With `may_rank_higher` (the caller
    // refilled the list a moment ago) one of a higher priority than the last
    // is handed out too.
    Take take(int below, bool may_rank_higher, Victim *out) {
        std::lock_guard<std::mutex> lock(mu_);
        for (; next_ < list_.size(); ++next_) {
            const Victim &v = list_[next_];
            if (v.priority > below) return Take::none;  // the rest rank higher still
            if (v.r->last_release != v.released) continue;
            if (!fresh_ && !may_rank_higher && v.priority > last_priority_) return Take::look_again;
            fresh_ = false;
            ++changes_;
            last_priority_ = v.priority;
            *out = v;
            ++next_;
            return Take::got;
        }
        return Take::none;
    }

    // Returns changes() as of the refill.
    uint64_t refill(std::vector<Victim> candidates) {
        std::sort(candidates.begin(), candidates.end(), [](const Victim &a, const Victim &b) {
            return a.priority != b.priority ? a.priority < b.priority : a.released < b.released;
        });
        std::lock_guard<std::mutex> lock(mu_);
        list_ = std::move(candidates);
        next_ = 0;
        fresh_ = true;
        return ++changes_;
    }

    // Refills, clears and candidates handed out so far, by every thread: one
    // that finds the list it filled dry can tell whether others emptied it.
    uint64_t changes() {
        std::lock_guard<std::mutex> lock(mu_);
        return changes_;
    }

    // Those passed over as busy may be idle by now: look again next time.
    void clear() {
        std::lock_guard<std::mutex> lock(mu_);
        list_.clear();
        next_ = 0;
        ++changes_;
    }

private:
    std::mutex mu_;
    std::vector<Victim> list_;
    size_t next_ = 0;
    bool fresh_ = false;     // filled since the last take
    int last_priority_ = 0;  // of the last one taken
    uint64_t changes_ = 0;
};

}  // namespace adsm
