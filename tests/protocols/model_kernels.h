// The model-based test's kernels, shared with the library a remote device
// server loads to run them (tests/remote/model_kernels.cpp).
#pragma once

#include <adsm.hpp>

#include <cstdint>
#include <cstring>

namespace {

uint8_t transform(uint8_t v, uint8_t a, uint8_t b) { return static_cast<uint8_t>(v * a + b); }

uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// dst[i] = src[i] * a + b
void transform_kernel(const adsm::thread_index &t, const uint8_t *src, uint8_t *dst, size_t n, uint8_t a, uint8_t b) {
    size_t i = adsm::global_x(t);
    if (i < n) dst[i] = transform(src[i], a, b);
}

// One thread hashes src into 8 bytes at dst: the kernel proves it read what
// the CPU wrote.
void checksum_kernel(const adsm::thread_index &, const uint8_t *src, size_t n, uint8_t *dst) {
    uint64_t h = fnv(src, n);
    memcpy(dst, &h, sizeof h);
}

}  // namespace
