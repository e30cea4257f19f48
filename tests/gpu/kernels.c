/*
 * The test programs' kernels, as host functions called once per (block,
 * thread).  The test doubles of the drivers find them by name in the
 * program (libgpu_test_kernels.so); compiled with ADSM_REGISTER they are
 * private copies that gpu_test_kernels_adsm.c registers with adsm under the
 * same names, so a routed program's launches run them on adsm's accelerator.
 */
#ifdef ADSM_REGISTER
#include <adsm.h>
typedef adsmThreadIdx gpu_idx;
#define KERNEL static
#else
#include "gpu_idx.h"
#define KERNEL
#endif

#include <stddef.h>

static unsigned global_x(const gpu_idx *t) { return t->blockIdx.x * t->blockDim.x + t->threadIdx.x; }

/* out[i] = x[i] + y[i] */
KERNEL void vec_add(const gpu_idx *t, void **a) {
    const float *x = *(float **)a[0], *y = *(float **)a[1];
    float *out = *(float **)a[2];
    unsigned n = *(unsigned *)a[3], i = global_x(t);
    if (i < n) out[i] = x[i] + y[i];
}

/* x[i] *= f */
KERNEL void scale(const gpu_idx *t, void **a) {
    float *x = *(float **)a[0];
    float f = *(float *)a[1];
    unsigned n = *(unsigned *)a[2], i = global_x(t);
    if (i < n) x[i] *= f;
}

/* A list built by the CPU in managed memory: one thread sums it. */
struct node {
    struct node *next;
    long value;
};
KERNEL void sum_list(const gpu_idx *t, void **a) {
    const struct node *n = *(const struct node **)a[0];
    long *out = *(long **)a[1];
    if (global_x(t) != 0) return;
    long s = 0;
    for (; n; n = n->next) s += n->value;
    *out = s;
}

/* A kernel with a bug: it writes through a null pointer. */
KERNEL void crash(const gpu_idx *t, void **a) {
    (void)a;
    volatile int *bad = 0;
    __asm__ volatile("" : "+r"(bad)); /* opaque to the compiler */
    if (global_x(t) == 0) bad[4] = 1;
}

/* Known to the drivers' doubles, never registered with adsm. */
KERNEL void unregistered(const gpu_idx *t, void **a) {
    (void)t;
    (void)a;
}

#ifdef ADSM_REGISTER
__attribute__((constructor)) static void register_kernels(void) {
    static const size_t ptr = sizeof(void *), u = sizeof(unsigned), f = sizeof(float);
    const size_t vec_add_params[] = {ptr, ptr, ptr, u};
    const size_t scale_params[] = {ptr, f, u};
    const size_t sum_list_params[] = {ptr, ptr};
    adsmKernel_t k;
    if (adsmRegisterKernel("vec_add", vec_add, 4, vec_add_params, &k) != adsmSuccess ||
        adsmRegisterKernel("scale", scale, 3, scale_params, &k) != adsmSuccess ||
        adsmRegisterKernel("sum_list", sum_list, 2, sum_list_params, &k) != adsmSuccess ||
        adsmRegisterKernel("crash", crash, 0, NULL, &k) != adsmSuccess)
        __builtin_trap();
    (void)unregistered;
}
#endif
