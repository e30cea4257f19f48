// What a routed program told its GPU driver about ranges of shared memory
// (cuMemAdvise, cuMemPrefetchAsync), for the driver's range queries
// (cuMemRangeGetAttribute).  The driver answers those from its record of
// what the program asked, not from where the pages are now, and the
// runtime, which moves shared memory by its protocol, keeps the same record
// for it.  Advice names any range, so the record is per page: pieces of
// equal advice, one map per allocation from its first advice.  An
// allocation freed and its address reused starts anew, its identity
// (gpu_bridge::shared_range) having changed.  Advice and queries are rare
// calls: one lock for all of it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::interpose::range_advice {

// A location as CUDA names one (CUmemLocation): the values are CUDA's
// CUmemLocationType, so that the driver wrappers pass them through.
enum class Where : int { none = 0, device = 1, host = 2, host_numa = 3 };
struct Location {
    Where where = Where::none;
    int id = 0;  // a device ordinal, or a host NUMA node
    bool operator==(const Location &o) const { return where == o.where && (where == Where::none || id == o.id); }
};

// CUDA's advice (CUmem_advise, the same values).
enum class Advice : int {
    read_mostly = 1,
    not_read_mostly = 2,
    prefer = 3,
    no_preference = 4,
    accessed_by = 5,
    not_accessed_by = 6,
};

// The allocation the advice is about: [base, base+size), `identity` telling
// one allocation at base from a later one there.
struct Allocation {
    uintptr_t base = 0;
    size_t size = 0;
    uint64_t identity = 0;
};

// Devices an accessed-by record holds (ordinals below this; the host apart).
constexpr int kMaxDevices = 31;

// Records advice `a` (at `at`, for prefer and accessed_by) on the pages of
// [p, p+n) in `in`.  False when `at` is a device past kMaxDevices for
// accessed_by, or the advice is none of the above.
bool advise(const Allocation &in, uintptr_t p, size_t n, Advice a, Location at);
// Records a prefetch of [p, p+n) in `in` to `to`.
void prefetched(const Allocation &in, uintptr_t p, size_t n, Location to);

// The advice on every page of [p, p+n) in `in`, as the driver's queries give
// it: read_mostly when every page is; a preferred location and a last
// prefetch location where every page has the same one (else none); the
// locations every page is accessed by (bit 0 the host, bit 1+d device d).
struct Summary {
    bool read_mostly = false;
    Location preferred, last_prefetch;
    uint32_t accessed_by = 0;
};
Summary summary(const Allocation &in, uintptr_t p, size_t n);

// Drops the record of the allocation at base (it was freed by the driver's
// free; one freed otherwise, a malloc'd buffer, is replaced when its address
// is advised again).
void forget(uintptr_t base);

}  // namespace adsm::interpose::range_advice
