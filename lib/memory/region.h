// A region: one live allocation in the shared window.  The memory manager
// owns regions; what a protocol sees and keeps of one (its copies, its block
// table) is the SharedObject it derives from.
#pragma once

#include <atomic>
#include <cstdint>

#include "protocols/shared_object.h"

namespace adsm {

struct Context;
class SplitDevice;

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
    collector,  // the collector's chunks: only the collector frees them
};

// Where a new shared object goes when its device is full.
enum class Spill : uint8_t {
    host,   // it waits on the host for the call that needs it
    evict,  // idle objects make room for it now
    fail,   // the allocation fails (after evicting, as `evict`)
    next,   // the next kind of memory: host-resident, kernels reaching it there
    split,  // equal parts over its device and the next kinds (split_device.h)
};

// How a program places one allocation (adsmAllocEx).
struct Placement {
    int priority = 0;
    Spill spill = Spill::host;
    Home home = Home::device;
    // The device whose memory holds it, whatever device its context runs
    // on (kernels on the others reach it over a peer link); nullptr: its
    // context's, moving with it.
    Device *preferred = nullptr;
};

// A region's address as the pointer that calls and messages take.
inline void *ptr(uintptr_t a) { return reinterpret_cast<void *>(a); }

struct Region : SharedObject {
    uint64_t birth_call = 0;  // owner's call count when allocated
    // The release clock at its owner's last call that released it (or at
    // its allocation): eviction takes the least recently released first.
    std::atomic<uint64_t> last_release{0};
    // Eviction takes lower priorities first (adsmAllocEx), and objects that
    // prefer the host before any other (adsmAdvise).
    int priority = 0;
    bool prefers_host = false;
    // On a preferred device (Placement::preferred), or split over several
    // (Spill::split, `device` then being `split`): `device` stays when its
    // context moves, and kernels on every other device reach it there.
    bool pinned = false;
    SplitDevice *split = nullptr;  // owned
    // The devices (bit i: the manager's i-th) holding a part of a split
    // one: what a scan without the owner's lock reads, as a free may be
    // deleting `split` meanwhile.
    uint32_t split_on = 0;
    int eviction_priority() const { return prefers_host ? INT32_MIN : priority; }
    // The owner's last call that named it (adsmCallWith), or 0.
    std::atomic<uint64_t> named_call{0};
    RegionKind kind = RegionKind::shared;
    RegionOrigin origin = RegionOrigin::api;
    // Collector chunks: bumped before and after each write the runtime makes
    // for the program (odd while one is under way).  The collector reads
    // device copies before it stops the world, and a write that reached the
    // device after that is not in what it read.
    std::atomic<uint32_t> program_writes{0};
    // The CPU has faulted on it once (Manager::ready_mirror enters the pieces
    // of its mirror a device pinned earlier into the view then).
    std::atomic<bool> touched{false};

    // A freed block of the malloc family kept for the next malloc
    // (kept_blocks.h): no object, nothing of it to move.
    bool kept() const { return size == 0; }

    // The context whose calls release this region (context.h defines it).
    Context *owner() const;
    // Bytes of its device copy in d's memory (split_device.h for a split one).
    uint64_t bytes_on(const Device &d) const;

    // Clears everything but identity, the lock and the live flag, for a reused slot.
    void reset_fields() {
        reset_object();
        birth_call = 0;
        resident = true;
        last_release = 0;
        named_call.store(0, std::memory_order_relaxed);
        priority = 0;
        prefers_host = false;
        pinned = false;
        split = nullptr;
        split_on = 0;
        kind = RegionKind::shared;
        origin = RegionOrigin::api;
        touched.store(false, std::memory_order_relaxed);
    }

    template <class Summary>
    Summary summary(bool freed) const {
        Summary s;
        s.address = host ? host : dev;
        // (A kept block is freed to the program: its pages, whose traffic
        // is that of every object it held.)
        s.size = kept() ? span : size;
        s.kept = kept();
        s.read_faults = stats.read_faults.load(std::memory_order_relaxed);
        s.write_faults = stats.write_faults.load(std::memory_order_relaxed);
        s.h2d_bytes = stats.h2d_bytes.load(std::memory_order_relaxed);
        s.d2h_bytes = stats.d2h_bytes.load(std::memory_order_relaxed);
        s.transfers = stats.transfers.load(std::memory_order_relaxed);
        s.freed = freed || kept();
        return s;
    }
};

}  // namespace adsm
