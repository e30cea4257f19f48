// histogram: 16M keys counted into 1M bins by the device; the CPU then
// looks at 1% of the bins (a range query), so most of the output never
// needs to come back.
#include <vector>

#include "workload.h"

namespace {

constexpr size_t kBins = size_t{1} << 20;
// 16M keys at full size (the bins stay: the CPU reads the same ones).
size_t keys_count() {
    static const size_t n = wl::scaled(size_t{16} << 20, size_t{256} * 256);
    return n;
}
constexpr size_t kQueryFirst = 300000, kQueryBins = kBins / 100;
constexpr size_t kPerThread = 256;

void count(const adsm::thread_index &t, const uint32_t *keys, uint32_t *bins, size_t n, size_t per) {
    size_t first = adsm::global_x(t) * per;
    for (size_t i = first; i < first + per && i < n; ++i)
        __atomic_fetch_add(&bins[keys[i] % kBins], 1u, __ATOMIC_RELAXED);
}
const wl::kernel<count> k("histogram");

void fill(uint32_t *keys) {
    const size_t keys_n = keys_count();
    wl::Lcg g(11);
    for (size_t i = 0; i < keys_n; ++i) keys[i] = g.next();
}

double consume(const uint32_t *bins) {
    double s = 0;
    for (size_t i = kQueryFirst; i < kQueryFirst + kQueryBins; ++i) s += bins[i] * static_cast<double>(i % 97 + 1);
    return s;
}

double reference() {
    const size_t keys_n = keys_count();
    std::vector<uint32_t> keys(keys_n), bins(kBins, 0);
    fill(keys.data());
    for (uint32_t k : keys) bins[k % kBins]++;
    return consume(bins.data());
}

wl::Result run(wl::Gpu &g, const std::string &) {
    const size_t keys_n = keys_count();
    const size_t threads = keys_n / kPerThread;
    wl::Result r;
    r.reference = reference();
    wl::timed_begin();
    wl::host_buffer<uint32_t> keys(g, keys_n);
    fill(keys.data());
    if (g.unified()) {
        wl::host_buffer<uint32_t> bins(g, kBins);
        g.zero(bins.data(), kBins * sizeof(uint32_t));
        k(g, adsm::blocks_for(threads, 256), 256, keys.data(), bins.data(), keys_n, kPerThread);
        g.sync();
        r.checksum = consume(bins.data());
        wl::timed_end();
    } else {
        wl::host_buffer<uint32_t> part(g, kQueryBins);
        wl::device_buffer<uint32_t> dkeys(g, keys_n), dbins(g, kBins);
        g.to_device(dkeys.data(), keys.data(), keys_n * sizeof(uint32_t));
        g.zero(dbins.data(), kBins * sizeof(uint32_t));
        k(g, adsm::blocks_for(threads, 256), 256, dkeys.data(), dbins.data(), keys_n, kPerThread);
        // Only the bins the query reads come back.
        g.to_host(part.data(), dbins.data() + kQueryFirst, kQueryBins * sizeof(uint32_t));
        // consume() indexes absolute bins: shift the copied part into place.
        double s = 0;
        for (size_t i = 0; i < kQueryBins; ++i) s += part[i] * static_cast<double>((kQueryFirst + i) % 97 + 1);
        r.checksum = s;
        wl::timed_end();  // before the buffers' frees
    }
    return r;
}

wl::Register reg("histogram", "16M keys into 1M bins; the CPU reads 1% of the bins", run);

}  // namespace
