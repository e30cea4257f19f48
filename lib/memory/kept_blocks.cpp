#include "memory/kept_blocks.h"

#include "memory/manager.h"
#include "memory/owner_lock.h"
#include "os/futex_lock.h"
#include "support/stats.h"

namespace adsm {

int KeptBlocks::add(const Entry &e, Entry *out) {
    std::lock_guard<std::mutex> g(mu_);
    int pushed = 0;
    while (n_ > 0 && (n_ == kMax || bytes_ + e.span > max_bytes_)) out[pushed++] = remove(0);
    kept_[n_++] = e;
    bytes_ += e.span;
    return pushed;
}

bool KeptBlocks::take(const Context *owner, const Device *device, uint64_t span, Entry *out) {
    std::lock_guard<std::mutex> g(mu_);
    int own = -1, other = -1;
    for (int i = 0; i < n_; ++i) {
        const Entry &e = kept_[i];
        if (e.span < span || e.span / 2 >= span) continue;
        int &best = e.owner == owner ? own : other;
        if ((e.owner == owner || e.device == device) && (best < 0 || e.span < kept_[best].span)) best = i;
    }
    const int best = own >= 0 ? own : other;
    if (best < 0) return false;
    *out = remove(best);
    return true;
}

KeptBlocks::Entry KeptBlocks::remove(int i) {
    Entry e = kept_[i];
    bytes_ -= e.span;
    for (int j = i + 1; j < n_; ++j) kept_[j - 1] = kept_[j];
    --n_;
    return e;
}

int KeptBlocks::take_all(Entry *out) {
    std::lock_guard<std::mutex> g(mu_);
    int n = n_;
    for (int i = 0; i < n; ++i) out[i] = kept_[i];
    n_ = 0;
    bytes_ = 0;
    return n;
}

// ---------------------------------------------------------------- the Manager's part

bool Manager::keeps(const Region &r) const {
    // Plain objects only: one with a placement, a priority or advice of its
    // own would hand them on to whoever mallocs next.  An object in an
    // integrated device's memory is plain: keeping it saves the two
    // protection changes and the fresh pages of a new one (git's repack at
    // a 4 KiB threshold on the cpu device: 4.4 s, 1.6 s with them kept).
    return r.origin == RegionOrigin::malloc && r.kind == RegionKind::shared && !r.split && !r.pinned &&
           r.home == Home::device && r.priority == 0 && !r.prefers_host && kept_.takes(r.span);
}

KeptBlocks::Entry Manager::keep_locked(Region &r, Context &owner) {
    os::FutexGuard g(r.lock);
    r.size = 0;
    // No kernel is using it, and none will: a kernel launched while it is
    // kept does not hold it (a free of it would wait for that kernel).
    r.birth_call = UINT64_MAX;
    return {&r, r.generation, &owner, r.span, r.device};
}

void Manager::keep(const KeptBlocks::Entry &e) {
    KeptBlocks::Entry out[KeptBlocks::kMax];
    int n = kept_.add(e, out);
    for (int i = 0; i < n; ++i) drop_kept(out[i]);
}

void Manager::drop_kept(const KeptBlocks::Entry &e) {
    Region *r = e.r;
    Context *owner = nullptr;
    {
        OwnerLock lock(r, ptr(r->host));
        owner = lock.owner();
        // (Kept blocks leave the list only here and in reuse_kept: it is
        // still kept unless the runtime freed it otherwise, with its context.)
        if (!owner || !r->live.load() || r->generation != e.generation || !r->kept()) return;
        end_locked(*r, *owner);
    }
    retire(r);
    contexts_.unref(owner);
}

int Manager::trim_kept() {
    KeptBlocks::Entry out[KeptBlocks::kMax];
    int n = kept_.take_all(out);
    for (int i = 0; i < n; ++i) drop_kept(out[i]);
    return n;
}

void *Manager::reuse_kept(size_t size, Context &c) {
    size_t span;
    if (!span_for(size, &span)) return nullptr;
    KeptBlocks::Entry e;
    while (kept_.take(&c, c.device, span, &e)) {
        Region *r = e.r;
        auto still_kept = [&](const Context *by) {
            return r->owner() == by && r->live.load() && r->generation == e.generation && r->kept();
        };
        Context *from = nullptr;
        {
            OwnerLock lock(r, ptr(r->host));
            from = lock.owner();
            if (from == &c && still_kept(&c)) return reborn(*r, c, size);
        }
        // Another context's: it joins the malloc's, as adsmMigrate would
        // hand it over (both locked, its owner looked at again).  No kernel
        // of the old owner holds it: a kept block is in no call.
        if (from && from != &c && e.device == c.device) {
            bool moved = false;
            {
                ContextPairGuard both(from, &c);
                if (still_kept(from)) {
                    hand_over_locked(*r, *from, c);
                    moved = true;
                }
            }
            if (moved) {
                contexts_.unref(from);
                OwnerLock lock(r, ptr(r->host));
                if (lock.owner() == &c && still_kept(&c)) return reborn(*r, c, size);
            }
        }
        drop_kept(e);  // freed or moved meanwhile: given back
    }
    return nullptr;
}

// A kept block, owned by c, becomes the object a malloc of `size` gets.
// Caller holds c's lock (OwnerLock).
void *Manager::reborn(Region &r, Context &c, size_t size) {
    r.birth_call = c.calls.load();
    r.named_call.store(0, std::memory_order_relaxed);
    os::FutexGuard g(r.lock);
    r.size = size;
    // Another object: what was said of the one freed (the GPU APIs' advice
    // on its range) is not said of this one.
    r.generation += 1;
    stats().add(Counter::allocs);
    stats().add(Counter::kept_reuses);
    stats().add(Counter::bytes_allocated, size);
    return ptr(r.host);
}

}  // namespace adsm
