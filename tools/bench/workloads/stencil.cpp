// stencil: 10 Jacobi iterations on a 1024x2048 grid of floats, the slab of
// a 1D domain decomposition.  Between iterations the CPU exchanges halos:
// it reads the first and last interior rows and writes them into the
// opposite halo rows (periodic), touching 32 KiB of a 8 MiB grid.
#include <utility>
#include <vector>

#include "workload.h"

namespace {

constexpr size_t kH = 1024, kW = 2048, kCells = kH * kW;
constexpr int kIters = 10;

void jacobi(const adsm::thread_index &t, const float *in, float *out, size_t h, size_t w) {
    size_t x = adsm::global_x(t), y = adsm::global_y(t);
    if (x >= w || y >= h) return;
    size_t i = y * w + x;
    if (y == 0 || y == h - 1 || x == 0 || x == w - 1) out[i] = in[i];
    else out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
const wl::kernel<jacobi> k("jacobi");

void init(float *g) {
    for (size_t i = 0; i < kCells; ++i) g[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.001f;
}

// The exchange: halo rows get the opposite interior rows.
void exchange(float *g) {
    for (size_t x = 0; x < kW; ++x) {
        float top = g[1 * kW + x], bottom = g[(kH - 2) * kW + x];
        g[0 * kW + x] = bottom;
        g[(kH - 1) * kW + x] = top;
    }
}

double consume(const float *g) {
    double s = 0;
    for (size_t i = 0; i < kCells; ++i) s += g[i];
    return s;
}

double reference() {
    std::vector<float> a(kCells), b(kCells);
    init(a.data());
    for (int it = 0; it < kIters; ++it) {
        for (size_t y = 0; y < kH; ++y)
            for (size_t x = 0; x < kW; ++x) {
                size_t i = y * kW + x;
                if (y == 0 || y == kH - 1 || x == 0 || x == kW - 1) b[i] = a[i];
                else b[i] = 0.2f * (a[i] + a[i - 1] + a[i + 1] + a[i - kW] + a[i + kW]);
            }
        exchange(b.data());
        std::swap(a, b);
    }
    return consume(a.data());
}

wl::Result run(wl::Gpu &g, const std::string &) {
    const adsm::dim3 block(256, 1), grid(kW / 256, kH);
    constexpr size_t row = kW * sizeof(float);
    wl::Result r;
    r.tolerance = 1e-6;
    r.reference = reference();
    wl::timed_begin();
    if (g.unified()) {
        wl::host_buffer<float> a(g, kCells), b(g, kCells);
        init(a.data());
        float *in = a.data(), *out = b.data();
        for (int it = 0; it < kIters; ++it) {
            k(g, grid, block, in, out, kH, kW);
            g.sync();
            exchange(out);
            std::swap(in, out);
        }
        r.checksum = consume(in);
        wl::timed_end();
    } else {
        wl::host_buffer<float> host(g, kCells), rows(g, 2 * kW);
        wl::device_buffer<float> a(g, kCells), b(g, kCells);
        init(host.data());
        g.to_device(a.data(), host.data(), kCells * sizeof(float));
        float *in = a.data(), *out = b.data();
        for (int it = 0; it < kIters; ++it) {
            k(g, grid, block, in, out, kH, kW);
            // Only the rows the exchange reads come back, and only the halos go out.
            g.to_host(rows.data(), out + 1 * kW, row);
            g.to_host(rows.data() + kW, out + (kH - 2) * kW, row);
            g.to_device(out + 0 * kW, rows.data() + kW, row);
            g.to_device(out + (kH - 1) * kW, rows.data(), row);
            std::swap(in, out);
        }
        g.to_host(host.data(), in, kCells * sizeof(float));
        r.checksum = consume(host.data());
        wl::timed_end();  // before the buffers' frees
    }
    return r;
}

wl::Register reg("stencil", "10 Jacobi sweeps on 1024x2048; the CPU exchanges the halo rows between sweeps", run);

}  // namespace
