// Device memory as a cache of the shared objects: oversubscription.
//
// Shared allocations may exceed device memory.  When a device is full, the
// objects no kernel may be using are evicted to their host copies, least
// recently released first, and one that still does not fit lives on the host
// alone (Region::resident false) until its owner's next call, which commits
// memory for it again before releasing.  An allocation fails only when the
// address window or the host's memory is exhausted; a call fails only when
// the objects its kernel needs do not fit together.
#include <algorithm>
#include <vector>

#include "backend/split_device.h"
#include "memory/manager.h"
#include "os/clock.h"
#include "support/stats.h"

namespace adsm {

uint64_t Region::bytes_on(const Device &d) const {
    if (!split) return device == &d ? span : 0;
    uint64_t n = 0;
    for (const SplitDevice::Part &p : split->parts())
        if (p.device == &d) n += p.end - p.begin;
    return n;
}

// (*freed is read under the owner's lock: a free, which takes it, may be
// deleting a split object's parts otherwise.)
Manager::Eviction Manager::evict_object(Region &v, Device &d, Context *held, uint64_t needed, uint64_t *freed) {
    Context *o = v.owner();
    if (!o || v.last_release == needed) return Eviction::refused;
    // Another thread may hold this owner's lock and want the device memory
    // this thread is after: skip it instead of waiting (and deadlocking).
    ContextGuard lock;
    if (o != held && !lock.try_lock(*o)) return Eviction::contended;
    if (!v.live.load(std::memory_order_acquire) || v.owner() != o || !v.resident || v.bytes_on(d) == 0 ||
        v.kind == RegionKind::device || v.own_coherence() || v.last_release == needed || o->holds(v))
        return Eviction::refused;
    *freed = v.bytes_on(d);
    v.program_writes.fetch_add(1, std::memory_order_seq_cst);  // see move_object
    Status s = protocol_.evict(v);
    if (s == adsmSuccess) {
        os::FutexGuard g(v.lock);
        v.resident = false;
    }
    v.program_writes.fetch_add(1, std::memory_order_seq_cst);
    if (s != adsmSuccess) return Eviction::refused;
    v.device->decommit(v.dev, v.span);  // (every part of a split one)
    stats().add(Counter::device_evictions);
    stats().add(Counter::device_evicted_bytes, v.span);
    return Eviction::done;
}

Status Manager::commit_evicting(Device &d, uintptr_t dev, uint64_t span, Context *held, uint64_t needed, int below) {
    Status s = d.commit(dev, span);
    if (s != adsmErrorMemoryAllocation || d.integrated()) return s;
    std::string first = last_detail();
    // Owners busy in another thread (a sync, a call of their own) are
    // skipped, not waited for; their objects are tried again for a while
    // before the call gives up, as are objects another thread took from the
    // list first.
    const uint64_t deadline = os::now_ns() + kContendedWaitNs;
    VictimList &cold = *victims_[device_index(d)];
    for (;;) {
        uint64_t freed = 0, listed_at = 0, taken = 0;
        bool contended = false, rescanned = false;
        for (;;) {
            VictimList::Victim victim;
            // (One refill per attempt: it lists the busy ones passed over
            // before again, and they would be passed over again.)
            VictimList::Take t = cold.take(below, rescanned, &victim);
            if (t != VictimList::Take::got) {
                if (rescanned) break;
                // The candidates: objects resident on d (this call's own and
                // busy ones are passed over as they come; idleness is checked
                // under each owner's lock).
                std::vector<VictimList::Victim> candidates;
                const uint32_t bit = 1u << device_index(d);
                table_.for_each_live([&](Region &r) {
                    const bool on_d = r.split ? (r.split_on & bit) != 0 : r.device == &d;
                    if (r.resident && on_d && r.kind != RegionKind::device && !r.own_coherence())
                        candidates.push_back({r.eviction_priority(), r.last_release, &r});
                });
                listed_at = cold.refill(std::move(candidates));
                taken = 0;
                rescanned = true;
                continue;
            }
            if (rescanned) ++taken;
            Region *v = victim.r;
            if (v->last_release == needed) continue;
            uint64_t bytes = 0;
            Eviction e = evict_object(*v, d, held, needed, &bytes);
            contended |= e == Eviction::contended;
            if (e != Eviction::done) continue;
            freed += bytes;
            if (freed < span) continue;
            if (d.commit(dev, span) == adsmSuccess) return adsmSuccess;
            freed = 0;  // less than it took (other threads allocate too): evict on
        }
        if (d.commit(dev, span) == adsmSuccess) return adsmSuccess;
        // Other threads evicting from the same list may have taken the
        // candidates this one listed, or cleared or refilled the list under
        // it: its objects were not all tried.
        const bool raced = rescanned && cold.changes() - listed_at > taken;
        if (!(contended || raced) || os::now_ns() > deadline) break;
        cold.clear();  // owners busy a moment ago may be free now
        os::sleep_until_ns(os::now_ns() + 50 * 1000);
    }
    // What stays is what the call needs (or other threads use); a GPU maps
    // memory in granules, which an object across a boundary takes whole.
    if (const uint64_t g = d.mapping_granularity(); g > 4096)
        return fail(adsmErrorMemoryAllocation,
                    "%s, and no object left to evict frees enough of it (the objects the call needs must fit "
                    "together, each in whole %llu-byte granules of the device's)",
                    first.c_str(), static_cast<unsigned long long>(g));
    return fail(adsmErrorMemoryAllocation, "%s, and no object left to evict frees enough of it", first.c_str());
}

Status Manager::make_resident(Region &r, Device &on, Context &c, uint64_t needed) {
    // (Placed objects are where every device's kernels reach them already;
    // one kept on its preferred device is reached there.)
    Device &to = r.pinned ? *r.device : on;
    if ((r.device == &to && r.resident) || r.own_coherence()) return adsmSuccess;
    if (r.split) return commit_split(r, c, needed);
    if (Status s = commit_evicting(to, r.dev, r.span, &c, needed); s != adsmSuccess) return s;
    if (Status s = move_object(r, to); s != adsmSuccess) {
        to.decommit(r.dev, r.span);
        return s;
    }
    return adsmSuccess;
}

// A split object evicted earlier: each part on its own device again.
Status Manager::commit_split(Region &r, Context &c, uint64_t needed) {
    const auto &parts = r.split->parts();
    size_t done = 0;
    Status s = adsmSuccess;
    for (; done < parts.size() && s == adsmSuccess; ++done)
        if (Device *d = parts[done].device) s = commit_evicting(*d, parts[done].begin, parts[done].end - parts[done].begin, &c, needed);
    if (s != adsmSuccess) {
        for (size_t i = 0; i + 1 < done; ++i)
            if (Device *d = parts[i].device) d->decommit(parts[i].begin, parts[i].end - parts[i].begin);
        return s;
    }
    os::FutexGuard g(r.lock);
    r.resident = true;  // its host copy is current: the release sends it whole
    return adsmSuccess;
}

Status Manager::gather_objects(Context &c) {
    Device &to = *c.device;
    const uint64_t now = release_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
    // (Kept blocks stay unstamped, the first to go when a device is full.)
    for (SharedObject *o = c.objects; o; o = o->next)
        if (!static_cast<Region *>(o)->kept()) static_cast<Region *>(o)->last_release = now;
    for (SharedObject *o = c.objects; o; o = o->next)
        if (Region &r = static_cast<Region &>(*o); !r.kept())
            if (Status s = make_resident(r, to, c, now); s != adsmSuccess) return s;
    return adsmSuccess;
}

}  // namespace adsm
