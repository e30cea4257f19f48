/*
 * adsm_gc_kernel.h: kernels allocate collected objects.  The kernel side of
 * adsmGcKernelHeapCreate (adsm.h).
 *
 * Everything here is plain atomic operations on memory inside the shared
 * space, with no call into the runtime: the same code runs in host-function
 * kernels on the sim device (in a process of its own, where the runtime's
 * private state is not) and on the cpu device, and, compiled by nvcc, in
 * CUDA kernels.
 *
 * How an allocation goes (after the GPU fast path of seed 003):
 *  - each thread block bumps the top of its allocation buffer (TLAB) with
 *    one atomic add;
 *  - the one thread whose add first passes the buffer's end saves the top it
 *    found ("last good top": below it every byte is handed out, above it
 *    none) and refills the block's buffer from the heap's eden with
 *    compare-and-swap; after the sync the runtime takes the buffer back at
 *    that top;
 *  - threads that overflow the same buffer meanwhile never wait for the
 *    refill: they use the new buffer if it is published, else take their
 *    object from eden directly (compare-and-swap).  Waiting, as the seed's
 *    default does, could never end on sim and cpu, where a block's threads
 *    run one after another, and costs a GPU warp its progress;
 *  - objects larger than a buffer come from eden directly;
 *  - when eden cannot hold an object the allocation returns NULL and the
 *    heap counts it (adsmGcKernelHeapCheck reports it after the sync): the
 *    program can fall back to allocating on the host.
 * Each object is zeroed, 16-byte aligned, and marked in the heap's bitmap
 * (its first and its last 16-byte granule): that is how the collector finds
 * the objects once the context syncs.
 */
#ifndef ADSM_GC_KERNEL_H
#define ADSM_GC_KERNEL_H

#include "adsm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADSM_GC_KERNEL_HEAP_MAGIC 0x6b68656170676331ULL /* "1cgpaehk" */
#define ADSM_GC_KERNEL_HEAP_OPEN 1ULL
#define ADSM_GC_KERNEL_HEAP_CLOSED 2ULL
#define ADSM_GC_KERNEL_GRANULE 16ULL

/* One allocation buffer.  A thread block's slot points to its current one. */
typedef struct adsmGcKernelTlab {
    unsigned long long top;       /* every allocation adds its size (the sum may pass end) */
    unsigned long long end;
    unsigned long long start;     /* 0: never used */
    unsigned long long last_good; /* top before the first allocation that passed end */
} adsmGcKernelTlab;

/* The heap's descriptor, at the start of its memory.  Addresses are stored
 * as integers so that the layout is the same for every compiler. */
struct adsmGcKernelHeap {
    /* Set by the runtime; kernels only read them. */
    unsigned long long magic;
    unsigned long long state;         /* OPEN until the sync that ends the heap */
    unsigned long long eden_start;    /* objects lie in [eden_start, eden_end) */
    unsigned long long eden_end;
    unsigned long long tlab_bytes;    /* a fresh buffer's size */
    unsigned long long tlabs;         /* slots: block b uses slot b % tlabs */
    unsigned long long records;       /* buffer records the heap has room for */
    unsigned long long slots_at;      /* unsigned long long[tlabs]: each slot's current record */
    unsigned long long records_at;    /* adsmGcKernelTlab[records] */
    unsigned long long bitmap_at;     /* 2 bits per granule of eden: first (even bit), last (odd bit) */
    /* Changed by kernels. */
    unsigned long long eden_top;      /* eden below it is handed out */
    unsigned long long next_record;
    unsigned long long eden_objects;  /* objects taken from eden directly */
    unsigned long long failed;        /* allocations that returned NULL... */
    unsigned long long failed_bytes;  /* ...the bytes they asked for... */
    unsigned long long too_large;     /* ...and how many of them asked for more than eden holds */
    unsigned long long late;          /* allocations tried once the heap was closed */
};

#if defined(__CUDACC__)
#define ADSM_GCK_FN static __device__ __forceinline__
ADSM_GCK_FN unsigned long long adsmGck_load(const unsigned long long *p) {
    unsigned long long v = *(const volatile unsigned long long *)p;
    __threadfence();
    return v;
}
ADSM_GCK_FN void adsmGck_store(unsigned long long *p, unsigned long long v) {
    __threadfence();
    *(volatile unsigned long long *)p = v;
}
ADSM_GCK_FN unsigned long long adsmGck_add(unsigned long long *p, unsigned long long v) { return atomicAdd(p, v); }
ADSM_GCK_FN void adsmGck_or(unsigned long long *p, unsigned long long v) { atomicOr(p, v); }
ADSM_GCK_FN void adsmGck_or_release(unsigned long long *p, unsigned long long v) {
    __threadfence();
    atomicOr(p, v);
}
ADSM_GCK_FN int adsmGck_cas(unsigned long long *p, unsigned long long *expected, unsigned long long desired) {
    unsigned long long seen = atomicCAS(p, *expected, desired);
    if (seen == *expected) return 1;
    *expected = seen;
    return 0;
}
#elif defined(__GNUC__)
#define ADSM_GCK_FN static inline
ADSM_GCK_FN unsigned long long adsmGck_load(const unsigned long long *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
ADSM_GCK_FN void adsmGck_store(unsigned long long *p, unsigned long long v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
ADSM_GCK_FN unsigned long long adsmGck_add(unsigned long long *p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
ADSM_GCK_FN void adsmGck_or(unsigned long long *p, unsigned long long v) { __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
ADSM_GCK_FN void adsmGck_or_release(unsigned long long *p, unsigned long long v) {
    __atomic_fetch_or(p, v, __ATOMIC_RELEASE);
}
ADSM_GCK_FN int adsmGck_cas(unsigned long long *p, unsigned long long *expected, unsigned long long desired) {
    return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
#else
#error "adsm_gc_kernel.h needs GCC or Clang atomic builtins, or nvcc"
#endif

/* Zeroes [at, at+n) and records it in the bitmap; the last granule's bit
 * goes first, so that a first-granule bit always has its last one. */
ADSM_GCK_FN void *adsmGck_publish(struct adsmGcKernelHeap *h, unsigned long long at, unsigned long long n) {
    unsigned long long *words = (unsigned long long *)at;
    for (unsigned long long i = 0; i < n / 8; ++i) words[i] = 0;
    unsigned long long *bitmap = (unsigned long long *)h->bitmap_at;
    unsigned long long first = (at - h->eden_start) / ADSM_GC_KERNEL_GRANULE;
    unsigned long long last = first + n / ADSM_GC_KERNEL_GRANULE - 1;
    unsigned long long first_bit = 1ULL << (2 * (first % 32)), last_bit = 2ULL << (2 * (last % 32));
    if (first / 32 == last / 32) {
        adsmGck_or_release(&bitmap[first / 32], first_bit | last_bit);
    } else {
        adsmGck_or(&bitmap[last / 32], last_bit);
        adsmGck_or_release(&bitmap[first / 32], first_bit);
    }
    return (void *)at;
}

ADSM_GCK_FN void *adsmGck_fail(struct adsmGcKernelHeap *h, size_t size, int too_large) {
    adsmGck_add(&h->failed, 1);
    adsmGck_add(&h->failed_bytes, (unsigned long long)size);
    if (too_large) adsmGck_add(&h->too_large, 1);
    return 0;
}

/* n bytes of eden, or 0 when it has not that many left. */
ADSM_GCK_FN int adsmGck_take(struct adsmGcKernelHeap *h, unsigned long long n, unsigned long long *at) {
    unsigned long long top = adsmGck_load(&h->eden_top);
    while (n <= h->eden_end - top)
        if (adsmGck_cas(&h->eden_top, &top, top + n)) {
            *at = top;
            return 1;
        }
    return 0;
}

ADSM_GCK_FN void *adsmGck_from_eden(struct adsmGcKernelHeap *h, unsigned long long n, size_t size) {
    unsigned long long at;
    if (!adsmGck_take(h, n, &at)) return adsmGck_fail(h, size, 0);
    adsmGck_add(&h->eden_objects, 1);
    return adsmGck_publish(h, at, n);
}

/* The first overflower's refill: a new buffer from eden, published in the
 * slot once complete; its first n bytes are the caller's object. */
ADSM_GCK_FN void *adsmGck_refill(struct adsmGcKernelHeap *h, unsigned long long *slot, unsigned long long n,
                                 size_t size) {
    unsigned long long r = adsmGck_add(&h->next_record, 1), at;
    if (r >= h->records) return adsmGck_from_eden(h, n, size);
    adsmGcKernelTlab *t = &((adsmGcKernelTlab *)h->records_at)[r];
    if (!adsmGck_take(h, h->tlab_bytes, &at)) {
        t->start = t->end = t->top = t->last_good = 0; /* the runtime skips it */
        return adsmGck_from_eden(h, n, size);
    }
    t->start = at;
    t->end = at + h->tlab_bytes;
    t->last_good = 0;
    t->top = at + n;
    adsmGck_store(slot, (unsigned long long)t);
    return adsmGck_publish(h, at, n);
}

/* size bytes for thread block `block` (any numbering: blocks that share
 * block % tlabs share a buffer), or NULL. */
ADSM_GCK_FN void *adsmGcKernelAllocInBlock(struct adsmGcKernelHeap *h, unsigned long long block, size_t size) {
    if (adsmGck_load(&h->state) != ADSM_GC_KERNEL_HEAP_OPEN) {
        adsmGck_add(&h->late, 1);
        return 0;
    }
    if ((unsigned long long)size > h->eden_end - h->eden_start) return adsmGck_fail(h, size, 1);
    unsigned long long n = size ? ((unsigned long long)size + ADSM_GC_KERNEL_GRANULE - 1) & ~(ADSM_GC_KERNEL_GRANULE - 1)
                                : ADSM_GC_KERNEL_GRANULE;
    if (n > h->tlab_bytes) return adsmGck_from_eden(h, n, size);
    unsigned long long *slot = &((unsigned long long *)h->slots_at)[block % h->tlabs];
    for (int tries = 0; tries < 8; ++tries) {
        unsigned long long current = adsmGck_load(slot);
        adsmGcKernelTlab *t = (adsmGcKernelTlab *)current;
        unsigned long long old = adsmGck_add(&t->top, n);
        if (old + n <= t->end) return adsmGck_publish(h, old, n);
        if (old <= t->end) {
            /* The first to pass the end: exactly one thread per buffer. */
            t->last_good = old;
            return adsmGck_refill(h, slot, n, size);
        }
        if (adsmGck_load(slot) == current) break; /* the refill is not out yet: do not wait for it */
    }
    return adsmGck_from_eden(h, n, size);
}

/* The block's number, x fastest, as the sim and cpu devices count them. */
ADSM_GCK_FN unsigned long long adsmGcKernelBlock(const adsmThreadIdx *t) {
    return t->blockIdx.x +
           (unsigned long long)t->gridDim.x * (t->blockIdx.y + (unsigned long long)t->gridDim.y * t->blockIdx.z);
}

/* size bytes of zeroed, collected memory for the calling thread, or NULL
 * (the heap is full or closed; adsmGcKernelHeapCheck says which after the
 * sync).  Until the context syncs the object is the kernel's; afterwards it
 * is an ordinary collected object, alive while reachable. */
ADSM_GCK_FN void *adsmGcKernelAlloc(struct adsmGcKernelHeap *heap, const adsmThreadIdx *idx, size_t size) {
    return adsmGcKernelAllocInBlock(heap, adsmGcKernelBlock(idx), size);
}

#if defined(__CUDACC__)
/* The same for a CUDA kernel, which knows its block from the built-ins. */
ADSM_GCK_FN void *adsmGcKernelAllocHere(struct adsmGcKernelHeap *heap, size_t size) {
    unsigned long long block =
        blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    return adsmGcKernelAllocInBlock(heap, block, size);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* ADSM_GC_KERNEL_H */
