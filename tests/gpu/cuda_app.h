/*
 * Shared by the CUDA driver API test programs: the check of each call, and
 * the start every one of them makes.
 */
#pragma once

#include <cuda.h>

#include "app_common.h"

#define CU(call)                                                     \
    do {                                                             \
        CUresult r_ = (call);                                        \
        CHECK(r_ == CUDA_SUCCESS, "%s returned %d", #call, (int)r_); \
    } while (0)

/* The first device's primary context made current, and the test module
 * (MODULE_IMAGE) loaded in it. */
static inline CUmodule cuda_app_start(void) {
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuModuleLoadData(&module, MODULE_IMAGE));
    return module;
}
