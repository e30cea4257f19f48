// What the GPU back-ends' tests (cuda_device_test.cpp,
// levelzero_device_test.cpp) run on the drivers' doubles: kernels as host
// functions, one call per thread, and a module of the doubles' format that
// names them by address, loaded through the API.
#pragma once

#include <adsm.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <string>

namespace device_test {

// x[i] *= f for i < n
inline void scale(const adsmThreadIdx *t, void **a) {
    float *x = *static_cast<float **>(a[0]);
    float f = *static_cast<float *>(a[1]);
    unsigned n = *static_cast<unsigned *>(a[2]);
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) x[i] *= f;
}

struct node {
    node *next;
    long value;
};

// *out = the sum of a list's values (one thread)
inline void sum_list(const adsmThreadIdx *t, void **a) {
    const node *n = *static_cast<node **>(a[0]);
    long *out = *static_cast<long **>(a[1]);
    if (t->blockIdx.x != 0 || t->threadIdx.x != 0) return;
    long s = 0;
    for (; n; n = n->next) s += n->value;
    *out = s;
}

// Writes through a null pointer: the device faults.
inline void crash(const adsmThreadIdx *t, void **) {
    volatile int *bad = nullptr;
    __asm__ volatile("" : "+r"(bad));
    if (t->threadIdx.x == 0) bad[4] = 1;
}

// Waits (one thread) until *open, a word of host memory shared with the
// double's kernel processes (MAP_SHARED), is set.
inline void gate(const adsmThreadIdx *t, void **a) {
    volatile int *open = *static_cast<int **>(a[0]);
    if (t->blockIdx.x != 0 || t->threadIdx.x != 0) return;
    while (!*open) sched_yield();
}

// The doubles' module format: kernels by address and parameter sizes.
inline std::string module_image() {
    char buf[512];
    snprintf(buf, sizeof buf, "fake-module:scale@%p:8,4,4;sum_list@%p:8,8;crash@%p:;gate@%p:8",
             reinterpret_cast<void *>(&scale), reinterpret_cast<void *>(&sum_list), reinterpret_cast<void *>(&crash),
             reinterpret_cast<void *>(&gate));
    return buf;
}

inline adsmModule_t load_module() {
    std::string image = module_image();
    adsmModule_t m = nullptr;
    EXPECT_EQ(adsmLoadModuleData(image.c_str(), image.size() + 1, &m), adsmSuccess) << adsmGetLastErrorDetail();
    return m;
}

}  // namespace device_test
