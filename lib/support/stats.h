// Process-wide counters of what the runtime did.  Increments are relaxed
// atomics, so any layer (protocol, back-end, API) counts without a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

namespace adsm {

enum class Counter : unsigned {
    allocs,
    frees,
    bytes_allocated,
    kernels,
    syncs,
    kernel_failures,
    h2d_transfers,
    h2d_bytes,
    d2h_transfers,
    d2h_bytes,
    async_copies,
    device_fills,
    read_faults,
    write_faults,
    race_faults,
    fault_ns,
    tracking_ns,
    evictions,
    prefetched_blocks,
    chaos_cycles,
    count_
};

// What one region did, for the report of the busiest regions.
struct RegionSummary {
    uintptr_t address = 0;
    size_t size = 0;
    uint64_t read_faults = 0, write_faults = 0, h2d_bytes = 0, d2h_bytes = 0, transfers = 0;
    bool freed = false;
    uint64_t traffic() const { return h2d_bytes + d2h_bytes; }
};

class Stats {
public:
    void add(Counter c, uint64_t v = 1) { v_[idx(c)].fetch_add(v, std::memory_order_relaxed); }
    uint64_t get(Counter c) const { return v_[idx(c)].load(std::memory_order_relaxed); }
    void reset();
    static const char *name(Counter c);

    // Keeps a freed region's summary if it is among the busiest seen.
    void remember_freed(const RegionSummary &r);

    // A readable report: totals, then the busiest regions (the freed ones
    // remembered, plus `live`).
    void print(FILE *out, const char *heading, const std::vector<RegionSummary> &live) const;

private:
    static constexpr size_t kTopRegions = 10;
    mutable std::mutex top_mu_;
    std::vector<RegionSummary> top_freed_;
    static unsigned idx(Counter c) { return static_cast<unsigned>(c); }
    std::atomic<uint64_t> v_[static_cast<unsigned>(Counter::count_)] = {};
};

Stats &stats();

}  // namespace adsm
