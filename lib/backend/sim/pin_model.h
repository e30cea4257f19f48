// What pinning the host mirror costs a GPU's host, charged as time by the
// simulated device (ADSM_SIM_PIN_US_PER_MIB), so that it predicts the
// GPU's ratios.  The cuda back-end registers the allocated pages of a 2 MiB
// piece of the mirror with the driver at their first use: the CPU's first
// fault in the piece, else the first copy through it (gpu/granules.h); on
// an H100's host that costs 53 to 98 us per MiB beyond making the pages.
// This charges the same pages at the same moments and pins nothing: the
// pages are made, and entered into the CPU's view, by the same host code
// as on the GPU.  (Measured side by side, it moved the H100 preset's
// predicted ratios by a few hundredths: README, "On an NVIDIA GPU".)
//
// Each piece is one atomic word (committed bytes, pinned bytes, whether the
// CPU has used it), so the fault handler charges without a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/device.h"

namespace adsm {

class PinModel {
public:
    static constexpr uint64_t kPiece = 2ull << 20;  // the H100's granularity

    ~PinModel();
    // us_per_mib 0: off (every call does nothing).
    void init(double us_per_mib, uintptr_t base, uint64_t size, const uint8_t *host_alias);
    bool enabled() const { return pieces_ != nullptr; }

    // Allocated device memory at window addresses: its mirror pages are
    // pinned at their first use; freed ones stay pinned while their piece
    // has any allocation (as the driver's registration does).
    void committed(uintptr_t addr, uint64_t bytes);
    void decommitted(uintptr_t addr, uint64_t bytes);
    // A copy through host memory p: the mirror's pieces it touches (named
    // through the alias) pay for their unpinned pages.
    void use_for_copy(const void *p, size_t n);
    // The CPU uses [*start, *start + *len) of an object at [lo, hi): as
    // Device::pin_for_cpu, widened to the pieces within the object.
    Device::MirrorUse use_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len);

private:
    // Charges pieces [first, last]'s unpinned pages (marking them seen by
    // the CPU when `cpu`); whether the CPU saw any of them for the first time.
    bool charge(uint64_t first, uint64_t last, bool cpu);

    double ns_per_byte_ = 0;
    uintptr_t base_ = 0;
    uint64_t size_ = 0;
    const uint8_t *alias_ = nullptr;
    std::atomic<uint64_t> *pieces_ = nullptr;  // mapped, untouched pages until used
    uint64_t count_ = 0;
};

}  // namespace adsm
