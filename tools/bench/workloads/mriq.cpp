// MRI-Q (after Parboil's mri-q): Q at 32K voxels from 512 k-space samples,
// with the sample and voxel arrays read from a file with fread, as the
// original program reads its input.  The ADSM variant freads straight into
// shared memory.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "workload.h"

namespace {

constexpr size_t kK = 512;
// 32K voxels at full size.
size_t voxels() {
    static const size_t n = wl::scaled(32 << 10, 128);
    return n;
}
constexpr float kTwoPi = 6.2831853071795864769f;

void compute_q(const adsm::thread_index &t, const float *k, const float *xyz, float *qr, float *qi, size_t nk,
               size_t nx) {
    // k holds kx, ky, kz, phiMag for each sample; xyz holds x, y, z per voxel.
    size_t v = adsm::global_x(t);
    if (v >= nx) return;
    float x = xyz[3 * v], y = xyz[3 * v + 1], z = xyz[3 * v + 2], sr = 0, si = 0;
    for (size_t s = 0; s < nk; ++s) {
        float arg = kTwoPi * (k[4 * s] * x + k[4 * s + 1] * y + k[4 * s + 2] * z);
        sr += k[4 * s + 3] * std::cos(arg);
        si += k[4 * s + 3] * std::sin(arg);
    }
    qr[v] = sr;
    qi[v] = si;
}
const wl::kernel<compute_q> kq("mriq");

std::string input_file(const std::string &dir) {
    const size_t nx = voxels();
    std::string path = dir + "/mriq.input";
    std::vector<float> data(4 * kK + 3 * nx);
    wl::Lcg g(5);
    for (float &f : data) f = g.unit() - 0.5f;
    FILE *f = fopen(path.c_str(), "wb");
    if (!f || fwrite(data.data(), sizeof(float), data.size(), f) != data.size() || fclose(f) != 0)
        throw std::runtime_error("cannot write " + path);
    return path;
}

void read_input(const std::string &path, float *k, float *xyz) {
    const size_t nx = voxels();
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    bool ok = fread(k, sizeof(float), 4 * kK, f) == 4 * kK && fread(xyz, sizeof(float), 3 * nx, f) == 3 * nx;
    fclose(f);
    if (!ok) throw std::runtime_error("short read from " + path);
}

double consume(const float *qr, const float *qi) {
    const size_t nx = voxels();
    double s = 0;
    for (size_t i = 0; i < nx; ++i) s += std::fabs(qr[i]) + std::fabs(qi[i]);
    return s;
}

double reference(const std::string &path) {
    const size_t nx = voxels();
    std::vector<float> k(4 * kK), xyz(3 * nx), qr(nx), qi(nx);
    read_input(path, k.data(), xyz.data());
    adsm::thread_index t{};
    t.blockDim = {1, 1, 1};
    for (size_t v = 0; v < nx; ++v) {
        t.blockIdx.x = static_cast<unsigned>(v);
        compute_q(t, k.data(), xyz.data(), qr.data(), qi.data(), kK, nx);
    }
    return consume(qr.data(), qi.data());
}

wl::Result run(wl::Gpu &g, const std::string &scratch) {
    const size_t nx = voxels();
    std::string path = input_file(scratch);
    wl::Result r;
    r.tolerance = 1e-5;
    r.reference = reference(path);
    wl::timed_begin();
    wl::host_buffer<float> k(g, 4 * kK), xyz(g, 3 * nx), qr(g, nx), qi(g, nx);
    read_input(path, k.data(), xyz.data());
    if (g.unified()) {
        kq(g, adsm::blocks_for(nx, 128), 128, k.data(), xyz.data(), qr.data(), qi.data(), kK, nx);
        g.sync();
        r.checksum = consume(qr.data(), qi.data());
        wl::timed_end();
    } else {
        wl::device_buffer<float> dk(g, 4 * kK), dxyz(g, 3 * nx), dqr(g, nx), dqi(g, nx);
        g.to_device(dk.data(), k.data(), 4 * kK * sizeof(float));
        g.to_device(dxyz.data(), xyz.data(), 3 * nx * sizeof(float));
        kq(g, adsm::blocks_for(nx, 128), 128, dk.data(), dxyz.data(), dqr.data(), dqi.data(), kK, nx);
        g.to_host(qr.data(), dqr.data(), nx * sizeof(float));
        g.to_host(qi.data(), dqi.data(), nx * sizeof(float));
        r.checksum = consume(qr.data(), qi.data());
        wl::timed_end();  // before the buffers' frees
    }
    remove(path.c_str());
    return r;
}

wl::Register reg("mriq", "MRI-Q: 32K voxels x 512 k-space samples, input read with fread", run);

}  // namespace
