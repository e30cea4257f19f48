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

bool KeptBlocks::take(const Context *owner, uint64_t span, Entry *out) {
    std::lock_guard<std::mutex> g(mu_);
    int best = -1;
    for (int i = 0; i < n_; ++i)
        if (kept_[i].owner == owner && kept_[i].span >= span && kept_[i].span / 2 < span &&
            (best < 0 || kept_[i].span < kept_[best].span))
            best = i;
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
    // own would hand them on to whoever mallocs next.
    return r.origin == RegionOrigin::malloc && r.kind == RegionKind::shared && !r.split && !r.pinned &&
           !r.own_coherence() && r.priority == 0 && !r.prefers_host && kept_.takes(r.span);
}

KeptBlocks::Entry Manager::keep_locked(Region &r, Context &owner) {
    os::FutexGuard g(r.lock);
    r.size = 0;
    // No kernel is using it, and none will: a kernel launched while it is
    // kept does not hold it (a free of it would wait for that kernel).
    r.birth_call = UINT64_MAX;
    return {&r, r.generation, &owner, r.span};
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
    while (kept_.take(&c, span, &e)) {
        Region *r = e.r;
        {
            OwnerLock lock(r, ptr(r->host));
            if (lock.owner() == &c && r->live.load() && r->generation == e.generation && r->kept()) {
                r->birth_call = c.calls.load();
                r->named_call.store(0, std::memory_order_relaxed);
                os::FutexGuard g(r->lock);
                r->size = size;
                // Another object: what was said of the one freed (the GPU
                // APIs' advice on its range) is not said of this one.
                r->generation += 1;
                stats().add(Counter::allocs);
                stats().add(Counter::kept_reuses);
                stats().add(Counter::bytes_allocated, size);
                return ptr(r->host);
            }
        }
        drop_kept(e);  // moved to another context meanwhile: given back
    }
    return nullptr;
}

}  // namespace adsm
