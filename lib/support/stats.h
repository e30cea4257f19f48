// Process-wide counters of what the runtime did.  Increments are relaxed
// atomics, so any layer (protocol, back-end, API) counts without a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>

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
    evictions,
    prefetched_blocks,
    count_
};

class Stats {
public:
    void add(Counter c, uint64_t v = 1) { v_[idx(c)].fetch_add(v, std::memory_order_relaxed); }
    uint64_t get(Counter c) const { return v_[idx(c)].load(std::memory_order_relaxed); }
    void reset();
    static const char *name(Counter c);
    // A readable table: what moved, how often.
    void print(FILE *out, const char *device, const char *protocol) const;

private:
    static unsigned idx(Counter c) { return static_cast<unsigned>(c); }
    std::atomic<uint64_t> v_[static_cast<unsigned>(Counter::count_)] = {};
};

Stats &stats();

}  // namespace adsm
