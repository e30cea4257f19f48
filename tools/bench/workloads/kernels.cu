// The workloads' kernels as GPU code: the same names, parameters and
// arithmetic as the host functions beside each workload (built without
// fused multiply-adds, so that each thread's result matches the CPU's).
#include <cstddef>
#include <cstdint>

namespace {
__device__ size_t global_x() { return size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ size_t global_y() { return size_t{blockIdx.y} * blockDim.y + threadIdx.y; }

constexpr size_t kBins = size_t{1} << 20;
constexpr float kRate = 0.02f, kVol = 0.30f, kTwoPi = 6.2831853071795864769f;

__device__ float cnd(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = 0.3989422804f * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}
}  // namespace

extern "C" __global__ void saxpy(float a, const float *x, float *y, size_t n) {
    size_t i = global_x();
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void sgemm(const float *a, const float *b, float *c, unsigned n) {
    size_t col = global_x(), row = global_y();
    if (row >= n || col >= n) return;
    float s = 0;
    for (unsigned k = 0; k < n; ++k) s += a[row * n + k] * b[k * n + col];
    c[row * n + col] = s;
}

extern "C" __global__ void jacobi(const float *in, float *out, size_t h, size_t w) {
    size_t x = global_x(), y = global_y();
    if (x >= w || y >= h) return;
    size_t i = y * w + x;
    if (y == 0 || y == h - 1 || x == 0 || x == w - 1) out[i] = in[i];
    else out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}

extern "C" __global__ void histogram(const uint32_t *keys, uint32_t *bins, size_t n, size_t per) {
    size_t first = global_x() * per;
    for (size_t i = first; i < first + per && i < n; ++i) atomicAdd(&bins[keys[i] % kBins], 1u);
}

extern "C" __global__ void black_scholes(const float *s, const float *x, const float *t, float *call, float *put,
                                         size_t n) {
    size_t i = global_x();
    if (i >= n) return;
    float sq = sqrtf(t[i]);
    float d1 = (logf(s[i] / x[i]) + (kRate + 0.5f * kVol * kVol) * t[i]) / (kVol * sq);
    float d2 = d1 - kVol * sq;
    float e = x[i] * expf(-kRate * t[i]);
    call[i] = s[i] * cnd(d1) - e * cnd(d2);
    put[i] = e * (1.0f - cnd(d2)) - s[i] * (1.0f - cnd(d1));
}

extern "C" __global__ void mriq(const float *k, const float *xyz, float *qr, float *qi, size_t nk, size_t nx) {
    size_t v = global_x();
    if (v >= nx) return;
    float x = xyz[3 * v], y = xyz[3 * v + 1], z = xyz[3 * v + 2], sr = 0, si = 0;
    for (size_t s = 0; s < nk; ++s) {
        float arg = kTwoPi * (k[4 * s] * x + k[4 * s + 1] * y + k[4 * s + 2] * z);
        sr += k[4 * s + 3] * cosf(arg);
        si += k[4 * s + 3] * sinf(arg);
    }
    qr[v] = sr;
    qi[v] = si;
}

extern "C" __global__ void transform(const uint32_t *in, uint32_t *out, size_t n) {
    size_t i = global_x();
    if (i < n) out[i] = (in[i] ^ 0x5a5a5a5au) * 2654435761u;
}
