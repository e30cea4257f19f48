// A region: one live allocation in the shared window, with its block table.
// The memory manager owns regions; protocols own the coherence fields and
// change them under the region's lock (the fault handler included).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "os/futex_lock.h"
#include "os/vm.h"

namespace adsm {

struct Context;

enum class RegionKind : uint8_t {
    shared,  // adsmAlloc: identical CPU and device addresses
    safe,    // adsmSafeAlloc: the device copy lives at another address
    device,  // adsmDeviceAlloc: device memory only
};

// Who asked for a shared region: frees through one family of calls must not
// release memory of another (cudaFree of a malloc'd buffer is a bug to
// report, not a free).
enum class RegionOrigin : uint8_t {
    api,      // adsmAlloc and friends
    malloc,   // the interposed malloc family
    gpu_api,  // managed allocations of an interposed GPU API
};

// One byte per block: a state in the low bits and flags above.
namespace block {
constexpr uint8_t kInvalid = 0;   // host stale, device current; CPU access faults
constexpr uint8_t kReadOnly = 1;  // both current; CPU may read
constexpr uint8_t kDirty = 2;     // host may be newer; CPU may write
constexpr uint8_t kHostOnly = 3;  // only a host copy exists
constexpr uint8_t kStateMask = 3;
constexpr uint8_t kForced = 1 << 2;    // written through the alias: flush it whole, whatever the tracker saw
constexpr uint8_t kIncoming = 1 << 3;  // a prefetch is filling it
constexpr uint8_t kLanded = 1 << 4;    // Invalid but filled by a prefetch: opening it needs no copy
// How many more syncs to fetch the block ahead of the CPU (0: none): set
// when the CPU needs it, cleared when a prefetch of it went unused.
constexpr unsigned kConfidenceShift = 5;
constexpr uint8_t kConfidenceMask = 0xe0;
}  // namespace block

struct RegionStats {
    std::atomic<uint64_t> read_faults{0};
    std::atomic<uint64_t> write_faults{0};
    std::atomic<uint64_t> h2d_bytes{0};
    std::atomic<uint64_t> d2h_bytes{0};
    std::atomic<uint64_t> transfers{0};
    void clear() {
        read_faults.store(0, std::memory_order_relaxed);
        write_faults.store(0, std::memory_order_relaxed);
        h2d_bytes.store(0, std::memory_order_relaxed);
        d2h_bytes.store(0, std::memory_order_relaxed);
        transfers.store(0, std::memory_order_relaxed);
    }
    void moved(bool to_device, uint64_t bytes) {
        (to_device ? h2d_bytes : d2h_bytes).fetch_add(bytes, std::memory_order_relaxed);
        transfers.fetch_add(1, std::memory_order_relaxed);
    }
};

struct Region {
    static constexpr uint32_t kInlineBlocks = 8;

    uintptr_t host = 0;       // CPU address (0 for device memory)
    uintptr_t dev = 0;        // device address
    size_t size = 0;          // bytes the program asked for
    size_t span = 0;          // bytes reserved at host and at dev (whole pages)
    uint8_t *alias = nullptr; // always-writable view of the host copy
    Context *owner = nullptr; // context whose calls release this region
    Region *prev = nullptr;   // owner's list of regions
    Region *next = nullptr;
    uint64_t birth_call = 0;  // owner's call count when allocated
    uint32_t id = 0;          // slot in the region table
    uint32_t generation = 0;  // bumped each time the slot is reused
    std::atomic<bool> live{false};
    RegionKind kind = RegionKind::shared;
    RegionOrigin origin = RegionOrigin::api;

    // ---- coherence: changed under `lock` by the protocol
    os::FutexLock lock;
    bool on_device = false;     // batch: the device holds the newest copy
    uint32_t block_size = 0;    // bytes per block (a page multiple)
    uint32_t nblocks = 0;
    uint8_t *blocks = nullptr;  // nblocks states (inline_blocks when few)
    uint8_t inline_blocks[kInlineBlocks] = {};
    uint64_t *dirty_pages = nullptr;  // one bit per page, for protocols that track pages by faults
    uint64_t prefetch_ticket = 0;     // copies filling kIncoming blocks end by this ticket
    // The system refused to split this region's protection (too many
    // mappings): its blocks open and close together from then on.
    bool coarse = false;
    // A background flush failed: blocks that look current on the device may
    // not be, so the next release sends every open block whole.  Set without
    // the lock (the copy's completion may run under it).
    std::atomic<bool> resend{false};
    RegionStats stats;

    // Clears everything but identity, the lock and the live flag, for a reused slot.
    void reset_fields() {
        host = dev = 0;
        size = span = 0;
        alias = nullptr;
        owner = nullptr;
        prev = next = nullptr;
        birth_call = 0;
        kind = RegionKind::shared;
        origin = RegionOrigin::api;
        on_device = false;
        block_size = nblocks = 0;
        blocks = nullptr;
        dirty_pages = nullptr;
        prefetch_ticket = 0;
        coarse = false;
        resend.store(false, std::memory_order_relaxed);
        stats.clear();
    }

    template <class Summary>
    Summary summary(bool freed) const {
        Summary s;
        s.address = host ? host : dev;
        s.size = size;
        s.read_faults = stats.read_faults.load(std::memory_order_relaxed);
        s.write_faults = stats.write_faults.load(std::memory_order_relaxed);
        s.h2d_bytes = stats.h2d_bytes.load(std::memory_order_relaxed);
        s.d2h_bytes = stats.d2h_bytes.load(std::memory_order_relaxed);
        s.transfers = stats.transfers.load(std::memory_order_relaxed);
        s.freed = freed;
        return s;
    }

    bool contains_host(uintptr_t a) const { return a >= host && a - host < span; }
    bool contains_dev(uintptr_t a) const { return a >= dev && a - dev < span; }

    // Block k covers [block_begin(k), block_end(k)) of the region's pages;
    // block_data_end(k) stops at the object's last byte.
    size_t block_begin(uint32_t k) const { return size_t(k) * block_size; }
    size_t block_end(uint32_t k) const {
        size_t e = size_t(k + 1) * block_size;
        return e < span ? e : span;
    }
    size_t block_data_end(uint32_t k) const {
        size_t e = block_end(k);
        return e < size ? e : size;
    }
    uint32_t block_of(size_t offset) const { return static_cast<uint32_t>(offset / block_size); }
    uint8_t state(uint32_t k) const { return blocks[k] & block::kStateMask; }
    void set_state(uint32_t k, uint8_t s) { blocks[k] = static_cast<uint8_t>((blocks[k] & ~block::kStateMask) | s); }
};

}  // namespace adsm
