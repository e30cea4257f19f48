// histogram: 16M keys counted into 1M bins by the device; the CPU then
// looks at 1% of the bins (a range query), so most of the output never
// needs to come back.
#include <vector>

#include "workload.h"

namespace {

constexpr size_t kKeys = size_t{16} << 20, kBins = size_t{1} << 20;
constexpr size_t kQueryFirst = 300000, kQueryBins = kBins / 100;
constexpr size_t kPerThread = 256;

void count(const adsm::thread_index &t, const uint32_t *keys, uint32_t *bins, size_t n, size_t per) {
    size_t first = adsm::global_x(t) * per;
    for (size_t i = first; i < first + per && i < n; ++i)
        __atomic_fetch_add(&bins[keys[i] % kBins], 1u, __ATOMIC_RELAXED);
}

void fill(uint32_t *keys) {
    wl::Lcg g(11);
    for (size_t i = 0; i < kKeys; ++i) keys[i] = g.next();
}

double consume(const uint32_t *bins) {
    double s = 0;
    for (size_t i = kQueryFirst; i < kQueryFirst + kQueryBins; ++i) s += bins[i] * static_cast<double>(i % 97 + 1);
    return s;
}

double reference() {
    std::vector<uint32_t> keys(kKeys), bins(kBins, 0);
    fill(keys.data());
    for (uint32_t k : keys) bins[k % kBins]++;
    return consume(bins.data());
}

wl::Result run(wl::Variant v, const std::string &) {
    static const adsm::kernel<count> k("histogram");
    const size_t threads = kKeys / kPerThread;
    wl::Result r;
    r.reference = reference();
    if (v == wl::Variant::adsm) {
        wl::timed_begin();
        adsm::shared_array<uint32_t> keys(kKeys), bins(kBins);
        fill(keys.data());
        adsm::check(adsmMemset(bins.data(), 0, kBins * sizeof(uint32_t)));
        k(adsm::blocks_for(threads, 256), 256, keys.data(), bins.data(), kKeys, kPerThread);
        adsm::sync();
        r.checksum = consume(bins.data());
        wl::timed_end();
    } else {
        wl::timed_begin();
        std::vector<uint32_t> keys(kKeys), part(kQueryBins);
        adsm::device_array<uint32_t> dkeys(kKeys), dbins(kBins);
        fill(keys.data());
        dkeys.copy_from_host(keys.data(), kKeys);
        adsm::check(adsmDeviceMemset(dbins.data(), 0, kBins * sizeof(uint32_t)));
        k(adsm::blocks_for(threads, 256), 256, dkeys.data(), dbins.data(), kKeys, kPerThread);
        adsm::sync();
        dbins.copy_to_host(part.data(), kQueryBins, kQueryFirst);
        // consume() indexes absolute bins: shift the copied part into place.
        double s = 0;
        for (size_t i = 0; i < kQueryBins; ++i) s += part[i] * static_cast<double>((kQueryFirst + i) % 97 + 1);
        r.checksum = s;
        wl::timed_end();
    }
    return r;
}

wl::Register reg("histogram", "16M keys into 1M bins; the CPU reads 1% of the bins", run);

}  // namespace
