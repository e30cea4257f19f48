#include "support/stats.h"

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
    case Counter::evictions: return "rolling evictions";
    case Counter::prefetched_blocks: return "blocks prefetched";
    case Counter::count_: break;
    }
    return "?";
}

void Stats::print(FILE *out, const char *device, const char *protocol) const {
    fprintf(out, "adsm statistics (device %s, protocol %s)\n", device, protocol);
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); ++i) {
        auto c = static_cast<Counter>(i);
        fprintf(out, "  %-26s %14llu\n", name(c), static_cast<unsigned long long>(get(c)));
    }
    fflush(out);
}

}  // namespace adsm
