/* The README's program on a remote device: the server registers its kernel
   (adsm-device-server --kernels), the program itself is unchanged.  Its
   source is included whole, its main renamed out of the way. */
#define main static readme_example_main
#include "../../examples/readme_example.c"
#undef main

__attribute__((constructor)) static void serve_readme_kernels(void) {
    size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    adsmKernel_t k;
    if (adsmRegisterKernel("scale", scale, 3, sizes, &k) != adsmSuccess)
        fprintf(stderr, "scale: %s\n", adsmGetLastErrorDetail());
}
