// Kernels and helpers shared by the API tests.
#pragma once

#include <adsm.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "gpu/doubles/fake_module.hpp"

namespace adsm_test {

// y[i] = a * x[i] + y[i]
inline void saxpy(const adsm::thread_index &t, float a, const float *x, float *y, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) y[i] = a * x[i] + y[i];
}

// v[i] += 1
inline void increment(const adsm::thread_index &t, uint32_t *v, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) v[i] += 1;
}

// out[0] = in[0] (one thread): lets a test see what the device holds.
inline void copy_word(const adsm::thread_index &, const uint64_t *in, uint64_t *out) { *out = *in; }

inline void empty_kernel(const adsm::thread_index &) {}

// A discrete device (sim, cuda): its memory is not the CPU's.
inline bool is_discrete() {
    adsmDeviceInfo info;
    return adsmGetDeviceInfo(&info) == adsmSuccess && !info.integrated;
}

inline std::string detail() { return adsmGetLastErrorDetail(); }

}  // namespace adsm_test
