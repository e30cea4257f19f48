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
    static const char *const names[] = {
#define ADSM_COUNTER_NAME(id, text) text,
        ADSM_COUNTERS(ADSM_COUNTER_NAME)
#undef ADSM_COUNTER_NAME
    };
    return c < Counter::count_ ? names[idx(c)] : "?";
}

const char *Stats::key(Counter c) {
    static const char *const keys[] = {
#define ADSM_COUNTER_KEY(id, text) #id,
        ADSM_COUNTERS(ADSM_COUNTER_KEY)
#undef ADSM_COUNTER_KEY
    };
    return c < Counter::count_ ? keys[idx(c)] : "?";
}

void Stats::attribute(Counter c, uint64_t v) {
    switch (c) {
    case Counter::read_faults: profile::charge(profile::Charge::read_faults, v); break;
    case Counter::write_faults: profile::charge(profile::Charge::write_faults, v); break;
    case Counter::h2d_bytes: profile::charge(profile::Charge::h2d_bytes, v); break;
    case Counter::d2h_bytes: profile::charge(profile::Charge::d2h_bytes, v); break;
    case Counter::io_bytes: profile::charge(profile::Charge::io_bytes, v); break;
    default: break;
    }
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

std::vector<RegionSummary> Stats::busiest(const std::vector<RegionSummary> &live) const {
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
    return all;
}

void Stats::print(FILE *out, const char *heading, const std::vector<RegionSummary> &live) const {
    fprintf(out, "adsm statistics (%s)\n", heading);
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); ++i) {
        auto c = static_cast<Counter>(i);
        fprintf(out, "  %-30s %14llu\n", name(c), static_cast<unsigned long long>(get(c)));
    }
    std::vector<RegionSummary> all = busiest(live);
    if (!all.empty()) {
        fprintf(out, "  busiest regions:\n  %-16s %12s %9s %9s %14s %14s %9s\n", "address", "size", "rd faults",
                "wr faults", "host->device", "device->host", "transfers");
        for (const RegionSummary &r : all)
            fprintf(out, "  %-16p %12zu %9llu %9llu %14llu %14llu %9llu%s\n", reinterpret_cast<void *>(r.address), r.size,
                    static_cast<unsigned long long>(r.read_faults), static_cast<unsigned long long>(r.write_faults),
                    static_cast<unsigned long long>(r.h2d_bytes), static_cast<unsigned long long>(r.d2h_bytes),
                    static_cast<unsigned long long>(r.transfers),
                    r.kept ? "  (freed, kept for reuse)" : r.freed ? "  (freed)" : "");
    }
    fflush(out);
}

void Stats::write_json(FILE *out, const std::vector<std::pair<std::string, std::string>> &about,
                       const std::vector<RegionSummary> &live) const {
    fputs("{\n", out);
    for (const auto &[k, v] : about) fprintf(out, "  \"%s\": \"%s\",\n", k.c_str(), v.c_str());
    fputs("  \"totals\": {", out);
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); ++i) {
        auto c = static_cast<Counter>(i);
        fprintf(out, "%s\n    \"%s\": %llu", i ? "," : "", key(c), static_cast<unsigned long long>(get(c)));
    }
    fputs("\n  },\n  \"regions\": [", out);
    std::vector<RegionSummary> all = busiest(live);
    for (size_t i = 0; i < all.size(); ++i) {
        const RegionSummary &r = all[i];
        fprintf(out,
                "%s\n    {\"address\": \"%p\", \"size\": %zu, \"read_faults\": %llu, \"write_faults\": %llu, "
                "\"h2d_bytes\": %llu, \"d2h_bytes\": %llu, \"transfers\": %llu, \"freed\": %s, \"kept\": %s}",
                i ? "," : "", reinterpret_cast<void *>(r.address), r.size, static_cast<unsigned long long>(r.read_faults),
                static_cast<unsigned long long>(r.write_faults), static_cast<unsigned long long>(r.h2d_bytes),
                static_cast<unsigned long long>(r.d2h_bytes), static_cast<unsigned long long>(r.transfers),
                r.freed ? "true" : "false", r.kept ? "true" : "false");
    }
    fputs(all.empty() ? "]\n}\n" : "\n  ]\n}\n", out);
    fflush(out);
}

}  // namespace adsm
