#include "backend/gpu/granules.h"

#include <algorithm>

#include "os/clock.h"
#include "os/fault_signals.h"
#include "os/page_makers.h"
#include "os/vm.h"
#include "support/stats.h"

namespace adsm::gpu {

void Granules::init(GranuleDriver *driver, uint64_t granularity, uintptr_t base, int host_fd, uint8_t *host_alias) {
    driver_ = driver;
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

Status Granules::create(uint64_t index, Granule *g) {
    if (Status s = driver_->back(base_ + index * granularity_, granularity_, &g->handle); s != adsmSuccess) return s;
    const size_t words = (pages_per_granule() + 63) / 64;
    g->used.assign(words, 0);
    g->pinned.assign(words, 0);
    g->starts.assign(words, 0);
    g->cpu_seen = false;
    g->has_unpinned = false;
    g->made = false;
    unseen_.fetch_add(1, std::memory_order_relaxed);
    return adsmSuccess;
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

void Granules::pin(uint64_t index, Granule &g, uint64_t from, uint64_t to) {
    if (pinning_ == Pinning::off || pin_failed_.load(std::memory_order_relaxed)) return;
    uint8_t *granule = alias_ + index * granularity_;
    for_each_unpinned_run(g, from, to, [&](uint64_t p, uint64_t end) {
        // Pinned copies run at about 55 GB/s against 7-11 for pageable ones
        // on an H100; without pinning copies still work, slower.
        const uint64_t t0 = os::now_ns();
        if (!driver_->pin(granule + p * kPage, (end - p) * kPage)) {
            pin_failed_.store(true, std::memory_order_relaxed);
            return false;
        }
        stats().add(Counter::pin_ns, os::now_ns() - t0);
        stats().add(Counter::pinned_bytes, (end - p) * kPage);
        set_bit(g.starts, p);
        for (uint64_t q = p; q < end; ++q) set_bit(g.pinned, q);
        return true;
    });
    recount(g);
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
    const uint64_t t0 = os::now_ns();
    os::make_pages(runs.data(), runs.size(), page_makers_, granularity_);
    stats().add(Counter::pin_ns, os::now_ns() - t0);
}

void Granules::pin_for_copy(const void *host, size_t n) {
    if (n == 0 || unpinned_.load(std::memory_order_relaxed) == 0 || pin_failed_.load(std::memory_order_relaxed)) return;
    auto h = reinterpret_cast<uintptr_t>(host), a = reinterpret_cast<uintptr_t>(alias_);
    if (h < a) return;
    uint64_t first = (h - a) / granularity_, last = (h - a + n - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    make_pages(first, last);
    for (uint64_t i = first; i <= last; ++i)
        if (auto it = granules_.find(i); it != granules_.end() && it->second.users && it->second.has_unpinned)
            pin_all(i, it->second);
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
        }
        for (uint64_t i = first; i <= last; ++i) {
            auto it = granules_.find(i);
            if (it == granules_.end() || !it->second.users) continue;
            if (pinning_ == Pinning::lazy && it->second.has_unpinned) pin_all(i, it->second);
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
    for (uint64_t p = 0; p < pages_per_granule(); ++p)
        if (test_bit(g.starts, p)) driver_->unpin(alias_ + offset + p * kPage);
    driver_->unback(base_ + offset, granularity_, g.handle);
    // No allocation touches the granule any more: its host pages may go.
    os::punch_hole(host_fd_, offset, granularity_);
}

Status Granules::warm_up() {
    if (Status s = commit(base_, granularity_); s != adsmSuccess) return s;
    if (pinning_ != Pinning::off) {
        std::lock_guard<std::mutex> lock(mu_);
        pin_all(0, granules_[0]);
    }
    decommit(base_, granularity_);
    return adsmSuccess;
}

Status Granules::room_for(uint64_t bytes, uint64_t capacity, const char *backend, const char *device,
                          const char *driver_code) const {
    uint64_t in_use = used();
    if (bytes <= capacity - std::min(capacity, in_use)) return adsmSuccess;
    return fail(adsmErrorMemoryAllocation, "%s: device memory exhausted: %llu bytes requested, %llu of %llu in use on %s (%s)",
                backend, static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(in_use),
                static_cast<unsigned long long>(capacity), device, driver_code);
}

Status Granules::commit(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0) return adsmSuccess;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = first; i <= last; ++i) {
        Granule &g = granules_[i];
        if (g.users == 0) {
            if (Status s = create(i, &g); s != adsmSuccess) {
                granules_.erase(i);
                // Undo this commit's share of the granules before i.
                for (uint64_t j = first; j < i; ++j) {
                    Granule &u = granules_[j];
                    auto [from, to] = pages_in(j, addr, bytes);
                    mark_used(u, from, to, false);
                    if (--u.users == 0) {
                        destroy(j, u);
                        granules_.erase(j);
                        granules_in_use_.fetch_sub(1, std::memory_order_relaxed);
                    }
                }
                return s;
            }
            granules_in_use_.fetch_add(1, std::memory_order_relaxed);
        }
        ++g.users;
        auto [from, to] = pages_in(i, addr, bytes);
        mark_used(g, from, to, true);
        if (pinning_ == Pinning::eager) pin(i, g, from, to);
    }
    return adsmSuccess;
}

void Granules::decommit(uintptr_t addr, uint64_t bytes) {
    if (bytes == 0) return;
    uint64_t first = (addr - base_) / granularity_, last = (addr - base_ + bytes - 1) / granularity_;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = first; i <= last; ++i) {
        auto it = granules_.find(i);
        if (it == granules_.end() || it->second.users == 0) continue;
        // Its pages stay pinned (a registration may span several
        // allocations): they go with the granule, or serve the next.
        auto [from, to] = pages_in(i, addr, bytes);
        mark_used(it->second, from, to, false);
        if (--it->second.users == 0) {
            destroy(i, it->second);
            granules_.erase(it);
            granules_in_use_.fetch_sub(1, std::memory_order_relaxed);
        }
    }
}

}  // namespace adsm::gpu
