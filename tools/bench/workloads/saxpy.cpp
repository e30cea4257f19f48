// saxpy: y = a*x + y over 8M floats; the CPU writes both inputs and reads
// all of y.  Moves everything once each way: the floor for any protocol.
#include <vector>

#include "workload.h"

namespace {

constexpr size_t kN = size_t{8} << 20;
constexpr float kA = 1.5f;

void saxpy(const adsm::thread_index &t, float a, const float *x, float *y, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) y[i] = a * x[i] + y[i];
}

void fill(float *x, float *y) {
    for (size_t i = 0; i < kN; ++i) {
        x[i] = static_cast<float>(i % 1000) * 0.001f;
        y[i] = static_cast<float>(i % 7);
    }
}

double consume(const float *y) {
    double s = 0;
    for (size_t i = 0; i < kN; ++i) s += y[i];
    return s;
}

wl::Result run(wl::Variant v, const std::string &) {
    static const adsm::kernel<saxpy> k("saxpy");
    wl::Result r;
    r.tolerance = 1e-6;
    for (size_t i = 0; i < kN; ++i) r.reference += kA * (static_cast<float>(i % 1000) * 0.001f) + static_cast<float>(i % 7);
    if (v == wl::Variant::adsm) {
        wl::timed_begin();
        adsm::shared_array<float> x(kN), y(kN);
        fill(x.data(), y.data());
        k(adsm::blocks_for(kN, 256), 256, kA, x.data(), y.data(), kN);
        adsm::sync();
        r.checksum = consume(y.data());
        wl::timed_end();
    } else {
        wl::timed_begin();
        std::vector<float> x(kN), y(kN);
        adsm::device_array<float> dx(kN), dy(kN);
        fill(x.data(), y.data());
        dx.copy_from_host(x.data(), kN);
        dy.copy_from_host(y.data(), kN);
        k(adsm::blocks_for(kN, 256), 256, kA, dx.data(), dy.data(), kN);
        adsm::sync();
        dy.copy_to_host(y.data(), kN);
        r.checksum = consume(y.data());
        wl::timed_end();
    }
    return r;
}

wl::Register reg("saxpy", "y = a*x + y, 8M floats, all of y read back", run);

}  // namespace
