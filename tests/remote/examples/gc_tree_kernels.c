/* The collector example (README.md) on a remote device: the server
   registers its kernel, the program is unchanged (see readme_kernels.c). */
#define main static gc_tree_main
#include "../../examples/gc_tree.c"
#undef main

__attribute__((constructor)) static void serve_gc_tree_kernels(void) {
    size_t sizes[] = {sizeof(Node *), sizeof(long *), sizeof(int *), sizeof(unsigned)};
    adsmKernel_t k;
    if (adsmRegisterKernel("lookup", lookup, 4, sizes, &k) != adsmSuccess)
        fprintf(stderr, "lookup: %s\n", adsmGetLastErrorDetail());
}
