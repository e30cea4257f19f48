// GPU code for the cuda examples, tests and benchmarks, built by nvcc into
// a fatbin that adsmLoadModule loads.  extern "C" keeps the names plain.
#include <cstddef>

struct list_node {
    list_node *next;
    long long value;
};

extern "C" __global__ void scale(float *v, float factor, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= factor;
}

// A list the CPU linked in shared memory: the kernel follows its pointers.
extern "C" __global__ void sum_list(const list_node *head, long long *out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    long long s = 0;
    for (const list_node *n = head; n; n = n->next) s += n->value;
    *out = s;
}

// v[i] += 1 over the whole array, grid-stride (benchmarks).
extern "C" __global__ void add_one(float *v, size_t n) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        v[i] += 1.0f;
}

// v[i] += 1 on integers (benchmarks: the CPU side vectorises).
extern "C" __global__ void increment(unsigned *v, size_t n) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        v[i] += 1;
}

extern "C" __global__ void empty_kernel() {}

// Writes through whatever pointer it is given (tests pass a bad one).
extern "C" __global__ void store_through(int *p) {
    if (threadIdx.x == 0) *(volatile int *)p = 1;
}
