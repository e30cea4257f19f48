/* Kernel allocation (README.md) on a remote device: the server registers the
   kernel, the program is unchanged (see readme_kernels.c). */
#define main static gc_kernel_list_main
#include "../../examples/gc_kernel_list.c"
#undef main

__attribute__((constructor)) static void serve_gc_kernel_list_kernels(void) {
    size_t sizes[] = {sizeof(adsmGcKernelHeap *), sizeof(Node **), sizeof(long)};
    adsmKernel_t k;
    if (adsmRegisterKernel("build", build, 3, sizes, &k) != adsmSuccess)
        fprintf(stderr, "build: %s\n", adsmGetLastErrorDetail());
}
