// Kernels and helpers shared by the API tests.
#pragma once

#include <adsm.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

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

struct Node {
    uint64_t value;
    Node *next;
};

// Walks a linked list built by the CPU: every next pointer is an embedded
// shared address.
inline void list_sum(const adsm::thread_index &, const Node *head, uint64_t *out) {
    uint64_t s = 0;
    for (const Node *n = head; n; n = n->next) s += n->value;
    *out = s;
}

inline void write_indices(const adsm::thread_index &t, uint32_t *out) {
    size_t bx = t.blockIdx.x + t.gridDim.x * (t.blockIdx.y + size_t(t.gridDim.y) * t.blockIdx.z);
    size_t per_block = size_t(t.blockDim.x) * t.blockDim.y * t.blockDim.z;
    size_t tx = t.threadIdx.x + t.blockDim.x * (t.threadIdx.y + size_t(t.blockDim.y) * t.threadIdx.z);
    out[bx * per_block + tx] = uint32_t(t.blockIdx.z << 24 | t.blockIdx.y << 16 | t.blockIdx.x << 8 | t.threadIdx.x);
}

struct Params {
    int a;
    double b;
    char tag[24];
};

inline void by_value(const adsm::thread_index &, Params p, Params *out) {
    p.a += 1;  // a private copy: the caller's value must not change
    *out = p;
}

// Thread 5 writes to address 16: a kernel that faults.
inline void crash(const adsm::thread_index &t, uint32_t *marker) {
    marker[t.threadIdx.x] = 1;
    if (t.threadIdx.x == 5) {
        volatile int *volatile bad = reinterpret_cast<int *>(uintptr_t(16));
        *bad = 42;
    }
}

// y[i] = x[i] + 1
inline void add_one(const adsm::thread_index &t, const uint32_t *x, uint32_t *y, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) y[i] = x[i] + 1;
}

// After `ms`, one thread copies x to y: a kernel that reads late.
inline void copy_late(const adsm::thread_index &t, const uint32_t *x, uint32_t *y, size_t n, unsigned ms) {
    if (adsm::global_x(t) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    for (size_t i = 0; i < n; ++i) y[i] = x[i];
}

// out[i] = in[i] + add
inline void add_into(const adsm::thread_index &t, const uint32_t *in, uint32_t *out, size_t n, uint32_t add) {
    size_t i = adsm::global_x(t);
    if (i < n) out[i] = in[i] + add;
}

// Writes what the kernel must never give back (a replica is read-only).
inline void scribble(const adsm::thread_index &t, uint32_t *v, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) v[i] = 0xdead;
}

// y[i] = x[i] * 2
inline void twice(const adsm::thread_index &t, const uint32_t *x, uint32_t *y, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) y[i] = x[i] * 2;
}

// Kernels of the C API: out[i] = *value + i; and one that does nothing.
inline void c_kernel(const adsmThreadIdx *t, void **args) {
    uint32_t *out = *static_cast<uint32_t **>(args[0]);
    out[t->threadIdx.x] = *static_cast<uint32_t *>(args[1]) + t->threadIdx.x;
}
inline void other_kernel(const adsmThreadIdx *, void **) {}
inline constexpr size_t kCKernelSizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};

// Every kernel above by each name the tests launch it under, for a remote
// device server, which runs only kernels a library it loaded registered
// (tests/remote/api_kernels.cpp).  A test that launches another name fails
// there with "kernel not registered".
#define ADSM_API_TEST_KERNELS(X)                                                                             \
    X(saxpy, "api.saxpy")                                                                                     \
    X(list_sum, "api.list_sum")                                                                               \
    X(write_indices, "api.write_indices")                                                                     \
    X(by_value, "api.by_value")                                                                               \
    X(crash, "errors.crash")                                                                                  \
    X(add_one, "named.add_one")                                                                               \
    X(copy_late, "named.copy_late")                                                                           \
    X(empty_kernel, "named.empty")                                                                            \
    X(empty_kernel, "kernels.empty")                                                                          \
    X(add_into, "placement.add_into")                                                                         \
    X(scribble, "placement.scribble")                                                                         \
    X(twice, "advise.twice")                                                                                  \
    X(copy_word, "over.copy_word")                                                                            \
    X(increment, "api.increment")                                                                             \
    X(increment, "context.increment")                                                                         \
    X(increment, "devices.increment")                                                                         \
    X(increment, "devmem.increment")                                                                          \
    X(increment, "errors.increment")                                                                          \
    X(increment, "injected.increment")                                                                        \
    X(increment, "named.increment")                                                                           \
    X(increment, "placement.increment")                                                                       \
    X(increment, "prefetch.increment")                                                                        \
    X(increment, "signals.increment")                                                                         \
    X(increment, "threads.increment")
// The C API's kernels, registered by name and sizes.
#define ADSM_API_TEST_C_KERNELS(X) \
    X(c_kernel, "kernels.c_kernel") X(c_kernel, "kernels.launch") X(c_kernel, "kernels.by_name") X(c_kernel, "kernels.clash")

// A discrete device (sim, cuda): its memory is not the CPU's.
inline bool is_discrete() {
    adsmDeviceInfo info;
    return adsmGetDeviceInfo(&info) == adsmSuccess && !info.integrated;
}
inline bool is_discrete(int device) {
    adsmDeviceInfo info;
    return adsmGetDeviceProperties(device, &info) == adsmSuccess && !info.integrated;
}
// How many of the process's devices are discrete (a list may mix kinds).
inline int discrete_devices() {
    int n = 0, count = 0;
    if (adsmGetDeviceCount(&n) != adsmSuccess) return 0;
    for (int d = 0; d < n; ++d) count += is_discrete(d);
    return count;
}

inline std::string detail() { return adsmGetLastErrorDetail(); }

// A device served by another process (adsm-device-server).
inline bool on_remote() {
    const char *d = getenv("ADSM_DEVICE");
    return d && strcmp(d, "remote") == 0;
}

// Several GPUs of one driver share one address space (cuda,cuda): an
// object has no replica on each at one address.
inline bool gpus_share_addresses() {
    int n = 0;
    return on_gpu() && adsmGetDeviceCount(&n) == adsmSuccess && n > 1;
}

// Devices whose kernels cannot reach the host's pages at shared addresses
// refuse host-resident objects, with adsmErrorNotSupported.
inline bool host_resident_refused() { return on_gpu() || on_remote(); }

}  // namespace adsm_test
