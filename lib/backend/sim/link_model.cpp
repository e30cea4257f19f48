#include "backend/sim/link_model.h"

namespace adsm {

LinkModel::LinkModel(double gbps, double latency_us)
    : enabled_(gbps > 0 || latency_us > 0),
      gbps_(gbps),
      ns_per_byte_(gbps > 0 ? 1.0 / gbps : 0.0),
      latency_ns_(static_cast<uint64_t>(latency_us * 1000.0)) {}

uint64_t LinkModel::reserve(Direction d, size_t n, uint64_t now) {
    auto &busy = busy_until_[static_cast<int>(d)];
    uint64_t cost = latency_ns_ + static_cast<uint64_t>(static_cast<double>(n) * ns_per_byte_);
    uint64_t cur = busy.load(std::memory_order_relaxed);
    for (;;) {
        uint64_t start = cur > now ? cur : now;
        uint64_t end = start + cost;
        if (busy.compare_exchange_weak(cur, end, std::memory_order_relaxed)) return end;
    }
}

}  // namespace adsm
