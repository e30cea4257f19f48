#include "backend/gpu/granules.h"

#include <algorithm>

#include "os/clock.h"
#include "os/fault_signals.h"
#include "os/page_makers.h"
#include "os/vm.h"
#include "support/stats.h"

namespace adsm::gpu {

Status GranuleDriver::reserve_scratch(uint64_t, uintptr_t *) {
    return fail(adsmErrorNotSupported, "this driver cannot hand device memory over to another device");
}
void GranuleDriver::free_scratch(uintptr_t, uint64_t) {}
Status GranuleDriver::remap(uintptr_t, uintptr_t, uint64_t, uint64_t) {
    return fail(adsmErrorNotSupported, "this driver cannot hand device memory over to another device");
}

void Granules::init(GranuleDriver *pins, uint64_t granularity, uintptr_t base, int host_fd, uint8_t *host_alias) {
    driver_ = pins;
    granularity_ = granularity;
    base_ = base;
    host_fd_ = host_fd;
    alias_ = host_alias;
}

namespace {

bool test_bit(const std::vector<uint64_t> &bm, uint64_t i) { return bm[i >> 6] >> (i & 63) & 1; }
void set_bit(std::vector<uint64_t> &bm, uint64_t i) { bm[i >> 6] |= uint64_t(1) << (i & 63); }
void clear_bit(std::vector<uint64_t> &bm, uint64_t i) { bm[i >> 6] &= ~(uint64_t(1) << (i & 63)); }

}  // namespace

Status Granules::create(uint64_t index, Granule *g, GranuleDriver *owner) {
    if (!stuck_.empty()) unstick(nullptr);
    if (!revive(index, g, owner)) {
        Status s = owner->back(base_ + index * granularity_, granularity_, &g->handle);
        // Memory idle granules still hold: given back now, waiting for the
        // device's work if need be.
        if (s == adsmErrorMemoryAllocation && !idle_.empty()) {
            unmap_idle(nullptr, true);
            s = owner->back(base_ + index * granularity_, granularity_, &g->handle);
        }
        if (s != adsmSuccess) return s;
    }
    g->owner = owner;
    owner->granules.fetch_add(1, std::memory_order_relaxed);
    const size_t words = (pages_per_granule() + 63) / 64;
    g->used.assign(words, 0);
    g->pinned.assign(words, 0);
    g->cpu_seen = false;
    g->has_unpinned = false;
    g->made = false;
    unseen_.fetch_add(1, std::memory_order_relaxed);
    // Pages a registration still holds from an earlier life of the granule.
    const uint64_t g0 = index * pages_per_granule(), g1 = g0 + pages_per_granule();
    for_each_registration_in(index, [&](uint64_t first, Registration &r) {
        ++r.live;
        for (uint64_t q = std::max(first, g0); q < std::min(first + r.pages, g1); ++q) set_bit(g->pinned, q - g0);
    });
    return adsmSuccess;
}

template <class Fn>
void Granules::for_each_registration_in(uint64_t i, Fn fn) {
    const uint64_t g0 = i * pages_per_granule(), g1 = g0 + pages_per_granule();
    auto it = registrations_.upper_bound(g0);
    if (it != registrations_.begin()) {
        auto before = std::prev(it);
        if (before->first + before->second.pages > g0) it = before;
    }
    while (it != registrations_.end() && it->first < g1) {
        auto next = std::next(it);
        fn(it->first, it->second);  // (may erase it)
        it = next;
    }
}

void Granules::mark_used(Granule &g, uint64_t from, uint64_t to, bool used) {
    for (uint64_t p = from; p < to; ++p) used ? set_bit(g.used, p) : clear_bit(g.used, p);
    recount(g);
}

void Granules::recount(Granule &g) {
    if (pinning_ != Pinning::lazy) return;  // (only lazy pinning looks at unpinned_)
    bool unpinned = false;
    for (size_t w = 0; w < g.used.size() && !unpinned; ++w) unpinned = (g.used[w] & ~g.pinned[w]) != 0;
    if (unpinned == g.has_unpinned) return;
    g.has_unpinned = unpinned;
    if (unpinned) unpinned_.fetch_add(1, std::memory_order_relaxed);
    else unpinned_.fetch_sub(1, std::memory_order_relaxed);
}

template <class Fn>
void Granules::for_each_unpinned_run(const Granule &g, uint64_t from, uint64_t to, Fn fn) const {
    to = std::min(to, pages_per_granule());
    for (uint64_t p = from; p < to;) {
        if (!test_bit(g.used, p) || test_bit(g.pinned, p)) {
            ++p;
            continue;
        }
        uint64_t end = p + 1;
        while (end < to && test_bit(g.used, end) && !test_bit(g.pinned, end)) ++end;
        if (!fn(p, end)) return;
        p = end;
    }
}

void Granules::pin_granules(uint64_t first, uint64_t last) {
    if (pinning_ == Pinning::off || pin_failed_.load(std::memory_order_relaxed)) return;
    // The runs, in pages from the window's base, joined across granules.
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        // (Only lazy pinning keeps has_unpinned.)
        if (it == granules_.end() || !it->second.users || (pinning_ == Pinning::lazy && !it->second.has_unpinned))
            continue;
        const uint64_t g0 = i * pages_per_granule();
        for_each_unpinned_run(it->second, 0, pages_per_granule(), [&](uint64_t p, uint64_t end) {
            if (!runs.empty() && runs.back().second == g0 + p) runs.back().second = g0 + end;
            else runs.emplace_back(g0 + p, g0 + end);
            return true;
        });
    }
    const uint64_t ppg = pages_per_granule();
    for (auto [from, to] : runs) {
        // Pinned copies run at about 55 GB/s against 7-11 for pageable ones
        // on an H100; without pinning copies still work, slower.
        const uint64_t t0 = os::now_ns();
        if (!driver_->pin(alias_ + from * kPage, (to - from) * kPage)) {
            pin_failed_.store(true, std::memory_order_relaxed);
            break;
        }
        stats().add(Counter::pin_ns, os::now_ns() - t0);
        stats().add(Counter::pinned_bytes, (to - from) * kPage);
        registrations_[from] = Registration{to - from, static_cast<uint32_t>((to - 1) / ppg - from / ppg + 1)};
        for (uint64_t q = from; q < to; ++q) set_bit(granules_[q / ppg].pinned, q % ppg);
    }
    for (uint64_t i = first; i <= last; ++i)
        if (auto it = granules_.find(i); it != granules_.end() && it->second.users) recount(it->second);
}

void Granules::make_pages(uint64_t first, uint64_t last) {
    // Threads cannot be started in a fault handler (helpers make its
    // driver calls unless ADSM_GPU_FAULT_CALLS=direct); one granule is not
    // worth them.
    if (page_makers_ < 2 || first == last || pinning_ == Pinning::off || os::in_fault_handler()) return;
    std::vector<os::PageRun> runs;
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        if (it == granules_.end() || !it->second.users || !it->second.has_unpinned || it->second.made) continue;
        it->second.made = true;
        uint8_t *granule = alias_ + i * granularity_;
        for_each_unpinned_run(it->second, 0, pages_per_granule(), [&](uint64_t p, uint64_t end) {
            uint8_t *at = granule + p * kPage;
            if (!runs.empty() && static_cast<uint8_t *>(runs.back().addr) + runs.back().len == at)
                runs.back().len += (end - p) * kPage;
            else
                runs.push_back({at, (end - p) * kPage});
            return true;
        });
    }
    // Counted apart from pinning: the simulated device's pin model charges
    // registration alone, and its pages are made inside faults and copies,
    // so only this way do the two devices' breakdowns compare.
    const uint64_t t0 = os::now_ns();
    os::make_pages(runs.data(), runs.size(), page_makers_, granularity_);
    stats().add(Counter::prefault_ns, os::now_ns() - t0);
}

void Granules::pin_for_copy(const void *host, size_t n) {
    if (n == 0 || unpinned_.load(std::memory_order_relaxed) == 0 || pin_failed_.load(std::memory_order_relaxed)) return;
    auto h = reinterpret_cast<uintptr_t>(host), a = reinterpret_cast<uintptr_t>(alias_);
    if (h < a) return;
    uint64_t first = (h - a) / granularity_, last = (h - a + n - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    make_pages(first, last);
    pin_granules(first, last);
}

bool Granules::pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len) {
    if (*len == 0 || *start < base_) return false;
    uint64_t first = (*start - base_) / granularity_, last = (*start - base_ + *len - 1) / granularity_;
    bool fresh = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (pinning_ == Pinning::lazy) {
            const uint64_t object_last = (hi - 1 - base_) / granularity_;
            make_pages(first, std::max(last, std::min(object_last, first + kMakeAhead - 1)));
            pin_granules(first, last);
        }
        for (uint64_t i = first; i <= last; ++i) {
            auto it = granules_.find(i);
            if (it == granules_.end() || !it->second.users) continue;
            if (!it->second.cpu_seen) {
                it->second.cpu_seen = true;
                unseen_.fetch_sub(1, std::memory_order_relaxed);
                fresh = true;
            }
        }
    }
    uintptr_t from = std::max<uintptr_t>(lo, base_ + first * granularity_);
    uintptr_t to = std::min<uintptr_t>(hi, base_ + (last + 1) * granularity_);
    *start = from;
    *len = to > from ? to - from : 0;
    return fresh;
}

void Granules::destroy(uint64_t index, Granule &g) {
    uint64_t offset = index * granularity_;
    if (!g.cpu_seen) unseen_.fetch_sub(1, std::memory_order_relaxed);
    if (g.has_unpinned) unpinned_.fetch_sub(1, std::memory_order_relaxed);
    if (g.owner->work_may_run()) idle_.push_back({index, g.handle, g.owner});
    else if (!g.owner->unback(base_ + offset, granularity_, g.handle)) stuck_.push_back({index, g.handle, g.owner});
    g.owner->granules.fetch_sub(1, std::memory_order_relaxed);
    // The host pages stay: an evicted or migrating object's host copy is
    // its only one now (forget_host gives back a freed object's).
    for_each_registration_in(index, [&](uint64_t first, Registration &r) {
        if (--r.live > 0) return;
        driver_->unpin(alias_ + first * kPage);
        registrations_.erase(first);
    });
}

void Granules::unstick(const GranuleDriver *owner) {
    for (size_t i = 0; i < stuck_.size();) {
        const Left &s = stuck_[i];
        if ((owner && s.owner != owner) || !s.owner->unback(base_ + s.index * granularity_, granularity_, s.handle)) {
            ++i;
            continue;
        }
        stuck_[i] = stuck_.back();
        stuck_.pop_back();
    }
}

void Granules::unmap_idle(const GranuleDriver *owner, bool wait) {
    // (Each GPU asked once: asking queries each of its streams.)
    const GranuleDriver *asked[8] = {};
    bool working[8] = {};
    unsigned nasked = 0;
    auto works = [&](GranuleDriver *d) {
        for (unsigned j = 0; j < nasked; ++j)
            if (asked[j] == d) return working[j];
        const bool w = d->work_may_run();
        if (nasked < 8) asked[nasked] = d, working[nasked++] = w;
        return w;
    };
    for (size_t i = 0; i < idle_.size();) {
        const Left s = idle_[i];
        if ((owner && s.owner != owner) || (!wait && works(s.owner))) {
            ++i;
            continue;
        }
        idle_[i] = idle_.back();
        idle_.pop_back();
        if (!s.owner->unback(base_ + s.index * granularity_, granularity_, s.handle)) stuck_.push_back(s);
    }
}

// A granule of `owner`'s that waits idle at `index` serves the commit
// there as it is: its memory is still mapped where the commit wants it.
// One of another GPU's is unmapped first.
bool Granules::revive(uint64_t index, Granule *g, GranuleDriver *owner) {
    for (size_t i = 0; i < idle_.size(); ++i) {
        if (idle_[i].index != index) continue;
        const Left s = idle_[i];
        idle_[i] = idle_.back();
        idle_.pop_back();
        if (s.owner == owner) {
            g->handle = s.handle;
            return true;
        }
        if (!s.owner->unback(base_ + s.index * granularity_, granularity_, s.handle)) stuck_.push_back(s);
        return false;
    }
    return false;
}

Granules::GranuleMap::iterator Granules::drop(GranuleMap::iterator it) {
    destroy(it->first, it->second);
    granules_in_use_.fetch_sub(1, std::memory_order_relaxed);
    return granules_.erase(it);
}

void Granules::release(GranuleDriver *owner) {
    if (!initialized()) return;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = granules_.begin(); it != granules_.end();) {
        if (it->second.users == 0 || it->second.owner != owner) {
            ++it;
            continue;
        }
        it = drop(it);
    }
    unmap_idle(owner, true);
    unstick(owner);
    // (destroy undoes a registration with its last granule; one of a
    // granule never backed would stay.)
    if (granules_in_use_.load(std::memory_order_relaxed) != 0) return;
    for (auto &[first, r] : registrations_) driver_->unpin(alias_ + first * kPage);
    registrations_.clear();
}

void Granules::abandon(const GranuleDriver *owner) {
    if (!initialized()) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto mine = [owner](const Left &s) { return s.owner == owner; };
    idle_.erase(std::remove_if(idle_.begin(), idle_.end(), mine), idle_.end());
    stuck_.erase(std::remove_if(stuck_.begin(), stuck_.end(), mine), stuck_.end());
}

void Granules::forget_host(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0 || addr < base_) return;
    const uint64_t p0 = (addr - base_) / kPage, p1 = (addr - base_ + bytes + kPage - 1) / kPage;
    std::lock_guard<std::mutex> lock(mu_);
    // Pinned pages stay until their registration goes: the driver holds
    // them, and a hole there would leave its copies on pages the mirror no
    // longer has.  (They serve the next allocation there.)
    uint64_t p = p0;
    auto it = registrations_.upper_bound(p0);
    if (it != registrations_.begin()) --it;
    for (; it != registrations_.end() && it->first < p1; ++it) {
        const uint64_t lo = it->first, hi = it->first + it->second.pages;
        if (hi <= p) continue;
        if (lo > p) os::punch_hole(host_fd_, p * kPage, (lo - p) * kPage);
        p = std::max(p, hi);
    }
    if (p < p1) os::punch_hole(host_fd_, p * kPage, (p1 - p) * kPage);
}

Status Granules::warm_up(GranuleDriver *owner) {
    if (Status s = commit(base_, granularity_, owner); s != adsmSuccess) return s;
    if (pinning_ != Pinning::off) {
        std::lock_guard<std::mutex> lock(mu_);
        pin_granules(0, 0);
    }
    decommit(base_, granularity_, owner);
    return adsmSuccess;
}

Status Granules::room_for(uint64_t bytes, uint64_t capacity, const GranuleDriver *owner, const char *backend,
                          const char *device, const char *driver_code) const {
    uint64_t in_use = used_by(owner);
    if (bytes <= capacity - std::min(capacity, in_use)) return adsmSuccess;
    return fail(adsmErrorMemoryAllocation, "%s: device memory exhausted: %llu bytes requested, %llu of %llu in use on %s (%s)",
                backend, static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(in_use),
                static_cast<unsigned long long>(capacity), device, driver_code);
}

uint64_t Granules::unbacked(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0) return 0;
    const uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    uint64_t n = 0;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        n += it == granules_.end() || it->second.users == 0;
    }
    return n * granularity_;
}

Status Granules::commit(uintptr_t addr, uint64_t bytes, GranuleDriver *owner) {
    if (bytes == 0) return adsmSuccess;
    if (!owner) owner = driver_;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) unmap_idle(nullptr, false);
    for (uint64_t i = first; i <= last; ++i) {
        Granule &g = granules_[i];
        Status s = adsmSuccess;
        if (g.users != 0 && g.owner != owner)
            s = fail(adsmErrorInvalidValue,
                     "device memory at %p: its %llu-byte granule holds another GPU's memory (objects of different "
                     "GPUs must lie granules apart)",
                     reinterpret_cast<void *>(addr), static_cast<unsigned long long>(granularity_));
        else if (g.users == 0)
            s = create(i, &g, owner);
        if (s != adsmSuccess) {
            if (g.users == 0) granules_.erase(i);
            // Undo this commit's share of the granules before i.
            for (uint64_t j = first; j < i; ++j) {
                auto u = granules_.find(j);
                auto [from, to] = pages_in(j, addr, bytes);
                mark_used(u->second, from, to, false);
                if (--u->second.users == 0) drop(u);
            }
            return s;
        }
        if (g.users == 0) granules_in_use_.fetch_add(1, std::memory_order_relaxed);
        ++g.users;
        auto [from, to] = pages_in(i, addr, bytes);
        mark_used(g, from, to, true);
    }
    if (pinning_ == Pinning::eager) pin_granules(first, last);
    return adsmSuccess;
}

Status Granules::check_hand_over(uint64_t first, uint64_t last, uintptr_t addr, uint64_t bytes,
                                 const GranuleDriver *from) const {
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        if (it == granules_.end() || it->second.users == 0 || it->second.owner != from)
            return fail(adsmErrorInvalidValue, "device memory at %p is not the handing device's",
                        reinterpret_cast<void *>(base_ + i * granularity_));
        // The whole granule must be the range's: another object in it
        // would move along.
        auto [lo, hi] = pages_in(i, addr, bytes);
        for (uint64_t p = 0; p < pages_per_granule(); ++p)
            if ((p < lo || p >= hi) && (it->second.used[p >> 6] >> (p & 63) & 1))
                return fail(adsmErrorInvalidValue,
                            "device memory at %p shares its granule with another allocation: it cannot move alone",
                            reinterpret_cast<void *>(addr));
    }
    return adsmSuccess;
}

void Granules::decommit(uintptr_t addr, uint64_t bytes, GranuleDriver *owner) {
    if (bytes == 0) return;
    if (!owner) owner = driver_;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) unmap_idle(nullptr, false);
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        if (it == granules_.end() || it->second.users == 0 || it->second.owner != owner) continue;
        // Its pages stay pinned (a registration may span several
        // allocations): they go with the granule, or serve the next.
        auto [from, to] = pages_in(i, addr, bytes);
        mark_used(it->second, from, to, false);
        if (--it->second.users == 0) drop(it);
    }
}

}  // namespace adsm::gpu
