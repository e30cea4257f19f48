#include "os/fault_injection.h"

#include <atomic>

namespace adsm::os::injection {
namespace {
constexpr unsigned kSites = static_cast<unsigned>(Site::count_);
std::atomic<uint64_t> g_countdown[kSites];
std::atomic<uint64_t> g_more[kSites];  // failures still to come after the nth
std::atomic<uint64_t> g_injected[kSites];

// Takes one from c if it is not 0; returns what it was.
uint64_t take_one(std::atomic<uint64_t> &c) {
    uint64_t v = c.load(std::memory_order_relaxed);
    while (v != 0 && !c.compare_exchange_weak(v, v - 1, std::memory_order_relaxed)) {
    }
    return v;
}
}  // namespace

void arm(Site site, uint64_t nth, uint64_t times) {
    const unsigned i = static_cast<unsigned>(site);
    g_countdown[i].store(0, std::memory_order_relaxed);
    g_more[i].store(nth && times ? times - 1 : 0, std::memory_order_relaxed);
    g_countdown[i].store(nth, std::memory_order_relaxed);
}

bool should_fail(Site site) {
    const unsigned i = static_cast<unsigned>(site);
    const uint64_t v = take_one(g_countdown[i]);
    if (v > 1) return false;
    if (v == 0 && take_one(g_more[i]) == 0) return false;
    g_injected[i].fetch_add(1, std::memory_order_relaxed);
    return true;
}

uint64_t injected(Site site) { return g_injected[static_cast<unsigned>(site)].load(std::memory_order_relaxed); }

}  // namespace adsm::os::injection
