#include "os/fault_injection.h"

#include <atomic>

namespace adsm::os::injection {
namespace {
constexpr unsigned kSites = static_cast<unsigned>(Site::count_);
std::atomic<uint64_t> g_countdown[kSites];
std::atomic<uint64_t> g_injected[kSites];
}  // namespace

void arm(Site site, uint64_t nth) { g_countdown[static_cast<unsigned>(site)].store(nth, std::memory_order_relaxed); }

bool should_fail(Site site) {
    auto &c = g_countdown[static_cast<unsigned>(site)];
    uint64_t v = c.load(std::memory_order_relaxed);
    while (v != 0) {
        if (c.compare_exchange_weak(v, v - 1, std::memory_order_relaxed)) {
            if (v != 1) return false;
            g_injected[static_cast<unsigned>(site)].fetch_add(1, std::memory_order_relaxed);
            return true;
        }
    }
    return false;
}

uint64_t injected(Site site) { return g_injected[static_cast<unsigned>(site)].load(std::memory_order_relaxed); }

}  // namespace adsm::os::injection
