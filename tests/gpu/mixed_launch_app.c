/*
 * A CUDA program that also calls kernels through adsm (a library of its
 * own, say): routed on the cuda device, its own launches run in the
 * program's context and adsmCall in the thread's.  Each kind's kernels use
 * memory made for the other (adsmAlloc to cuLaunchKernel, managed memory to
 * adsmCall, a malloc after the first adsmCall to cuLaunchKernel), and the
 * CPU writes it between kernels: each kernel must find what the CPU wrote,
 * and each kind's synchronisation must bring its kernel's results back.
 * A collected object, which only adsmCall can take, is refused the other
 * kind with the reason.
 * Racing CPU accesses abort (ADSM_ON_RACE=abort in the test), so that only
 * the synchronisations can have brought them back.
 */
#include <adsm.h>

#include "cuda_app.h"

#define N (1u << 16)

#define ADSM(call) CHECK((call) == adsmSuccess, "%s: %s", #call, adsmGetLastErrorDetail())

static CUfunction scale;     /* the driver's handle of kernels.c's scale */
static adsmKernel_t ascale;  /* adsm's, from the same code */

static void ramp(float *v, float from) {
    for (unsigned i = 0; i < N; ++i) v[i] = from + (float)i;
}

static void check_scaled(const float *v, float from, float factor, const char *what) {
    for (unsigned i = 0; i < N; ++i)
        CHECK(v[i] == factor * (from + (float)i), "%s[%u] = %g, expected %g", what, i, v[i], factor * (from + (float)i));
}

static void routed_scale(float *v, float factor) {
    unsigned n = N;
    void *params[] = {&v, &factor, &n};
    CU(cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
}

static void adsm_scale(float *v, float factor) {
    unsigned n = N;
    void *args[] = {&v, &factor, &n};
    adsmDim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
    ADSM(adsmCall(ascale, grid, block, args));
}

int main(void) {
    CUmodule module = cuda_app_start();
    CU(cuModuleGetFunction(&scale, module, "scale"));
    /* The same kernel as an adsm module (the double's format names code by
     * address). */
    char image[128];
    snprintf(image, sizeof image, "fake-module:scale@%p:8,4,4", dlsym(RTLD_DEFAULT, "scale"));
    adsmModule_t amodule;
    ADSM(adsmLoadModuleData(image, strlen(image) + 1, &amodule));
    ADSM(adsmModuleGetKernel(amodule, "scale", &ascale));

    /* adsmAlloc's memory to the program's own launch. */
    float *a = adsmAlloc(N * sizeof(float));
    CHECK(a != NULL, "adsmAlloc: %s", adsmGetLastErrorDetail());
    ramp(a, 0);
    routed_scale(a, 2);
    CU(cuCtxSynchronize());
    check_scaled(a, 0, 2, "adsmAlloc'd memory after cuLaunchKernel");

    /* Managed memory to adsmCall. */
    CUdeviceptr m;
    CU(cuMemAllocManaged(&m, N * sizeof(float), CU_MEM_ATTACH_GLOBAL));
    float *mf = (float *)m;
    ramp(mf, 1);
    adsm_scale(mf, 3);
    ADSM(adsmSync());
    check_scaled(mf, 1, 3, "managed memory after adsmCall");

    /* A malloc made after the first adsmCall (in the thread's context) to
     * the program's own launch, synchronised by its stream. */
    float *h = malloc(4u << 20);
    CHECK(h != NULL && is_shared(h, 4u << 20), "a large malloc should be shared memory");
    ramp(h, 2);
    routed_scale(h, 2);
    CU(cuStreamSynchronize(NULL));
    check_scaled(h, 2, 2, "malloc'd memory after cuLaunchKernel");

    /* Back and forth, the CPU writing in between: the adsmAlloc'd memory
     * the program's launch used, to adsmCall again. */
    ramp(a, 5);
    adsm_scale(a, 4);
    ADSM(adsmSync());
    check_scaled(a, 5, 4, "adsmAlloc'd memory after cuLaunchKernel, then adsmCall");

    /* One kind's kernel still unsynchronised when the other launches: the
     * adsmCall waits for it and takes its memory along. */
    ramp(mf, 7);
    routed_scale(mf, 2);
    adsm_scale(a, 0.5f);
    adsm_scale(mf, 3);
    ADSM(adsmSync());
    check_scaled(mf, 7, 6, "managed memory after cuLaunchKernel and adsmCall");
    check_scaled(a, 5, 2, "adsmAlloc'd memory after a second adsmCall");
    CU(cuCtxSynchronize());

    /* A collected object stays with the context that allocated it: the
     * program's own launch is refused it, saying why, rather than run on
     * the device's old copy of what the CPU wrote; adsmCall takes it. */
    float *g = adsmGcAlloc(N * sizeof(float));
    CHECK(g != NULL, "adsmGcAlloc: %s", adsmGetLastErrorDetail());
    ramp(g, 3);
    {
        unsigned n = N;
        float two = 2;
        void *params[] = {&g, &two, &n};
        CUresult r = cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
        /* (The reason goes to the log: the test looks for it there.) */
        CHECK(r == CUDA_ERROR_INVALID_VALUE, "a launch given a collected object returned %d", (int)r);
    }
    CU(cuCtxSynchronize());
    check_scaled(g, 3, 1, "a collected object a launch was refused");
    adsm_scale(g, 2);
    ADSM(adsmSync());
    check_scaled(g, 3, 2, "a collected object after adsmCall");

    free(h);
    CU(cuMemFree(m));
    ADSM(adsmFree(a));
    printf("mixed launches: ok\n");
    return 0;
}
