// Process-wide counters of what the runtime did.  Increments are relaxed
// atomics, so any layer (protocol, back-end, API) counts without a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "support/profile.h"

namespace adsm {

// Each counter: its identifier (also its JSON key) and its readable name.
#define ADSM_COUNTERS(X)                                          \
    X(allocs, "allocations")                                      \
    X(frees, "frees")                                             \
    X(resizes, "reallocs in place")                               \
    X(kept_reuses, "mallocs reusing a freed block")               \
    X(bytes_allocated, "bytes allocated")                         \
    X(kernels, "kernels launched")                                \
    X(syncs, "syncs")                                             \
    X(kernel_failures, "kernel failures")                         \
    X(h2d_transfers, "transfers host->device")                    \
    X(h2d_bytes, "bytes host->device")                            \
    X(d2h_transfers, "transfers device->host")                    \
    X(d2h_bytes, "bytes device->host")                            \
    X(d2d_transfers, "transfers device->device")                  \
    X(d2d_bytes, "bytes device->device")                          \
    X(migrations, "objects moved to another device")              \
    X(device_evictions, "objects evicted (device full)")          \
    X(device_evicted_bytes, "bytes evicted (device full)")        \
    X(host_only_allocs, "allocations left on the host")           \
    X(host_resident_allocs, "host-resident allocations")          \
    X(split_allocs, "allocations split in parts")                 \
    X(replica_updates, "replicas updated")                        \
    X(async_copies, "asynchronous copies")                        \
    X(device_fills, "device-side fills")                          \
    X(read_faults, "read faults")                                 \
    X(write_faults, "write faults")                               \
    X(race_faults, "faults during a kernel")                      \
    X(fault_ns, "ns in the fault handler")                        \
    X(tracking_ns, "ns finding written pages")                    \
    X(call_ns, "ns in calls (release, launch)")                   \
    X(sync_ns, "ns in syncs (wait, acquire)")                     \
    X(memory_ns, "ns allocating and freeing")                     \
    X(kernel_ns, "ns kernels ran (sim)")                          \
    X(pinned_bytes, "host bytes pinned for the device")           \
    X(pin_ns, "ns pinning host memory")                           \
    X(prefault_ns, "ns making host pages ahead of pinning")       \
    X(io_calls, "I/O calls on shared memory")                     \
    X(io_bytes, "I/O bytes on shared memory")                     \
    X(evictions, "rolling evictions")                             \
    X(prefetched_blocks, "blocks prefetched")                     \
    X(read_ahead_windows, "read-ahead windows")                   \
    X(landings_handed_off, "prefetch landings deferred")          \
    X(chaos_cycles, "chaos release/acquire cycles")               \
    X(coarsened_regions, "regions protected as one block")        \
    X(retried_faults, "faults served at a second try")            \
    X(failed_faults, "faults that raised SIGBUS")

enum class Counter : unsigned {
#define ADSM_COUNTER_ENUM(id, text) id,
    ADSM_COUNTERS(ADSM_COUNTER_ENUM)
#undef ADSM_COUNTER_ENUM
    count_
};

// What one region did, for the report of the busiest regions.
struct RegionSummary {
    uintptr_t address = 0;
    size_t size = 0;
    uint64_t read_faults = 0, write_faults = 0, h2d_bytes = 0, d2h_bytes = 0, transfers = 0;
    bool freed = false;
    bool kept = false;  // freed, and kept for the next malloc (memory/kept_blocks.h)
    uint64_t traffic() const { return h2d_bytes + d2h_bytes; }
};

class Stats {
public:
    void add(Counter c, uint64_t v = 1) {
        v_[idx(c)].fetch_add(v, std::memory_order_relaxed);
        if (profile::on()) attribute(c, v);
    }
    // One copy between host and device memory of `bytes` (asynchronous:
    // started to overlap the program), as every back-end counts it.
    void transfer(bool to_device, uint64_t bytes, bool async = false) {
        add(to_device ? Counter::h2d_transfers : Counter::d2h_transfers);
        add(to_device ? Counter::h2d_bytes : Counter::d2h_bytes, bytes);
        if (async) add(Counter::async_copies);
    }
    uint64_t get(Counter c) const { return v_[idx(c)].load(std::memory_order_relaxed); }
    void reset();
    static const char *name(Counter c);  // readable
    static const char *key(Counter c);   // identifier

    // Keeps a freed region's summary if it is among the busiest seen.
    void remember_freed(const RegionSummary &r);

    // A readable report: totals, then the busiest regions (the freed ones
    // remembered, plus `live`).
    void print(FILE *out, const char *heading, const std::vector<RegionSummary> &live) const;
    // The same as one JSON object; `about` is a list of "key": "value"
    // pairs that describe the run (device, protocol, ...).
    void write_json(FILE *out, const std::vector<std::pair<std::string, std::string>> &about,
                    const std::vector<RegionSummary> &live) const;

private:
    static constexpr size_t kTopRegions = 10;
    mutable std::mutex top_mu_;
    std::vector<RegionSummary> top_freed_;
    static void attribute(Counter c, uint64_t v);  // to the profile's current cause
    std::vector<RegionSummary> busiest(const std::vector<RegionSummary> &live) const;
    static unsigned idx(Counter c) { return static_cast<unsigned>(c); }
    std::atomic<uint64_t> v_[static_cast<unsigned>(Counter::count_)] = {};
};

Stats &stats();

}  // namespace adsm
