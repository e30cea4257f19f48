// The simulated interconnect: a full-duplex link with a bandwidth and a
// per-transfer latency.  Transfers in one direction queue behind each other;
// a copy completes no earlier than the link would have delivered it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace adsm {

enum class Direction { to_device = 0, to_host = 1 };

class LinkModel {
public:
    LinkModel(double gbps, double latency_us);
    bool enabled() const { return enabled_; }
    double gbps() const { return gbps_; }

    // Books the link for n bytes starting no earlier than `now`; returns the
    // time the transfer completes.
    uint64_t reserve(Direction d, size_t n, uint64_t now);

private:
    bool enabled_;
    double gbps_;
    double ns_per_byte_;
    uint64_t latency_ns_;
    std::atomic<uint64_t> busy_until_[2] = {};
};

}  // namespace adsm
