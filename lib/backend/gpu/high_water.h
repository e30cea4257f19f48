// How far into a table of slots any slot was ever taken, so that a scan of
// the table (a GPU's 4,096 stream slots, of which a program uses a few)
// stops there.
#pragma once

#include <atomic>
#include <cstdint>

namespace adsm::gpu {

class HighWater {
public:
    // Slot `index` is taken.
    void reach(uint32_t index) {
        for (uint32_t h = mark_.load(std::memory_order_relaxed);
             h <= index && !mark_.compare_exchange_weak(h, index + 1, std::memory_order_release);) {
        }
    }
    // Slots from here on were never taken.
    uint32_t end() const { return mark_.load(std::memory_order_acquire); }

private:
    std::atomic<uint32_t> mark_{0};
};

}  // namespace adsm::gpu
