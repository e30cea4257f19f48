/*
 * A test double of the CUDA runtime, built both as libcudart.so.13 and as a
 * static library.  Like the real one it reaches the driver only through
 * dlopen("libcuda.so.1") and dlsym(..., "cuGetProcAddress_v2"), then asks
 * cuGetProcAddress for every driver function it uses.  So a program that
 * links it statically exercises exactly the path by which a statically
 * linked CUDA runtime reaches the driver.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*func_name)(const char **, CUfunction);
    CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **);
    CUresult (*ctx_sync)(void);
    CUresult (*stream_sync)(CUstream);
    CUresult (*event_sync)(CUevent);
} drv;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaSuccess;
static __thread cudaError_t last_error = cudaSuccess;

static void *proc(GetProc get, const char *name) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (get(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) return NULL;
    return fn;
}

static void start(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    GetProc get = lib ? (GetProc)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    if (!get) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    *(void **)&drv.init = proc(get, "cuInit");
    *(void **)&drv.device_get = proc(get, "cuDeviceGet");
    *(void **)&drv.retain = proc(get, "cuDevicePrimaryCtxRetain");
    *(void **)&drv.set_current = proc(get, "cuCtxSetCurrent");
    *(void **)&drv.load = proc(get, "cuModuleLoadData");
    *(void **)&drv.get_function = proc(get, "cuModuleGetFunction");
    *(void **)&drv.func_name = proc(get, "cuFuncGetName");
    *(void **)&drv.alloc_managed = proc(get, "cuMemAllocManaged");
    *(void **)&drv.mem_free = proc(get, "cuMemFree");
    *(void **)&drv.launch = proc(get, "cuLaunchKernel");
    *(void **)&drv.ctx_sync = proc(get, "cuCtxSynchronize");
    *(void **)&drv.stream_sync = proc(get, "cuStreamSynchronize");
    *(void **)&drv.event_sync = proc(get, "cuEventSynchronize");
    CUdevice dev;
    CUcontext ctx;
    if (drv.init(0) != CUDA_SUCCESS || drv.device_get(&dev, 0) != CUDA_SUCCESS || drv.retain(&ctx, dev) != CUDA_SUCCESS ||
        drv.set_current(ctx) != CUDA_SUCCESS)
        init_error = cudaErrorInitializationError;
}

static cudaError_t ready(void) {
    pthread_once(&once, start);
    return init_error;
}

static cudaError_t from_cu(CUresult r) {
    cudaError_t e;
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY: e = cudaErrorMemoryAllocation; break;
    case CUDA_ERROR_NOT_FOUND: e = cudaErrorInvalidDeviceFunction; break;
    case CUDA_ERROR_LAUNCH_FAILED: e = cudaErrorLaunchFailure; break;
    case CUDA_ERROR_NOT_SUPPORTED: e = cudaErrorNotSupported; break;
    default: e = cudaErrorInvalidValue; break;
    }
    last_error = e;
    return e;
}

#define READY()                                      \
    do {                                             \
        cudaError_t e_ = ready();                    \
        if (e_ != cudaSuccess) return last_error = e_; \
    } while (0)

/* nvcc's start-up code: one module per fat binary, one function per stub. */
typedef struct {
    int magic, version;
    const void *data;
    void *unused;
} fatbin_wrapper;

#define MAX_STUBS 64
static struct {
    const void *stub;
    CUfunction fn;
} stubs[MAX_STUBS];
static int nstubs;
static pthread_mutex_t stubs_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT void **CUDARTAPI __cudaRegisterFatBinary(void *fatbin) {
    static CUmodule modules[16];
    static int nmodules;
    if (ready() != cudaSuccess || nmodules == 16) return NULL;
    const fatbin_wrapper *w = (const fatbin_wrapper *)fatbin;
    if (drv.load(&modules[nmodules], w->data) != CUDA_SUCCESS) return NULL;
    return (void **)&modules[nmodules++];
}

EXPORT void CUDARTAPI __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
EXPORT void CUDARTAPI __cudaUnregisterFatBinary(void **handle) { (void)handle; }

EXPORT void CUDARTAPI __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                                             int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim,
                                             int *wSize) {
    (void)deviceName, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
    CUfunction f;
    if (!handle || drv.get_function(&f, *(CUmodule *)handle, deviceFun) != CUDA_SUCCESS) return;
    pthread_mutex_lock(&stubs_mu);
    if (nstubs < MAX_STUBS) {
        stubs[nstubs].stub = hostFun;
        stubs[nstubs++].fn = f;
    }
    pthread_mutex_unlock(&stubs_mu);
}

static CUfunction function_of(const void *stub) {
    CUfunction f = NULL;
    pthread_mutex_lock(&stubs_mu);
    for (int i = 0; i < nstubs; ++i)
        if (stubs[i].stub == stub) f = stubs[i].fn;
    pthread_mutex_unlock(&stubs_mu);
    return f;
}

EXPORT cudaError_t CUDARTAPI cudaFuncGetName(const char **name, const void *func) {
    READY();
    CUfunction f = function_of(func);
    if (!f || !name) return last_error = cudaErrorInvalidDeviceFunction;
    return from_cu(drv.func_name(name, f));
}

EXPORT cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t *fn, const void *symbol) {
    READY();
    CUfunction f = function_of(symbol);
    if (!f || !fn) return last_error = cudaErrorInvalidDeviceFunction;
    *fn = (cudaFunction_t)f;
    return cudaSuccess;
}

EXPORT cudaError_t CUDARTAPI cudaMallocManaged(void **p, size_t n, unsigned int flags) {
    READY();
    if (!p) return last_error = cudaErrorInvalidValue;
    CUdeviceptr d;
    cudaError_t e = from_cu(drv.alloc_managed(&d, n, flags));
    if (e == cudaSuccess) *p = (void *)d;
    return e;
}

EXPORT cudaError_t CUDARTAPI cudaFree(void *p) {
    READY();
    return from_cu(drv.mem_free((CUdeviceptr)p));
}

EXPORT cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                                              cudaStream_t stream) {
    READY();
    CUfunction f = function_of(func);
    if (!f) return last_error = cudaErrorInvalidDeviceFunction;
    return from_cu(drv.launch(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shared, (CUstream)stream,
                              args, NULL));
}

EXPORT cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
    READY();
    return from_cu(drv.ctx_sync());
}

EXPORT cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t s) {
    READY();
    return from_cu(drv.stream_sync((CUstream)s));
}

EXPORT cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t e) {
    READY();
    return from_cu(drv.event_sync((CUevent)e));
}

EXPORT cudaError_t CUDARTAPI cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

EXPORT cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return last_error; }

EXPORT const char *CUDARTAPI cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaError(other)";
    }
}
