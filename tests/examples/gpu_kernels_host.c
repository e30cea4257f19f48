/* The GPU examples' kernels (cuda_kernels.cu, levelzero_kernels.cl) as host
 * functions, for the drivers' doubles: preloaded, they are the symbols a
 * double finds by name when an example loads the double's module format,
 * so the example program itself runs unchanged on the double's discrete
 * device. */
#include <stddef.h>

#include "../gpu/gpu_idx.h"

struct list_node {
    struct list_node *next;
    long long value;
};

void scale(const gpu_idx *t, void **a) {
    float *v = *(float **)a[0];
    float factor = *(float *)a[1];
    unsigned n = *(unsigned *)a[2];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) v[i] *= factor;
}

void sum_list(const gpu_idx *t, void **a) {
    const struct list_node *head = *(const struct list_node **)a[0];
    long long *out = *(long long **)a[1];
    if (t->blockIdx.x != 0 || t->threadIdx.x != 0) return;
    long long s = 0;
    for (const struct list_node *n = head; n; n = n->next) s += n->value;
    *out = s;
}
