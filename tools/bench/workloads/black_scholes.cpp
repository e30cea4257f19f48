// Black-Scholes: European call and put prices for 4M options; three inputs
// in, two outputs back, a few dozen flops per option.
#include <cmath>
#include <vector>

#include "workload.h"

namespace {

// 4M options at full size.
size_t options() {
    static const size_t n = wl::scaled(size_t{4} << 20, 256);
    return n;
}
constexpr float kRate = 0.02f, kVol = 0.30f;

float cnd(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    float k = 1.0f / (1.0f + 0.2316419f * std::fabs(d));
    float c = 0.3989422804f * std::exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

void price(const float *s, const float *x, const float *t, float *call, float *put, size_t i) {
    float sq = std::sqrt(t[i]);
    float d1 = (std::log(s[i] / x[i]) + (kRate + 0.5f * kVol * kVol) * t[i]) / (kVol * sq);
    float d2 = d1 - kVol * sq;
    float e = x[i] * std::exp(-kRate * t[i]);
    call[i] = s[i] * cnd(d1) - e * cnd(d2);
    put[i] = e * (1.0f - cnd(d2)) - s[i] * (1.0f - cnd(d1));
}

void black_scholes(const adsm::thread_index &t, const float *s, const float *x, const float *tt, float *call,
                   float *put, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) price(s, x, tt, call, put, i);
}
const wl::kernel<black_scholes> k("black_scholes");

void fill(float *s, float *x, float *t) {
    const size_t n = options();
    wl::Lcg g(3);
    for (size_t i = 0; i < n; ++i) {
        s[i] = 5.0f + 25.0f * g.unit();
        x[i] = 1.0f + 99.0f * g.unit();
        t[i] = 0.25f + 9.75f * g.unit();
    }
}

double consume(const float *call, const float *put) {
    const size_t n = options();
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += call[i] + 0.5 * put[i];
    return sum;
}

double reference() {
    const size_t n = options();
    std::vector<float> s(n), x(n), t(n), call(n), put(n);
    fill(s.data(), x.data(), t.data());
    for (size_t i = 0; i < n; ++i) price(s.data(), x.data(), t.data(), call.data(), put.data(), i);
    return consume(call.data(), put.data());
}

wl::Result run(wl::Gpu &g, const std::string &) {
    const size_t n = options();
    const size_t bytes = n * sizeof(float);
    wl::Result r;
    r.tolerance = 1e-6;
    r.reference = reference();
    wl::timed_begin();
    wl::host_buffer<float> s(g, n), x(g, n), t(g, n), call(g, n), put(g, n);
    fill(s.data(), x.data(), t.data());
    if (g.unified()) {
        k(g, adsm::blocks_for(n, 256), 256, s.data(), x.data(), t.data(), call.data(), put.data(), n);
        g.sync();
        r.checksum = consume(call.data(), put.data());
        wl::timed_end();
    } else {
        wl::device_buffer<float> ds(g, n), dx(g, n), dt(g, n), dcall(g, n), dput(g, n);
        g.to_device(ds.data(), s.data(), bytes);
        g.to_device(dx.data(), x.data(), bytes);
        g.to_device(dt.data(), t.data(), bytes);
        k(g, adsm::blocks_for(n, 256), 256, ds.data(), dx.data(), dt.data(), dcall.data(), dput.data(), n);
        g.to_host(call.data(), dcall.data(), bytes);
        g.to_host(put.data(), dput.data(), bytes);
        r.checksum = consume(call.data(), put.data());
        wl::timed_end();  // before the buffers' frees
    }
    return r;
}

wl::Register reg("blackscholes", "call and put prices of 4M European options", run);

}  // namespace
