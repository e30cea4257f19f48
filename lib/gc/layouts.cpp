#include "gc/layouts.h"

#include <atomic>
#include <mutex>

namespace adsm::gc {
namespace {
Layout g_layouts[kMaxLayouts];
std::atomic<unsigned> g_count{1};  // 0 is "none"
std::mutex g_mu;
}  // namespace

unsigned register_layout(ScanFunction scan, uintptr_t arg) {
    std::lock_guard<std::mutex> lock(g_mu);
    unsigned id = g_count.load(std::memory_order_relaxed);
    if (id >= kMaxLayouts || !scan) return 0;
    g_layouts[id] = Layout{scan, arg};
    // Published before any object can have the layout (an allocation in it
    // needs the number first).
    g_count.store(id + 1, std::memory_order_release);
    return id;
}

const Layout &layout(unsigned id) { return g_layouts[id < kMaxLayouts ? id : 0]; }

}  // namespace adsm::gc
