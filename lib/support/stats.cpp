#include "support/stats.h"

#include <algorithm>

namespace adsm {

Stats &stats() {
    static Stats *s = new Stats;  // never destroyed: counted into until the last thread exits
    return *s;
}

void Stats::reset() {
    for (auto &a : v_) a.store(0, std::memory_order_relaxed);
}

const char *Stats::name(Counter c) {
    switch (c) {
    case Counter::allocs: return "allocations";
    case Counter::frees: return "frees";
    case Counter::bytes_allocated: return "bytes allocated";
    case Counter::kernels: return "kernels launched";
    case Counter::syncs: return "syncs";
    case Counter::kernel_failures: return "kernel failures";
    case Counter::h2d_transfers: return "transfers host->device";
    case Counter::h2d_bytes: return "bytes host->device";
    case Counter::d2h_transfers: return "transfers device->host";
    case Counter::d2h_bytes: return "bytes device->host";
    case Counter::async_copies: return "asynchronous copies";
    case Counter::device_fills: return "device-side fills";
    case Counter::read_faults: return "read faults";
    case Counter::write_faults: return "write faults";
    case Counter::race_faults: return "faults during a kernel";
    case Counter::fault_ns: return "ns in the fault handler";
    case Counter::tracking_ns: return "ns finding written pages";
    case Counter::evictions: return "rolling evictions";
    case Counter::prefetched_blocks: return "blocks prefetched";
    case Counter::chaos_cycles: return "chaos release/acquire cycles";
    case Counter::count_: break;
    }
    return "?";
}

void Stats::remember_freed(const RegionSummary &r) {
    if (r.traffic() == 0 && r.read_faults + r.write_faults == 0) return;
    std::lock_guard<std::mutex> lock(top_mu_);
    if (top_freed_.size() < kTopRegions) {
        top_freed_.push_back(r);
        return;
    }
    auto least = std::min_element(top_freed_.begin(), top_freed_.end(),
                                  [](const RegionSummary &a, const RegionSummary &b) { return a.traffic() < b.traffic(); });
    if (least->traffic() < r.traffic()) *least = r;
}

void Stats::print(FILE *out, const char *heading, const std::vector<RegionSummary> &live) const {
    fprintf(out, "adsm statistics (%s)\n", heading);
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); ++i) {
        auto c = static_cast<Counter>(i);
        fprintf(out, "  %-26s %14llu\n", name(c), static_cast<unsigned long long>(get(c)));
    }
    std::vector<RegionSummary> all = live;
    {
        std::lock_guard<std::mutex> lock(top_mu_);
        all.insert(all.end(), top_freed_.begin(), top_freed_.end());
    }
    all.erase(std::remove_if(all.begin(), all.end(),
                             [](const RegionSummary &r) { return r.traffic() == 0 && r.read_faults + r.write_faults == 0; }),
              all.end());
    std::sort(all.begin(), all.end(), [](const RegionSummary &a, const RegionSummary &b) { return a.traffic() > b.traffic(); });
    if (all.size() > kTopRegions) all.resize(kTopRegions);
    if (!all.empty()) {
        fprintf(out, "  busiest regions:\n  %-16s %12s %9s %9s %14s %14s %9s\n", "address", "size", "rd faults",
                "wr faults", "host->device", "device->host", "transfers");
        for (const RegionSummary &r : all)
            fprintf(out, "  %-16p %12zu %9llu %9llu %14llu %14llu %9llu%s\n", reinterpret_cast<void *>(r.address), r.size,
                    static_cast<unsigned long long>(r.read_faults), static_cast<unsigned long long>(r.write_faults),
                    static_cast<unsigned long long>(r.h2d_bytes), static_cast<unsigned long long>(r.d2h_bytes),
                    static_cast<unsigned long long>(r.transfers), r.freed ? "  (freed)" : "");
    }
    fflush(out);
}

}  // namespace adsm
