/*
 * A CUDA program that keeps its data in bdwgc's collected heap and hands it
 * to its own kernels: routed on the cuda device, its collected objects must
 * be what its launches release and its synchronisations bring back, from
 * any thread, across collections.  Racing CPU accesses abort
 * (ADSM_ON_RACE=abort in the test): only the synchronisations can have
 * brought the kernels' results back.
 */
#define GC_THREADS
#include <gc.h>
#include <pthread.h>

#include "cuda_app.h"

#define N (1u << 16)

static CUfunction scale;

/* A collected object that points to another: the kernel gets the array by
 * way of the CPU reading the holder. */
struct holder {
    float *values;
};

static void scale_on_gpu(float *v, float factor) {
    unsigned n = N;
    void *params[] = {&v, &factor, &n};
    CU(cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
}

static void round_trip(const char *who) {
    struct holder *h = GC_NEW(struct holder);
    CHECK(h != NULL, "GC_NEW");
    h->values = GC_MALLOC_ATOMIC(N * sizeof(float));
    CHECK(h->values != NULL, "GC_MALLOC_ATOMIC");
    for (int round = 0; round < 3; ++round) {
        for (unsigned i = 0; i < N; ++i) h->values[i] = (float)i + (float)round;
        scale_on_gpu(h->values, 2);
        /* Garbage, and a collection while the kernel may run. */
        for (int i = 0; i < 1000; ++i) CHECK(GC_MALLOC(256) != NULL, "GC_MALLOC");
        GC_gcollect();
        CU(cuCtxSynchronize());
        for (unsigned i = 0; i < N; ++i)
            CHECK(h->values[i] == 2 * ((float)i + (float)round), "%s, round %d: values[%u] = %g, expected %g", who,
                  round, i, h->values[i], 2 * ((float)i + (float)round));
    }
}

static void *thread_main(void *arg) {
    (void)arg;
    round_trip("another thread");
    return NULL;
}

int main(void) {
    GC_INIT();
    CUmodule module = cuda_app_start();
    CU(cuModuleGetFunction(&scale, module, "scale"));
    round_trip("the main thread");
    pthread_t t;
    CHECK(GC_pthread_create(&t, NULL, thread_main, NULL) == 0, "GC_pthread_create");
    CHECK(GC_pthread_join(t, NULL) == 0, "GC_pthread_join");
    printf("bdwgc launches: ok\n");
    return 0;
}
