// saxpy: y = a*x + y over 8M floats; the CPU writes both inputs and reads
// all of y.  Moves everything once each way: the floor for any protocol.
#include "workload.h"

namespace {

// 8M floats at full size.
size_t count() {
    static const size_t n = wl::scaled(size_t{8} << 20, 256);
    return n;
}
constexpr float kA = 1.5f;

void saxpy(const adsm::thread_index &t, float a, const float *x, float *y, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) y[i] = a * x[i] + y[i];
}
const wl::kernel<saxpy> k("saxpy");

void fill(float *x, float *y) {
    const size_t n = count();
    for (size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 1000) * 0.001f;
        y[i] = static_cast<float>(i % 7);
    }
}

double consume(const float *y) {
    const size_t n = count();
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += y[i];
    return s;
}

wl::Result run(wl::Gpu &g, const std::string &) {
    const size_t n = count();
    wl::Result r;
    r.tolerance = 1e-6;
    for (size_t i = 0; i < n; ++i) r.reference += kA * (static_cast<float>(i % 1000) * 0.001f) + static_cast<float>(i % 7);
    wl::timed_begin();
    wl::host_buffer<float> x(g, n), y(g, n);
    fill(x.data(), y.data());
    if (g.unified()) {
        k(g, adsm::blocks_for(n, 256), 256, kA, x.data(), y.data(), n);
        g.sync();
        r.checksum = consume(y.data());
        wl::timed_end();
    } else {
        wl::device_buffer<float> dx(g, n), dy(g, n);
        g.to_device(dx.data(), x.data(), n * sizeof(float));
        g.to_device(dy.data(), y.data(), n * sizeof(float));
        k(g, adsm::blocks_for(n, 256), 256, kA, dx.data(), dy.data(), n);
        g.to_host(y.data(), dy.data(), n * sizeof(float));
        r.checksum = consume(y.data());
        wl::timed_end();  // before the buffers' frees
    }
    return r;
}

wl::Register reg("saxpy", "y = a*x + y, 8M floats, all of y read back", run);

}  // namespace
