// GPU code for the cuda examples, tests and benchmarks, built by nvcc into
// a fatbin that adsmLoadModule loads.  extern "C" keeps the names plain.
#include <adsm_gc_kernel.h>

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

// Every thread links `per` nodes allocated from a kernel heap into a list of
// its own (the kernel side of adsmGcKernelHeapCreate).
extern "C" __global__ void alloc_lists(adsmGcKernelHeap *heap, list_node **heads, unsigned per) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    list_node *head = nullptr;
    for (unsigned k = 0; k < per; ++k) {
        auto *n = static_cast<list_node *>(adsmGcKernelAllocHere(heap, sizeof(list_node)));
        if (!n) break;
        n->value = k;
        n->next = head;
        head = n;
    }
    heads[i] = head;
}
