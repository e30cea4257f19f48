/*
 * Kernels for the device server's tests, loaded with --kernels: its
 * constructor registers them by name (adsmRegisterKernel is the server's).
 * Their symbols are the CUDA double's GPU code when the server hosts cuda
 * on it (remote_kernels.double names them).
 */
#include <adsm.h>
#include <stdint.h>
#include <unistd.h>

/* v[i] += k for i < n */
void remote_add(const adsmThreadIdx *t, void **args) {
    uint32_t *v = *(uint32_t **)args[0];
    size_t n = *(size_t *)args[1];
    uint32_t k = *(uint32_t *)args[2];
    size_t i = (size_t)t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) v[i] += k;
}

/* tests/tools/tool_app.c's kernel: v[i] += 1 over floats. */
void remote_add_one(const adsmThreadIdx *t, void **args) {
    float *v = *(float **)args[0];
    unsigned n = *(unsigned *)args[1];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) v[i] += 1.0f;
}

/* Writes where nothing is (an address the compiler cannot see through). */
static volatile uintptr_t nowhere = 16;
void remote_crash(const adsmThreadIdx *t, void **args) {
    (void)t;
    (void)args;
    *(volatile int *)nowhere = 1;
}

/* One thread sleeps ms milliseconds, then writes done[0] = 1. */
void remote_nap(const adsmThreadIdx *t, void **args) {
    uint32_t ms = *(uint32_t *)args[0];
    uint32_t *done = *(uint32_t **)args[1];
    if (t->blockIdx.x || t->threadIdx.x) return;
    usleep(ms * 1000u);
    done[0] = 1;
}

__attribute__((constructor)) static void register_kernels(void) {
    size_t add_sizes[] = {sizeof(uint32_t *), sizeof(size_t), sizeof(uint32_t)};
    adsmKernel_t k;
    adsmRegisterKernel("remote.add", remote_add, 3, add_sizes, &k);
    adsmRegisterKernel("remote.crash", remote_crash, 0, NULL, &k);
    size_t add_one_sizes[] = {sizeof(float *), sizeof(unsigned)};
    adsmRegisterKernel("add_one", remote_add_one, 2, add_one_sizes, &k);
    size_t nap_sizes[] = {sizeof(uint32_t), sizeof(uint32_t *)};
    adsmRegisterKernel("remote.nap", remote_nap, 2, nap_sizes, &k);
}

