/* adsm-bench-remote's kernel, loaded by the device server it starts. */
#include <adsm.h>

static void empty(const adsmThreadIdx *t, void **args) {
    (void)t;
    (void)args;
}

/* The object the call names is the kernel's argument, unused. */
static void touch(const adsmThreadIdx *t, void **args) {
    (void)t;
    (void)args;
}

__attribute__((constructor)) static void register_bench_kernels(void) {
    adsmKernel_t k;
    adsmRegisterKernel("bench.empty", empty, 0, 0, &k);
    size_t sizes[] = {sizeof(void *)};
    adsmRegisterKernel("bench.touch", touch, 1, sizes, &k);
}
