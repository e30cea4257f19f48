// sgemm: C = A * B for 512x512 floats, one thread per element of C.
// Compute-bound: the transfers are small next to the kernel.
#include <vector>

#include "workload.h"

namespace {

constexpr unsigned kN = 512;

void sgemm(const adsm::thread_index &t, const float *a, const float *b, float *c, unsigned n) {
    size_t col = adsm::global_x(t), row = adsm::global_y(t);
    if (row >= n || col >= n) return;
    float s = 0;
    for (unsigned k = 0; k < n; ++k) s += a[row * n + k] * b[k * n + col];
    c[row * n + col] = s;
}
const wl::kernel<sgemm> k("sgemm");

void fill(float *a, float *b) {
    wl::Lcg g(7);
    for (size_t i = 0; i < size_t{kN} * kN; ++i) {
        a[i] = g.unit() - 0.5f;
        b[i] = g.unit() - 0.5f;
    }
}

double consume(const float *c) {
    double s = 0;
    for (size_t i = 0; i < size_t{kN} * kN; ++i) s += c[i] * static_cast<double>(i % 13);
    return s;
}

double reference() {
    std::vector<float> a(kN * kN), b(kN * kN), c(kN * kN, 0.0f);
    fill(a.data(), b.data());
    for (unsigned i = 0; i < kN; ++i)
        for (unsigned k = 0; k < kN; ++k)
            for (unsigned j = 0; j < kN; ++j) c[i * kN + j] += a[i * kN + k] * b[k * kN + j];
    return consume(c.data());
}

wl::Result run(wl::Gpu &g, const std::string &) {
    const size_t n2 = size_t{kN} * kN, bytes = n2 * sizeof(float);
    const adsm::dim3 block(16, 16), grid(kN / 16, kN / 16);
    wl::Result r;
    r.tolerance = 1e-3;
    r.reference = reference();
    wl::timed_begin();
    wl::host_buffer<float> a(g, n2), b(g, n2), c(g, n2);
    fill(a.data(), b.data());
    if (g.unified()) {
        k(g, grid, block, a.data(), b.data(), c.data(), kN);
        g.sync();
        r.checksum = consume(c.data());
        wl::timed_end();
    } else {
        wl::device_buffer<float> da(g, n2), db(g, n2), dc(g, n2);
        g.to_device(da.data(), a.data(), bytes);
        g.to_device(db.data(), b.data(), bytes);
        k(g, grid, block, da.data(), db.data(), dc.data(), kN);
        g.to_host(c.data(), dc.data(), bytes);
        r.checksum = consume(c.data());
        wl::timed_end();  // before the buffers' frees
    }
    return r;
}

wl::Register reg("sgemm", "C = A*B, 512x512 floats, one thread per element", run);

}  // namespace
