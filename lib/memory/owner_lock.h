// Locks the owner of a region found by a lock-free lookup and checks that the
// region is still the one that was found: lookups take no lock, so the region
// may have been freed, and its slot reused, before the owner's lock is held.
// A region handed to another context meanwhile (a migration) is followed to
// its new owner.
#pragma once

#include <cstdint>

#include "memory/context.h"
#include "memory/region.h"

namespace adsm {

class OwnerLock {
public:
    explicit OwnerLock(Region *r) : r_(r), gen_(r->generation), owner_(r->owner()) {
        while (owner_) {
            lock_.lock(*owner_);
            Context *now = r_->owner();
            if (now == owner_ || !now || !r_->live.load() || r_->generation != gen_) break;
            owner_ = now;  // migrated: its new owner's lock is the one that counts
        }
    }
    bool valid() const { return owner_ && r_->live.load() && r_->generation == gen_ && r_->owner() == owner_; }
    Context *owner() const { return owner_; }

private:
    Region *r_;
    uint32_t gen_;
    Context *owner_;
    ContextGuard lock_;
};

}  // namespace adsm
