/* Kernel allocation in README.md: every thread of a kernel builds a list. */
#include <adsm.h>
#include <adsm_gc_kernel.h>
#include <stdio.h>

typedef struct Node {
    struct Node *next;
    long value;
} Node;

/* Thread i links n nodes holding i*1, i*2, ..., i*n. */
static void build(const adsmThreadIdx *t, void **args) {
    adsmGcKernelHeap *heap = *(adsmGcKernelHeap **)args[0];
    Node **heads = *(Node ***)args[1];
    long n = *(long *)args[2];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    Node *head = NULL;
    for (long k = n; k > 0; --k) {
        Node *node = adsmGcKernelAlloc(heap, t, sizeof(Node)); /* zeroed, collected, shared */
        if (!node) break; /* the heap is full: adsmGcKernelHeapCheck says so after the sync */
        node->value = (long)i * k;
        node->next = head;
        head = node;
    }
    heads[i] = head;
}

int main(void) {
    unsigned threads = 1024;
    long n = 100;
    Node **heads = adsmGcAlloc(threads * sizeof(Node *)); /* the host's: it keeps the lists alive */
    adsmGcKernelHeap *heap;
    /* 1.6 MB of nodes, and room for buffers the blocks leave part-used. */
    if (!heads || adsmGcKernelHeapCreate(2 << 20, NULL, &heap) != adsmSuccess) {
        fprintf(stderr, "%s\n", adsmGetLastErrorDetail());
        return 1;
    }
    size_t sizes[] = {sizeof heap, sizeof heads, sizeof n};
    adsmKernel_t k;
    if (adsmRegisterKernel("build", build, 3, sizes, &k) != adsmSuccess) return 1;
    void *args[] = {&heap, &heads, &n};
    adsmDim3 grid = {threads / 128, 1, 1}, block = {128, 1, 1};
    if (adsmCall(k, grid, block, args) != adsmSuccess || adsmSync() != adsmSuccess ||
        adsmGcKernelHeapCheck(heap) != adsmSuccess) {
        fprintf(stderr, "%s\n", adsmGetLastErrorDetail());
        return 1;
    }
    /* The kernel's nodes are ordinary collected objects now. */
    adsmGcCollect();
    long count = 0, sum = 0;
    for (unsigned i = 0; i < threads; ++i)
        for (const Node *m = heads[i]; m; m = m->next) count++, sum += m->value;
    if (count != threads * n || sum != (long)threads * (threads - 1) / 2 * (n * (n + 1) / 2)) {
        fprintf(stderr, "the lists are wrong: %ld nodes, sum %ld\n", count, sum);
        return 1;
    }
    adsmGcKernelHeapInfo info;
    adsmGcKernelHeapGetInfo(heap, &info);
    printf("%ld nodes from the kernel, %llu buffers, %llu bytes it did not use given back\n", count,
           (unsigned long long)info.tlabs, (unsigned long long)info.unused_bytes);
    return 0;
}
