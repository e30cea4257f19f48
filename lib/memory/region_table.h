// Finds the region that holds any address of the window in O(1): a page map
// (one 32-bit entry per window page, sparse in memory) points into a slab of
// region slots that is never returned to the system.  Readers take no lock,
// which is what the fault handler and interposed calls need; they validate
// what they read with the region's live flag and bounds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "memory/region.h"
#include "support/status.h"

namespace adsm {

class RegionTable {
public:
    enum class Lookup {
        outside,  // not in the window
        none,     // in the window, never allocated or long since reused
        freed,    // freed recently (the range is still quarantined)
        live,     // inside a live region
    };

    Status init(uintptr_t base, uint64_t size);
    // Only a failed start, before any region, ends a table (the slab is
    // never returned while the runtime lives).
    ~RegionTable();

    // A fresh slot (id and generation set, everything else default).
    Region *create();
    // Returns a slot whose region is no longer reachable through the map.
    void destroy(Region *r);

    // Points every page of [start, start+span) at r.
    void map(const Region &r, uintptr_t start, size_t span);
    // Marks the pages freed, so later lookups can say so.
    void unmap_freed(uintptr_t start, size_t span);
    // Clears the pages (the range became reusable).
    void clear(uintptr_t start, size_t span);

    Lookup lookup(uintptr_t addr, Region **out) const;
    Region *find(uintptr_t addr) const {
        Region *r = nullptr;
        return lookup(addr, &r) == Lookup::live ? r : nullptr;
    }

    size_t live_regions() const { return live_.load(std::memory_order_relaxed); }

    // Visits every live region without taking a lock (for a fork child,
    // where locks may be held by threads that no longer exist).
    template <class F>
    void for_each_live(F &&f) {
        for (uint32_t id = 1; id < next_id_; ++id) {
            Region *r = slot(id);
            if (r && r->live.load(std::memory_order_acquire)) f(*r);
        }
    }
    uintptr_t base() const { return base_; }

private:
    static constexpr uint32_t kFreed = 0xffffffffu;
    static constexpr unsigned kChunkShift = 16;  // 65536 regions a chunk
    static constexpr unsigned kMaxChunks = 1024; // 64M regions

    Region *slot(uint32_t id) const {
        Region *chunk = chunks_[id >> kChunkShift].load(std::memory_order_acquire);
        return chunk ? &chunk[id & ((1u << kChunkShift) - 1)] : nullptr;
    }

    uintptr_t base_ = 0;
    uint64_t pages_ = 0;
    std::atomic<uint32_t> *map_ = nullptr;
    std::atomic<Region *> chunks_[kMaxChunks] = {};
    std::mutex mu_;                // slot allocation
    std::vector<uint32_t> free_ids_;
    uint32_t next_id_ = 1;         // id 0 means "no region"
    std::atomic<size_t> live_{0};
};

}  // namespace adsm
