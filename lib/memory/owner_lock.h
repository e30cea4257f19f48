// Locks the owner of a region found by a lock-free lookup and checks that the
// region is still the one that was found: lookups take no lock, so the region
// may have been freed, and its slot reused, before the owner's lock is held.
// A region handed to another context meanwhile (a migration) is followed to
// its new owner.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory/context.h"
#include "memory/region.h"

namespace adsm {

class OwnerLock {
public:
    // `at` (n bytes) is what the caller looked up: the region must still
    // cover it once locked.  (A slot freed and taken again meanwhile holds
    // another object, most likely elsewhere: two threads freeing the same
    // pointer must not free a third thread's new allocation.)
    OwnerLock(Region *r, const void *at, size_t n = 1)
        : r_(r), at_(reinterpret_cast<uintptr_t>(at)), n_(n), gen_(r->generation), owner_(r->owner()) {
        while (owner_) {
            lock_.lock(*owner_);
            Context *now = r_->owner();
            if (now == owner_ || !now || !r_->live.load() || r_->generation != gen_) break;
            owner_ = now;  // migrated: its new owner's lock is the one that counts
        }
    }
    bool valid() const {
        if (!owner_ || !r_->live.load() || r_->generation != gen_ || r_->owner() != owner_) return false;
        return covers(r_->host) || covers(r_->dev);
    }
    Context *owner() const { return owner_; }

private:
    bool covers(uintptr_t start) const {
        return start && at_ >= start && at_ - start < r_->size && n_ <= r_->size - (at_ - start);
    }

    Region *r_;
    uintptr_t at_;
    size_t n_;
    uint32_t gen_;
    Context *owner_;
    ContextGuard lock_;
};

}  // namespace adsm
