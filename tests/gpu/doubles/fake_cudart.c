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
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    /* By the names the real static runtime asks for (CUDA 13). */
    CUresult (*copy)(const CUDA_MEMCPY3D *);
    CUresult (*fill)(CUdeviceptr, size_t, unsigned char, size_t, size_t);
    CUresult (*host_register)(void *, size_t, unsigned);
    CUresult (*host_unregister)(void *);
    CUresult (*host_device_pointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*attach)(CUstream, CUdeviceptr, size_t, unsigned);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*begin_capture)(CUstream, CUstreamCaptureMode);
    CUresult (*end_capture)(CUstream, CUgraph *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*host_func)(CUstream, CUhostFn, void *);
    CUresult (*add_callback)(CUstream, CUstreamCallback, void *, unsigned);
    CUresult (*advise)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
    CUresult (*range_attribute)(void *, size_t, CUmem_range_attribute, CUdeviceptr, size_t);
    CUresult (*range_attributes)(void **, size_t *, CUmem_range_attribute *, size_t, CUdeviceptr, size_t);
    CUresult (*launch_cooperative)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void **);
    CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*graph_create)(CUgraph *, unsigned);
    CUresult (*add_kernel_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*add_memcpy_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext);
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
    *(void **)&drv.mem_alloc = proc(get, "cuMemAlloc");
    *(void **)&drv.copy = proc(get, "cuMemcpy3D");
    *(void **)&drv.fill = proc(get, "cuMemsetD2D8");
    *(void **)&drv.host_register = proc(get, "cuMemHostRegister");
    *(void **)&drv.host_unregister = proc(get, "cuMemHostUnregister");
    *(void **)&drv.host_device_pointer = proc(get, "cuMemHostGetDevicePointer");
    *(void **)&drv.attach = proc(get, "cuStreamAttachMemAsync");
    *(void **)&drv.stream_create = proc(get, "cuStreamCreate");
    *(void **)&drv.begin_capture = proc(get, "cuStreamBeginCapture");
    *(void **)&drv.end_capture = proc(get, "cuStreamEndCapture");
    *(void **)&drv.instantiate = proc(get, "cuGraphInstantiateWithFlags");
    *(void **)&drv.graph_launch = proc(get, "cuGraphLaunch");
    *(void **)&drv.exec_destroy = proc(get, "cuGraphExecDestroy");
    *(void **)&drv.graph_destroy = proc(get, "cuGraphDestroy");
    *(void **)&drv.host_func = proc(get, "cuLaunchHostFunc");
    *(void **)&drv.add_callback = proc(get, "cuStreamAddCallback");
    *(void **)&drv.advise = proc(get, "cuMemAdvise");
    *(void **)&drv.range_attribute = proc(get, "cuMemRangeGetAttribute");
    *(void **)&drv.range_attributes = proc(get, "cuMemRangeGetAttributes");
    *(void **)&drv.launch_cooperative = proc(get, "cuLaunchCooperativeKernel");
    *(void **)&drv.launch_ex = proc(get, "cuLaunchKernelEx");
    *(void **)&drv.graph_create = proc(get, "cuGraphCreate");
    *(void **)&drv.add_kernel_node = proc(get, "cuGraphAddKernelNode");
    *(void **)&drv.add_memcpy_node = proc(get, "cuGraphAddMemcpyNode");
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

/* Module variables (__device__, __constant__): device memory of the
 * variable's size, found by its host shadow's address. */
#define MAX_VARS 16
static struct {
    const void *shadow;
    CUdeviceptr dev;
    size_t size;
} vars[MAX_VARS];
static int nvars;

EXPORT void CUDARTAPI __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName,
                                        int ext, size_t size, int constant, int global) {
    (void)handle, (void)deviceAddress, (void)deviceName, (void)ext, (void)constant, (void)global;
    CUdeviceptr d;
    if (ready() != cudaSuccess || drv.mem_alloc(&d, size) != CUDA_SUCCESS) return;
    pthread_mutex_lock(&stubs_mu);
    if (nvars < MAX_VARS) {
        vars[nvars].shadow = hostVar;
        vars[nvars].dev = d;
        vars[nvars++].size = size;
    }
    pthread_mutex_unlock(&stubs_mu);
}

static int var_of(const void *symbol, CUdeviceptr *dev, size_t *size) {
    int found = 0;
    pthread_mutex_lock(&stubs_mu);
    for (int i = 0; i < nvars && !found; ++i)
        if (vars[i].shadow == symbol) *dev = vars[i].dev, *size = vars[i].size, found = 1;
    pthread_mutex_unlock(&stubs_mu);
    return found;
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

/* (The flags are the driver's, bit for bit.) */
EXPORT cudaError_t CUDARTAPI cudaHostRegister(void *p, size_t n, unsigned int flags) {
    READY();
    return from_cu(drv.host_register(p, n, flags));
}

EXPORT cudaError_t CUDARTAPI cudaHostUnregister(void *p) {
    READY();
    return from_cu(drv.host_unregister(p));
}

EXPORT cudaError_t CUDARTAPI cudaHostGetDevicePointer(void **d, void *p, unsigned int flags) {
    READY();
    if (!d) return last_error = cudaErrorInvalidValue;
    CUdeviceptr dp;
    cudaError_t e = from_cu(drv.host_device_pointer(&dp, p, flags));
    if (e == cudaSuccess) *d = (void *)dp;
    return e;
}

EXPORT cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *s) {
    READY();
    if (!s) return last_error = cudaErrorInvalidValue;
    return from_cu(drv.stream_create((CUstream *)s, 0));
}

/* Stream capture and graphs: the driver's, by their public names. */
EXPORT cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    READY();
    return from_cu(drv.begin_capture((CUstream)s, (CUstreamCaptureMode)mode));
}

EXPORT cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    READY();
    return from_cu(drv.end_capture((CUstream)s, (CUgraph *)g));
}

EXPORT cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
    READY();
    return from_cu(drv.instantiate((CUgraphExec *)e, (CUgraph)g, flags));
}

EXPORT cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    READY();
    return from_cu(drv.graph_launch((CUgraphExec)e, (CUstream)s));
}

EXPORT cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t e) {
    READY();
    return from_cu(drv.exec_destroy((CUgraphExec)e));
}

EXPORT cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t g) {
    READY();
    return from_cu(drv.graph_destroy((CUgraph)g));
}

/* Graphs built node by node: the driver's, as the runtime converts them
 * (a 1D copy's sides typed by its kind). */
EXPORT cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *g, unsigned int flags) {
    READY();
    return from_cu(drv.graph_create((CUgraph *)g, flags));
}

EXPORT cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                                    size_t ndeps, const struct cudaKernelNodeParams *p) {
    READY();
    if (!p) return last_error = cudaErrorInvalidValue;
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = function_of(p->func);
    if (!k.func) return last_error = cudaErrorInvalidDeviceFunction;
    k.gridDimX = p->gridDim.x, k.gridDimY = p->gridDim.y, k.gridDimZ = p->gridDim.z;
    k.blockDimX = p->blockDim.x, k.blockDimY = p->blockDim.y, k.blockDimZ = p->blockDim.z;
    k.sharedMemBytes = p->sharedMemBytes;
    k.kernelParams = p->kernelParams;
    k.extra = p->extra;
    return from_cu(drv.add_kernel_node((CUgraphNode *)node, (CUgraph)g, (const CUgraphNode *)deps, ndeps, &k));
}

EXPORT cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                                      size_t ndeps, void *dst, const void *src, size_t count,
                                                      enum cudaMemcpyKind kind) {
    READY();
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    int host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    int host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    if (kind == cudaMemcpyDefault) {
        c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        c.srcDevice = (CUdeviceptr)src, c.dstDevice = (CUdeviceptr)dst;
    } else {
        c.srcMemoryType = host_src ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        c.dstMemoryType = host_dst ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        if (host_src) c.srcHost = src;
        else c.srcDevice = (CUdeviceptr)src;
        if (host_dst) c.dstHost = dst;
        else c.dstDevice = (CUdeviceptr)dst;
    }
    c.WidthInBytes = count;
    c.Height = c.Depth = 1;
    return from_cu(drv.add_memcpy_node((CUgraphNode *)node, (CUgraph)g, (const CUgraphNode *)deps, ndeps, &c, NULL));
}

EXPORT cudaError_t CUDARTAPI cudaStreamAttachMemAsync(cudaStream_t s, void *p, size_t n, unsigned int flags) {
    READY();
    return from_cu(drv.attach((CUstream)s, (CUdeviceptr)p, n, flags));
}

EXPORT cudaError_t CUDARTAPI cudaMalloc(void **p, size_t n) {
    READY();
    if (!p) return last_error = cudaErrorInvalidValue;
    CUdeviceptr d;
    cudaError_t e = from_cu(drv.mem_alloc(&d, n));
    if (e == cudaSuccess) *p = (void *)d;
    return e;
}

/* Copies as the runtime makes them: a box of rows through the driver's
 * private copy, each side's memory type from the copy's kind
 * (cudaMemcpyDefault: the driver's unified addressing tells). */
static void sides_of(enum cudaMemcpyKind kind, CUmemorytype *dst, CUmemorytype *src) {
    switch (kind) {
    case cudaMemcpyHostToHost: *dst = *src = CU_MEMORYTYPE_HOST; break;
    case cudaMemcpyHostToDevice: *dst = CU_MEMORYTYPE_DEVICE, *src = CU_MEMORYTYPE_HOST; break;
    case cudaMemcpyDeviceToHost: *dst = CU_MEMORYTYPE_HOST, *src = CU_MEMORYTYPE_DEVICE; break;
    case cudaMemcpyDeviceToDevice: *dst = *src = CU_MEMORYTYPE_DEVICE; break;
    default: *dst = *src = CU_MEMORYTYPE_UNIFIED; break;
    }
}

static void set_side(CUmemorytype type, void *p, CUmemorytype *t, void **host, CUdeviceptr *dev) {
    *t = type;
    if (type == CU_MEMORYTYPE_HOST) *host = p;
    else *dev = (CUdeviceptr)p;
}

static cudaError_t copy_box3d(void *dst, size_t dpitch, size_t dheight, const void *src, size_t spitch, size_t sheight,
                              size_t width, size_t height, size_t depth, enum cudaMemcpyKind kind) {
    READY();
    if (height > 1 && (width > dpitch || width > spitch)) return last_error = cudaErrorInvalidPitchValue;
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    CUmemorytype dt, st;
    sides_of(kind, &dt, &st);
    set_side(dt, dst, &c.dstMemoryType, &c.dstHost, &c.dstDevice);
    set_side(st, (void *)src, &c.srcMemoryType, (void **)&c.srcHost, &c.srcDevice);
    c.dstPitch = dpitch, c.dstHeight = dheight, c.srcPitch = spitch, c.srcHeight = sheight;
    c.WidthInBytes = width, c.Height = height, c.Depth = depth;
    return from_cu(drv.copy(&c));
}

EXPORT cudaError_t CUDARTAPI cudaGetSymbolAddress(void **p, const void *symbol) {
    READY();
    CUdeviceptr dev;
    size_t size;
    if (!p || !var_of(symbol, &dev, &size)) return last_error = cudaErrorInvalidSymbol;
    *p = (void *)dev;
    return cudaSuccess;
}

EXPORT cudaError_t CUDARTAPI cudaGetSymbolSize(size_t *n, const void *symbol) {
    READY();
    CUdeviceptr dev;
    if (!n || !var_of(symbol, &dev, n)) return last_error = cudaErrorInvalidSymbol;
    return cudaSuccess;
}

/* A copy between a variable and host memory: where the runtime is a shared
 * library, by an entry of the driver's own that no preload sees (as a
 * runtime may reach its driver); linked in statically, by the driver's
 * public copy from cuGetProcAddress. */
static cudaError_t variable_copy(const void *symbol, size_t offset, void *host, size_t n, int to_variable) {
    READY();
    CUdeviceptr dev;
    size_t size;
    if (!var_of(symbol, &dev, &size)) return last_error = cudaErrorInvalidSymbol;
    if (offset > size || n > size - offset) return last_error = cudaErrorInvalidValue;
    void *var = (void *)(dev + offset);
#ifdef FAKE_CUDART_STATIC
    return to_variable ? copy_box3d(var, n, 1, host, n, 1, n, 1, 1, cudaMemcpyHostToDevice)
                       : copy_box3d(host, n, 1, var, n, 1, n, 1, 1, cudaMemcpyDeviceToHost);
#else
    typedef CUresult (*PrivateCopy)(void *, const void *, size_t, int);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    PrivateCopy copy = lib ? (PrivateCopy)dlsym(lib, "fake_cuda_private_copy") : NULL;
    if (!copy) return last_error = cudaErrorInsufficientDriver;
    return from_cu(to_variable ? copy(var, host, n, 1) : copy(host, var, n, 0));
#endif
}

EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void *symbol, const void *src, size_t n, size_t offset,
                                                enum cudaMemcpyKind kind) {
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDefault) return last_error = cudaErrorInvalidMemcpyDirection;
    return variable_copy(symbol, offset, (void *)src, n, 1);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t n, size_t offset,
                                                  enum cudaMemcpyKind kind) {
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDefault) return last_error = cudaErrorInvalidMemcpyDirection;
    return variable_copy(symbol, offset, dst, n, 0);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t n, size_t offset,
                                                     enum cudaMemcpyKind kind, cudaStream_t s) {
    (void)s; /* the double's copies are synchronous */
    return cudaMemcpyToSymbol(symbol, src, n, offset, kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t n, size_t offset,
                                                       enum cudaMemcpyKind kind, cudaStream_t s) {
    (void)s;
    return cudaMemcpyFromSymbol(dst, symbol, n, offset, kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    return copy_box3d(dst, n, 1, src, n, 1, n, 1, 1, kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                             cudaStream_t s) {
    (void)s; /* the double's copies are synchronous */
    return copy_box3d(dst, n, 1, src, n, 1, n, 1, 1, kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                          size_t height, enum cudaMemcpyKind kind) {
    return copy_box3d(dst, dpitch, height, src, spitch, height, width, height, 1, kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                               size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {
    (void)s;
    return copy_box3d(dst, dpitch, height, src, spitch, height, width, height, 1, kind);
}

static cudaError_t copy_parms(const struct cudaMemcpy3DParms *p) {
    if (!p || p->srcArray || p->dstArray) return last_error = p ? cudaErrorNotSupported : cudaErrorInvalidValue;
    const struct cudaPitchedPtr *d = &p->dstPtr, *s = &p->srcPtr;
    char *dst = (char *)d->ptr + p->dstPos.z * d->pitch * d->ysize + p->dstPos.y * d->pitch + p->dstPos.x;
    const char *src = (const char *)s->ptr + p->srcPos.z * s->pitch * s->ysize + p->srcPos.y * s->pitch + p->srcPos.x;
    return copy_box3d(dst, d->pitch, d->ysize, src, s->pitch, s->ysize, p->extent.width, p->extent.height,
                      p->extent.depth, p->kind);
}

EXPORT cudaError_t CUDARTAPI cudaMemcpy3D(const struct cudaMemcpy3DParms *p) { return copy_parms(p); }

EXPORT cudaError_t CUDARTAPI cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t s) {
    (void)s;
    return copy_parms(p);
}

static cudaError_t fill_rows(void *dst, size_t pitch, int value, size_t width, size_t height) {
    READY();
    if (height > 1 && width > pitch) return last_error = cudaErrorInvalidPitchValue;
    return from_cu(drv.fill((CUdeviceptr)dst, pitch, (unsigned char)value, width, height));
}

EXPORT cudaError_t CUDARTAPI cudaMemset(void *dst, int value, size_t n) { return fill_rows(dst, n, value, n, 1); }

EXPORT cudaError_t CUDARTAPI cudaMemset2D(void *dst, size_t pitch, int value, size_t width, size_t height) {
    return fill_rows(dst, pitch, value, width, height);
}

EXPORT cudaError_t CUDARTAPI cudaMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height,
                                               cudaStream_t s) {
    (void)s;
    return fill_rows(dst, pitch, value, width, height);
}

EXPORT cudaError_t CUDARTAPI cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent e) {
    for (size_t z = 0; z < e.depth; ++z) {
        cudaError_t r = fill_rows((char *)p.ptr + z * p.pitch * p.ysize, p.pitch, value, e.width, e.height);
        if (r != cudaSuccess) return r;
    }
    return cudaSuccess;
}

EXPORT cudaError_t CUDARTAPI cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t s) {
    (void)s;
    return cudaMemset3D(p, value, e);
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

/* Host functions: the driver's.  A callback gets the runtime's error
 * code, so the double passes the driver's through a call of its own. */
EXPORT cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) {
    READY();
    return from_cu(drv.host_func((CUstream)s, (CUhostFn)fn, data));
}

typedef struct {
    cudaStreamCallback_t cb;
    void *data;
} runtime_callback;

static cudaError_t error_of(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
    case CUDA_ERROR_LAUNCH_FAILED: return cudaErrorLaunchFailure;
    default: return cudaErrorUnknown;
    }
}

static void CUDA_CB call_runtime_callback(CUstream s, CUresult status, void *arg) {
    runtime_callback *c = (runtime_callback *)arg;
    c->cb((cudaStream_t)s, error_of(status), c->data);
    free(c);
}

EXPORT cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *data,
                                                   unsigned int flags) {
    READY();
    if (!cb || flags != 0) return last_error = cudaErrorInvalidValue;
    runtime_callback *c = (runtime_callback *)malloc(sizeof *c);
    if (!c) return last_error = cudaErrorMemoryAllocation;
    c->cb = cb;
    c->data = data;
    cudaError_t e = from_cu(drv.add_callback((CUstream)s, call_runtime_callback, c, 0));
    if (e != cudaSuccess) free(c);
    return e;
}

/* Advice and range queries: the driver's (CUDA 13's cudaMemAdvise takes a
 * location, as cuMemAdvise_v2; the attribute values are the driver's). */
EXPORT cudaError_t CUDARTAPI cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise advice,
                                           struct cudaMemLocation where) {
    READY();
    CUmemLocation at = {(CUmemLocationType)where.type, where.id};
    return from_cu(drv.advise((CUdeviceptr)p, n, (CUmem_advise)advice, at));
}

EXPORT cudaError_t CUDARTAPI cudaMemRangeGetAttribute(void *data, size_t size, enum cudaMemRangeAttribute attr,
                                                      const void *p, size_t n) {
    READY();
    return from_cu(drv.range_attribute(data, size, (CUmem_range_attribute)attr, (CUdeviceptr)p, n));
}

EXPORT cudaError_t CUDARTAPI cudaMemRangeGetAttributes(void **data, size_t *sizes, enum cudaMemRangeAttribute *attrs,
                                                       size_t count, const void *p, size_t n) {
    READY();
    return from_cu(drv.range_attributes(data, sizes, (CUmem_range_attribute *)attrs, count, (CUdeviceptr)p, n));
}

EXPORT cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args,
                                                         size_t shared, cudaStream_t stream) {
    READY();
    CUfunction f = function_of(func);
    if (!f) return last_error = cudaErrorInvalidDeviceFunction;
    return from_cu(drv.launch_cooperative(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shared,
                                          (CUstream)stream, args));
}

/* (A launch attribute is laid out as the driver's.) */
EXPORT cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) {
    READY();
    CUfunction f = function_of(func);
    if (!f) return last_error = cudaErrorInvalidDeviceFunction;
    if (!config) return last_error = cudaErrorInvalidValue;
    CUlaunchConfig c = {config->gridDim.x, config->gridDim.y, config->gridDim.z, config->blockDim.x,
                        config->blockDim.y, config->blockDim.z, (unsigned)config->dynamicSmemBytes,
                        (CUstream)config->stream, (CUlaunchAttribute *)config->attrs, config->numAttrs};
    return from_cu(drv.launch_ex(&c, f, args, NULL));
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
