// The shared window as a GPU back-end sees it: device addresses the driver
// reserved, and the runtime's alias of the host mirror behind them.  What
// every GPU driver needs from it is here once: range checks, the host name
// of a window address, and copies cut at granule boundaries.
#pragma once

#include <cstddef>
#include <cstdint>

#include "support/status.h"

namespace adsm::gpu {

struct Window {
    uintptr_t base = 0;
    uint64_t size = 0;
    uint8_t *alias = nullptr;
    uint64_t granularity = 0;

    bool holds(uintptr_t dev, uint64_t n) const { return dev >= base && dev - base <= size && n <= size - (dev - base); }
    Status check(uintptr_t dev, uint64_t n) const {
        if (holds(dev, n)) return adsmSuccess;
        return fail(adsmErrorInvalidValue, "[%p, +%llu) is not device memory", reinterpret_cast<void *>(dev),
                    static_cast<unsigned long long>(n));
    }

    // A host pointer inside the window is also a device address, and a
    // driver reads it as device memory (the CUDA driver copies nothing and
    // reports success): such a pointer is named by the alias of the same
    // host bytes.  Any other host pointer is itself.
    void *host_name(const void *p) const {
        auto a = reinterpret_cast<uintptr_t>(p);
        if (a >= base && a - base < size) return alias + (a - base);
        return const_cast<void *>(p);
    }

    // Calls fn(device address, offset, length) for each piece of
    // [dev, dev+n) that lies in one granule, stopping at the first result
    // that is not `ok`: drivers copy within one physical allocation at a
    // time (the CUDA driver refuses a copy across two granules mapped side
    // by side).
    template <class R, class Fn>
    R in_pieces(uintptr_t dev, size_t n, R ok, Fn fn) const {
        for (size_t done = 0; done < n;) {
            uintptr_t at = dev + done;
            size_t piece = granularity - at % granularity;
            if (piece > n - done) piece = n - done;
            if (R r = fn(at, done, piece); r != ok) return r;
            done += piece;
        }
        return ok;
    }
};

}  // namespace adsm::gpu
