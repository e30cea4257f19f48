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

wl::Result run(wl::Variant v, const std::string &) {
    static const adsm::kernel<jacobi> k("jacobi");
    const adsm::dim3 block(256, 1), grid(kW / 256, kH);
    wl::Result r;
    r.tolerance = 1e-6;
    r.reference = reference();
    if (v == wl::Variant::adsm) {
        wl::timed_begin();
        adsm::shared_array<float> a(kCells), b(kCells);
        init(a.data());
        float *in = a.data(), *out = b.data();
        for (int it = 0; it < kIters; ++it) {
            k(grid, block, in, out, kH, kW);
            adsm::sync();
            exchange(out);
            std::swap(in, out);
        }
        r.checksum = consume(in);
        wl::timed_end();
    } else {
        wl::timed_begin();
        std::vector<float> host(kCells);
        adsm::device_array<float> a(kCells), b(kCells);
        init(host.data());
        a.copy_from_host(host.data(), kCells);
        float *in = a.data(), *out = b.data();
        std::vector<float> rows(2 * kW);
        for (int it = 0; it < kIters; ++it) {
            k(grid, block, in, out, kH, kW);
            adsm::sync();
            // Only the rows the exchange reads come back, and only the halos go out.
            adsm::check(adsmCopyToHost(rows.data(), out + 1 * kW, kW * sizeof(float)));
            adsm::check(adsmCopyToHost(rows.data() + kW, out + (kH - 2) * kW, kW * sizeof(float)));
            adsm::check(adsmCopyToDevice(out + 0 * kW, rows.data() + kW, kW * sizeof(float)));
            adsm::check(adsmCopyToDevice(out + (kH - 1) * kW, rows.data(), kW * sizeof(float)));
            std::swap(in, out);
        }
        adsm::check(adsmCopyToHost(host.data(), in, kCells * sizeof(float)));
        r.checksum = consume(host.data());
        wl::timed_end();
    }
    return r;
}

wl::Register reg("stencil", "10 Jacobi sweeps on 1024x2048; the CPU exchanges the halo rows between sweeps", run);

}  // namespace
