/* The complete program shown in README.md: one pointer for CPU and kernel. */
#include <adsm.h>
#include <stdio.h>

/* A kernel: called once per (block, thread), arguments by value. */
static void scale(const adsmThreadIdx *t, void **args) {
    float *v = *(float **)args[0];
    float factor = *(float *)args[1];
    unsigned n = *(unsigned *)args[2];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) v[i] *= factor;
}

int main(void) {
    unsigned n = 1u << 20;
    float *v = adsmAlloc(n * sizeof(float)); /* valid on the CPU and the device */
    if (!v) {
        fprintf(stderr, "adsmAlloc: %s (%s)\n", adsmGetErrorString(adsmGetLastError()), adsmGetLastErrorDetail());
        return 1;
    }
    for (unsigned i = 0; i < n; ++i) v[i] = (float)i;

    size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    adsmKernel_t k;
    if (adsmRegisterKernel("scale", scale, 3, sizes, &k) != adsmSuccess) return 1;

    float factor = 2.0f;
    void *args[] = {&v, &factor, &n};
    adsmDim3 grid = {(n + 255) / 256, 1, 1}, block = {256, 1, 1};
    adsmError_t err = adsmCall(k, grid, block, args); /* releases v to the device, launches */
    if (err == adsmSuccess) err = adsmSync();          /* waits, acquires v back */
    if (err != adsmSuccess) {
        fprintf(stderr, "kernel failed: %s (%s)\n", adsmGetErrorString(err), adsmGetLastErrorDetail());
        return 1;
    }

    for (unsigned i = 0; i < n; ++i)
        if (v[i] != 2.0f * (float)i) {
            fprintf(stderr, "wrong result at %u\n", i);
            return 1;
        }
    printf("scaled %u floats on the device; v[12345] = %.1f\n", n, v[12345]);
    adsmFree(v);
    return 0;
}
