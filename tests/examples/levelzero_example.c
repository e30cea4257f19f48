/* A complete program for a Level Zero GPU: kernels written in OpenCL C
 * (levelzero_kernels.cl, compiled to SPIR-V at build time), data in shared
 * memory that CPU code and kernels use through the same pointers. */
#include <adsm.h>
#include <stdio.h>
#include <stdlib.h>

struct list_node {
    struct list_node *next;
    long long value;
};

static int failed(const char *what) {
    adsmError_t e = adsmGetLastError();
    fprintf(stderr, "%s: %s (%s)\n", what, adsmGetErrorString(e), adsmGetLastErrorDetail());
    return e == adsmErrorNoDevice ? 2 : 1;
}

int main(int argc, char **argv) {
    setenv("ADSM_DEVICE", "levelzero", 0); /* this program's kernels are GPU code */
    const char *path = argc > 1 ? argv[1] : "levelzero_kernels.spv";
    adsmModule_t module;
    if (adsmLoadModule(path, &module) != adsmSuccess) {
        if (adsmPeekAtLastError() == adsmErrorNoDevice) {
            fprintf(stderr, "no Level Zero device: %s\n", adsmGetLastErrorDetail());
            return 2;
        }
        return failed("adsmLoadModule");
    }
    /* Parameter sizes as the kernels declare them: the runtime checks them
     * against the module where it can (a SPIR-V module says them). */
    const size_t scale_params[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    const size_t list_params[] = {sizeof(struct list_node *), sizeof(long long *)};
    adsmKernel_t scale, sum_list;
    if (adsmModuleGetKernelWithParams(module, "scale", 3, scale_params, &scale) != adsmSuccess ||
        adsmModuleGetKernelWithParams(module, "sum_list", 2, list_params, &sum_list) != adsmSuccess)
        return failed("adsmModuleGetKernelWithParams");

    /* An array: the CPU fills it, the GPU scales it, the CPU checks it. */
    unsigned n = 1u << 24;
    float *v = adsmAlloc(n * sizeof(float));
    if (!v) return failed("adsmAlloc");
    for (unsigned i = 0; i < n; ++i) v[i] = (float)i;
    float factor = 3.0f;
    void *scale_args[] = {&v, &factor, &n};
    adsmDim3 grid = {(n + 255) / 256, 1, 1}, block = {256, 1, 1};
    if (adsmCall(scale, grid, block, scale_args) != adsmSuccess || adsmSync() != adsmSuccess) return failed("scale");
    for (unsigned i = 0; i < n; ++i)
        if (v[i] != 3.0f * (float)i) {
            fprintf(stderr, "wrong value at %u: %f\n", i, v[i]);
            return 1;
        }

    /* A linked list built by the CPU, walked by the GPU: embedded pointers
     * mean the same thing on both sides. */
    unsigned count = 10000;
    struct list_node *nodes = adsmAlloc(count * sizeof *nodes);
    long long *sum = adsmAlloc(sizeof *sum);
    if (!nodes || !sum) return failed("adsmAlloc");
    long long want = 0;
    for (unsigned i = 0; i < count; ++i) {
        unsigned at = (i * 7919u) % count; /* linked out of address order */
        nodes[at].value = i + 1;
        nodes[at].next = i + 1 < count ? &nodes[((i + 1) * 7919u) % count] : NULL;
        want += i + 1;
    }
    struct list_node *head = &nodes[0];
    void *list_args[] = {&head, &sum};
    adsmDim3 one = {1, 1, 1};
    if (adsmCall(sum_list, one, one, list_args) != adsmSuccess || adsmSync() != adsmSuccess) return failed("sum_list");
    if (*sum != want) {
        fprintf(stderr, "list sum %lld, expected %lld\n", *sum, want);
        return 1;
    }

    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    printf("scaled %u floats and summed a %u-node list (%lld) on %s; levelzero example: ok\n", n, count, *sum,
           info.name);
    adsmFree(v);
    adsmFree(nodes);
    adsmFree(sum);
    return 0;
}
