// A region: one live allocation in the shared window.  The memory manager
// owns regions; protocols read and update their coherence fields.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace adsm {

struct Context;

enum class RegionKind : uint8_t {
    shared,  // adsmAlloc: identical CPU and device addresses
    safe,    // adsmSafeAlloc: the device copy lives at another address
    device,  // adsmDeviceAlloc: device memory only
};

struct Region {
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

    // Coherence, owned by the protocol under the owner's lock.
    bool on_device = false;   // the device holds the newest copy
    void *protocol_state = nullptr;

    // Clears everything but identity and the live flag, for a reused slot.
    void reset_fields() {
        host = dev = 0;
        size = span = 0;
        alias = nullptr;
        owner = nullptr;
        prev = next = nullptr;
        birth_call = 0;
        kind = RegionKind::shared;
        on_device = false;
        protocol_state = nullptr;
    }

    bool contains_host(uintptr_t a) const { return a >= host && a - host < span; }
    bool contains_dev(uintptr_t a) const { return a >= dev && a - dev < span; }
};

}  // namespace adsm
