/*
 * An ordinary CUDA runtime API program, as nvcc would build it: start-up
 * code registers the module and each kernel's host stub, launches go
 * through cudaLaunchKernel with the stub's address.  Built twice: against
 * the runtime as a shared library, and with it linked in statically, in
 * which case only the runtime's driver calls (found with dlsym and
 * cuGetProcAddress) can be intercepted.
 */
#include <cuda_runtime_api.h>

#include "app_common.h"

#define N (1u << 16)

#define CUDA(call)                                                          \
    do {                                                                    \
        cudaError_t e_ = (call);                                            \
        CHECK(e_ == cudaSuccess, "%s returned %d", #call, (int)e_);         \
    } while (0)

/* What nvcc generates: a host stub per kernel, whose address names it. */
static void vec_add_stub(void) {}
static void scale_stub(void) {}
static void crash_stub(void) {}
static void unregistered_stub(void) {}

typedef struct {
    int magic, version;
    const void *data;
    void *unused;
} fatbin_wrapper;
static fatbin_wrapper fatbin = {0x466243b1, 1, MODULE_IMAGE, NULL};

/* What nvcc generates for a __device__ variable: a host shadow, whose
 * address names it. */
static float variable[256];

extern void **__cudaRegisterFatBinary(void *fatbin);
extern void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                              size_t size, int constant, int global);
extern void __cudaRegisterFatBinaryEnd(void **handle);
extern void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                                   int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);

__attribute__((constructor)) static void register_module(void) {
    void **h = __cudaRegisterFatBinary(&fatbin);
    __cudaRegisterFunction(h, (const char *)vec_add_stub, (char *)"vec_add", "vec_add", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)scale_stub, (char *)"scale", "scale", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)crash_stub, (char *)"crash", "crash", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(h, (const char *)unregistered_stub, (char *)"unregistered", "unregistered", -1, 0, 0, 0, 0, 0);
    __cudaRegisterVar(h, (char *)variable, (char *)"variable", "variable", 0, sizeof variable, 0, 0);
    __cudaRegisterFatBinaryEnd(h);
}

static float sum3(unsigned i) { return 3.0f * i; }
static float times6(unsigned i) { return 6.0f * i; }

static void vec_add(float *x, float *y, float *out, cudaStream_t s) {
    unsigned n = N;
    void *args[] = {&x, &y, &out, &n};
    dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
    CUDA(cudaLaunchKernel((const void *)vec_add_stub, grid, block, args, 0, s));
}

/* n floats of managed memory holding 0, 1, 2, ... */
static float *managed_ramp(unsigned n) {
    float *v;
    CUDA(cudaMallocManaged((void **)&v, n * 4, cudaMemAttachGlobal));
    for (unsigned i = 0; i < n; ++i) v[i] = (float)i;
    return v;
}

/* Host functions in stream order (cuda_driver_app.c has the same). */
static void CUDART_CB host_step_fn(void *arg) { host_step_run((host_step *)arg); }
static void CUDART_CB host_step_callback(cudaStream_t stream, cudaError_t status, void *arg) {
    (void)stream;
    ((host_step *)arg)->status = (int)status;
    host_step_run((host_step *)arg);
}

static void run_host_functions(cudaStream_t stream) {
    unsigned n = 4096;
    float *v = managed_ramp(n), two = 2.0f;
    void *args[] = {&v, &two, &n};
    dim3 grid = {n / 256, 1, 1}, block = {256, 1, 1};
    host_step first = {v, n, 2, 0, 0, 0, cudaSuccess}, second = {v, n, 4, 2, 0, 0, cudaErrorUnknown};
    CHECK(cudaLaunchHostFunc(stream, NULL, NULL) == cudaErrorInvalidValue, "a null host function");
    CHECK(cudaStreamAddCallback(stream, host_step_callback, &second, 1) == cudaErrorInvalidValue, "callback flags");
    cudaGetLastError();
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, stream)); /* 2i */
    CUDA(cudaLaunchHostFunc(stream, host_step_fn, &first));                        /* 2i + 1 */
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, stream)); /* 4i + 2 */
    CUDA(cudaStreamAddCallback(stream, host_step_callback, &second, 0));           /* 4i + 3 */
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, stream)); /* 8i + 6 */
    CUDA(cudaStreamSynchronize(stream));
    CHECK(first.calls == 1 && first.seen, "the host function ran %d times, saw the kernel's output: %d", first.calls,
          first.seen);
    CHECK(second.calls == 1 && second.seen && second.status == cudaSuccess,
          "the callback ran %d times, saw the kernels' output: %d, status %d", second.calls, second.seen,
          (int)second.status);
    for (unsigned i = 0; i < n; ++i) CHECK(v[i] == 8.0f * i + 6, "after the host functions: %g at %u", v[i], i);
    CUDA(cudaFree(v));
}

/* Copies between a module variable and managed memory (routed, shared
 * memory: the runtime's own way to its driver might take it for host
 * memory, where the driver copies nothing). */
static void run_variable(void) {
    const unsigned n = sizeof variable / sizeof variable[0];
    float *in, *back;
    CUDA(cudaMallocManaged((void **)&in, sizeof variable, cudaMemAttachGlobal));
    CUDA(cudaMallocManaged((void **)&back, sizeof variable, cudaMemAttachGlobal));
    for (unsigned i = 0; i < n; ++i) in[i] = 0.5f * i, back[i] = -1.0f;
    CUDA(cudaMemcpyToSymbol(variable, in, 64 * 4, 16 * 4, cudaMemcpyHostToDevice));
    CUDA(cudaMemcpyToSymbolAsync(variable, in + 64, 16 * 4, 0, cudaMemcpyHostToDevice, 0));
    CUDA(cudaMemcpyFromSymbol(back, variable, 80 * 4, 0, cudaMemcpyDeviceToHost));
    CUDA(cudaMemcpyFromSymbolAsync(back + 100, variable, 4 * 4, 16 * 4, cudaMemcpyDeviceToHost, 0));
    CUDA(cudaDeviceSynchronize());
    for (unsigned i = 0; i < 16; ++i) CHECK(back[i] == 0.5f * (64 + i), "variable[%u] = %g", i, back[i]);
    for (unsigned i = 16; i < 80; ++i) CHECK(back[i] == 0.5f * (i - 16), "variable[%u] = %g", i, back[i]);
    for (unsigned i = 0; i < 4; ++i) CHECK(back[100 + i] == 0.5f * i, "back[%u] = %g", 100 + i, back[100 + i]);
    CHECK(back[80] == -1.0f && back[99] == -1.0f && back[104] == -1.0f, "bytes past the copies were written");
    CHECK(cudaMemcpyToSymbol(variable, in, 8, sizeof variable - 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "a copy past the variable's end");
    cudaGetLastError();
    CUDA(cudaFree(in));
    CUDA(cudaFree(back));
}

/* A cooperative launch and one with attributes (cuda_driver_app.c has the
 * same through the driver). */
static void run_launches_as_made(enum mode mode) {
    unsigned n = 4096;
    float *v = managed_ramp(n), two = 2.0f;
    void *args[] = {&v, &two, &n};
    dim3 grid = {n / 256, 1, 1}, block = {256, 1, 1};
    long cooperative = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernel");
    long with_attributes = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernelEx with attributes");
    CUDA(cudaLaunchCooperativeKernel((const void *)scale_stub, grid, block, args, 0, 0));
    CUDA(cudaDeviceSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(v[i] == 2.0f * i, "after a cooperative launch: %g at %u", v[i], i);
    for (unsigned i = 0; i < n; ++i) v[i] += 1;
    cudaLaunchAttribute priority;
    memset(&priority, 0, sizeof priority);
    priority.id = cudaLaunchAttributePriority;
    priority.val.priority = 0;
    cudaLaunchConfig_t config;
    memset(&config, 0, sizeof config);
    config.gridDim = grid;
    config.blockDim = block;
    config.attrs = &priority;
    config.numAttrs = 1;
    CUDA(cudaLaunchKernelExC(&config, (const void *)scale_stub, args));
    CUDA(cudaDeviceSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(v[i] == 4.0f * i + 2, "after a launch with attributes: %g at %u", v[i], i);
    check_launches(mode, driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernel") - cooperative,
                   "cuLaunchCooperativeKernel");
    check_launches(mode,
                   driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernelEx with attributes") - with_attributes,
                   "cuLaunchKernelEx with attributes");
    CUDA(cudaFree(v));
}

/* A graph built node by node (cuda_driver_app.c has the same through the
 * driver): managed memory copied as host memory to device memory, a kernel
 * node there, the result copied back into managed memory as host memory.
 * The runtime makes these nodes with the driver's calls. */
static void run_built_graph(enum mode mode, cudaStream_t stream) {
    unsigned n = 4096;
    float *v = managed_ramp(n), *d = NULL, two = 2.0f;
    CUDA(cudaMalloc((void **)&d, n * 4));
    void *args[] = {&d, &two, &n};
    struct cudaKernelNodeParams kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.func = (void *)scale_stub;
    kernel.gridDim.x = n / 256, kernel.gridDim.y = kernel.gridDim.z = 1;
    kernel.blockDim.x = 256, kernel.blockDim.y = kernel.blockDim.z = 1;
    kernel.kernelParams = args;
    cudaGraph_t g;
    cudaGraphNode_t copy_in, run, copy_out;
    CUDA(cudaGraphCreate(&g, 0));
    cudaError_t r_in = cudaGraphAddMemcpyNode1D(&copy_in, g, NULL, 0, d, v, n * 4, cudaMemcpyHostToDevice);
    cudaError_t r_run = cudaGraphAddKernelNode(&run, g, &copy_in, 1, &kernel);
    cudaError_t r_out = cudaGraphAddMemcpyNode1D(&copy_out, g, &run, 1, v, d, n * 4, cudaMemcpyDeviceToHost);
    if (mode == ROUTED && !on_gpu_backend()) {
        CHECK(r_in == cudaErrorNotSupported && r_run == cudaErrorNotSupported && r_out == cudaErrorNotSupported,
              "nodes on shared memory built on an emulated device: %d %d %d", (int)r_in, (int)r_run, (int)r_out);
        cudaGetLastError();
    } else {
        CUDA(r_in);
        CUDA(r_run);
        CUDA(r_out);
        cudaGraphExec_t e;
        CUDA(cudaGraphInstantiate(&e, g, 0));
        for (int round = 0; round < 2; ++round) {
            if (round == 1)
                for (unsigned i = 0; i < n; ++i) v[i] = (float)i + 1;
            CUDA(cudaGraphLaunch(e, stream));
            CUDA(cudaStreamSynchronize(stream));
            for (unsigned i = 0; i < n; ++i)
                CHECK(v[i] == 2.0f * (i + round), "after the built graph's launch %d: %g at %u", round, v[i], i);
        }
        CUDA(cudaGraphExecDestroy(e));
    }
    CUDA(cudaGraphDestroy(g));
    CUDA(cudaFree(d));
    CUDA(cudaFree(v));
}

static void run_errors(void) {
    float *p;
    CHECK(cudaMallocManaged((void **)&p, 0, cudaMemAttachGlobal) == cudaErrorInvalidValue, "size 0");
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "the error is the last error");
    CHECK(cudaGetLastError() == cudaSuccess, "and is cleared");
    dim3 one = {1, 1, 1};
    CHECK(cudaLaunchKernel((const void *)unregistered_stub, one, one, NULL, 0, 0) == cudaErrorInvalidDeviceFunction,
          "a kernel with no implementation on the runtime's accelerator");
    cudaGetLastError();
    CUDA(cudaLaunchKernel((const void *)crash_stub, one, one, NULL, 0, 0));
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure, "the fault is reported");
    cudaGetLastError();
    /* ... by a host function or callback enqueued after it, which does not
     * run (routed, the runtime finds the fault at the call). */
    host_step after = {NULL, 0, 0, 0, 0, 0, cudaSuccess};
    CUDA(cudaLaunchKernel((const void *)crash_stub, one, one, NULL, 0, 0));
    CHECK(cudaLaunchHostFunc(0, host_step_fn, &after) == cudaErrorLaunchFailure, "the fault before a host function");
    CUDA(cudaLaunchKernel((const void *)crash_stub, one, one, NULL, 0, 0));
    CHECK(cudaStreamAddCallback(0, host_step_callback, &after, 0) == cudaErrorLaunchFailure,
          "the fault before a callback");
    CHECK(after.calls == 0, "a host function ran after the fault");
    CUDA(cudaDeviceSynchronize());
    cudaGetLastError();

    float *x, *y, *out;
    CUDA(cudaMallocManaged((void **)&x, N * 4, cudaMemAttachGlobal));
    CUDA(cudaMallocManaged((void **)&y, N * 4, cudaMemAttachGlobal));
    CUDA(cudaMallocManaged((void **)&out, N * 4, cudaMemAttachGlobal));
    for (unsigned i = 0; i < N; ++i) x[i] = i, y[i] = 2.0f * i;
    vec_add(x, y, out, 0);
    CUDA(cudaDeviceSynchronize());
    check_floats(out, N, sum3, "out after the fault");
    CUDA(cudaFree(x));
    CUDA(cudaFree(y));
    CUDA(cudaFree(out));
}

/* The runtime's own copies and fills: routed as runtime calls where the
 * runtime is a shared library, as the driver calls it makes
 * (cuMemcpy3D, cuMemsetD2D8, asked of cuGetProcAddress) where it is linked
 * in statically.  A kernel wrote out[i] = 6i; rows of it,
 * every other 64 floats, go to and from ordinary memory in 1D, 2D and 3D. */
enum { W = 64, H = 16, D = 4 }; /* floats a row, rows, slices */

static struct cudaPitchedPtr pitched(void *p, size_t pitch, size_t xsize, size_t ysize) {
    struct cudaPitchedPtr r = {p, pitch, xsize, ysize};
    return r;
}

static void run_copies(float *out) {
    static float host[W * H * D];
    const size_t row = W * sizeof(float), pitch = 2 * row;
    CUDA(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < W * H * D; ++i) CHECK(host[i] == 6.0f * i, "cudaMemcpy: host[%u] = %g", i, host[i]);

    CUDA(cudaMemcpy2D(host, row, out, pitch, row, H, cudaMemcpyDefault));
    for (unsigned r = 0; r < H; ++r)
        for (unsigned c = 0; c < W; ++c)
            CHECK(host[r * W + c] == 6.0f * (r * 2 * W + c), "cudaMemcpy2D from managed memory: row %u, column %u", r, c);

    for (unsigned i = 0; i < W * H; ++i) host[i] = -1.0f - (float)i;
    CUDA(cudaMemcpy2DAsync(out + W, pitch, host, row, row, H, cudaMemcpyHostToDevice, 0));
    CUDA(cudaStreamSynchronize(0));
    for (unsigned r = 0; r < H; ++r)
        for (unsigned c = 0; c < W; ++c) {
            CHECK(out[r * 2 * W + W + c] == -1.0f - (float)(r * W + c), "cudaMemcpy2D into managed memory: row %u", r);
            CHECK(out[r * 2 * W + c] == 6.0f * (r * 2 * W + c), "cudaMemcpy2D wrote between rows: row %u", r);
        }

    float *dev;
    CUDA(cudaMalloc((void **)&dev, sizeof host));
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = pitched(out, pitch, row, H);
    p.dstPtr = pitched(dev, row, row, H);
    p.extent.width = row, p.extent.height = H, p.extent.depth = D;
    p.kind = cudaMemcpyDeviceToDevice;
    CUDA(cudaMemcpy3D(&p));
    memset(host, 0, sizeof host);
    CUDA(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    for (unsigned z = 0; z < D; ++z)
        for (unsigned r = 0; r < H; ++r)
            for (unsigned c = 0; c < W; ++c)
                CHECK(host[(z * H + r) * W + c] == out[z * 2 * W * H + r * 2 * W + c],
                      "cudaMemcpy3D from managed memory: slice %u, row %u, column %u", z, r, c);
    /* And back, the box one row further on. */
    p.srcPtr = pitched(dev, row, row, H);
    p.dstPtr = pitched(out, pitch, row, H);
    p.dstPos.x = row;
    CUDA(cudaMemcpy3DAsync(&p, 0));
    CUDA(cudaDeviceSynchronize());
    for (unsigned z = 0; z < D; ++z)
        for (unsigned r = 0; r < H; ++r)
            for (unsigned c = 0; c < W; ++c)
                CHECK(out[z * 2 * W * H + r * 2 * W + W + c] == host[(z * H + r) * W + c],
                      "cudaMemcpy3D into managed memory: slice %u, row %u, column %u", z, r, c);
    CUDA(cudaFree(dev));

    /* Fills: bytes 0x3f in every other row of the first slice, 0x40 in the
     * odd halves of the second slice's rows (floats 0.74609375 and 3.0039...). */
    float a, b;
    memset(&a, 0x3f, sizeof a);
    memset(&b, 0x40, sizeof b);
    CUDA(cudaMemset2D(out, 2 * pitch, 0x3f, row, H / 2));
    CUDA(cudaMemset3DAsync(pitched(out + 2 * W * H + W, pitch, row, H), 0x40,
                           (struct cudaExtent){row, H, 1}, 0));
    CUDA(cudaDeviceSynchronize());
    for (unsigned r = 0; r < H; ++r)
        for (unsigned c = 0; c < W; ++c) {
            float first = r % 2 ? 6.0f * (r * 2 * W + c) : a;
            CHECK(out[r * 2 * W + c] == first, "cudaMemset2D on managed memory: row %u, column %u", r, c);
            CHECK(out[2 * W * H + r * 2 * W + W + c] == b, "cudaMemset3D on managed memory: row %u, column %u", r, c);
        }
}

/* A buffer the program pins and maps for its kernels (zero copy): from
 * malloc, shared memory where the preload shares it (kernels reach it at the
 * same address; the driver would refuse to register it on the cuda device). */
static void run_registered(enum mode mode) {
    const unsigned n = REGISTERED_BYTES / sizeof(float);
    float *buf = (float *)malloc(REGISTERED_BYTES);
    CHECK(buf != NULL, "malloc");
    for (unsigned i = 0; i < n; ++i) buf[i] = i;
    check_registered(mode, buf);
    if (mode == ERRORS) {
        CHECK(cudaHostRegister(buf + 1, REGISTERED_BYTES, cudaHostRegisterMapped) == cudaErrorInvalidValue,
              "a registration past the end of shared memory");
        CHECK(cudaHostRegister(buf, REGISTERED_BYTES, cudaHostRegisterIoMemory) == cudaErrorInvalidValue,
              "shared memory registered as I/O memory");
        CHECK(cudaHostRegister(buf, 0, cudaHostRegisterMapped) == cudaErrorInvalidValue, "a registration of no bytes");
        void *d;
        CHECK(cudaHostGetDevicePointer(&d, buf, 1) == cudaErrorInvalidValue, "device pointer flags");
        cudaGetLastError();
    }
    CUDA(cudaHostRegister(buf, REGISTERED_BYTES, cudaHostRegisterMapped | cudaHostRegisterPortable));
    float *dbuf = NULL, three = 3.0f;
    CUDA(cudaHostGetDevicePointer((void **)&dbuf, buf, 0));
    void *args[] = {&dbuf, &three, (void *)&n};
    dim3 grid = {n / 256, 1, 1}, block = {256, 1, 1};
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, 0));
    CUDA(cudaDeviceSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(buf[i] == 3.0f * i, "registered buf[%u] = %g, expected %g", i, buf[i], 3.0f * i);
    CUDA(cudaHostUnregister(buf));
    free(buf);
}

int main(int argc, char **argv) {
    enum mode mode = parse_mode(argc, argv);
    if (mode == ERRORS) {
        run_errors();
        run_registered(mode);
        printf("cuda-runtime errors: ok\n");
        return 0;
    }
    float *x, *y, *out;
    CUDA(cudaMallocManaged((void **)&x, N * 4, cudaMemAttachGlobal));
    CUDA(cudaMallocManaged((void **)&y, N * 4, cudaMemAttachGlobal));
    CUDA(cudaMallocManaged((void **)&out, N * 4, cudaMemAttachGlobal));
    check_memory(mode, x, N * 4);
    for (unsigned i = 0; i < N; ++i) x[i] = i, y[i] = 2.0f * i;

    cudaStream_t own;
    CUDA(cudaStreamCreate(&own));
    CHECK(cudaStreamAttachMemAsync(0, out, 0, cudaMemAttachSingle) == cudaErrorInvalidValue,
          "a single attachment to the null stream");
    cudaGetLastError();
    CUDA(cudaStreamAttachMemAsync(own, out, 0, cudaMemAttachSingle));
    vec_add(x, y, out, own);
    CUDA(cudaStreamSynchronize(own));
    check_floats(out, N, sum3, "out");

    float two = 2.0f;
    unsigned n = N;
    void *args[] = {&out, &two, &n};
    dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, 0));
    CUDA(cudaDeviceSynchronize());
    check_floats(out, N, times6, "out after scale");
    CUDA(cudaGetLastError());

    /* A kernel captured into a graph runs at the graph's launch, after the
     * CPU's writes since (cuda_driver_app.c has the same). */
    cudaGraph_t graph;
    CUDA(cudaStreamBeginCapture(own, cudaStreamCaptureModeGlobal));
    cudaError_t captured = cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, own);
    CUDA(cudaStreamEndCapture(own, &graph));
    if (mode == ROUTED && !on_gpu_backend()) {
        CHECK(captured == cudaErrorNotSupported, "a launch captured on an emulated device: %d", (int)captured);
        cudaGetLastError();
    } else {
        CUDA(captured);
        cudaGraphExec_t exec;
        CUDA(cudaGraphInstantiate(&exec, graph, 0));
        for (unsigned i = 0; i < N; ++i) out[i] = (float)i;
        CUDA(cudaGraphLaunch(exec, own));
        CUDA(cudaStreamSynchronize(own));
        for (unsigned i = 0; i < N; ++i) CHECK(out[i] == 2.0f * i, "after the graph: %g at %u", out[i], i);
        CUDA(cudaGraphExecDestroy(exec));
    }
    CUDA(cudaGraphDestroy(graph));
    /* out back to 6i for the copies below. */
    vec_add(x, y, out, own);
    CUDA(cudaLaunchKernel((const void *)scale_stub, grid, block, args, 0, own));
    CUDA(cudaStreamSynchronize(own));
    check_floats(out, N, times6, "out after scale");

    run_host_functions(own);
    run_variable();
    run_launches_as_made(mode);
    run_built_graph(mode, own);
    if (mode == ROUTED) {
        /* Advice through the runtime comes back from its range queries (the
         * driver's, which the runtime answers for shared memory). */
        struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
        CUDA(cudaMemAdvise(x, N * 4, cudaMemAdviseSetPreferredLocation, host));
        CUDA(cudaMemAdvise(x, N * 2, cudaMemAdviseSetReadMostly, host));
        int where = 5, vals[2] = {5, 5};
        CUDA(cudaMemRangeGetAttribute(&where, 4, cudaMemRangeAttributePreferredLocation, x, N * 4));
        CHECK(where == cudaCpuDeviceId, "x's preferred location: %d", where);
        enum cudaMemRangeAttribute attrs[2] = {cudaMemRangeAttributeReadMostly, cudaMemRangeAttributePreferredLocation};
        void *outs[2] = {&vals[0], &vals[1]};
        size_t sizes[2] = {4, 4};
        CUDA(cudaMemRangeGetAttributes(outs, sizes, attrs, 2, x, N * 2));
        CHECK(vals[0] == 1 && vals[1] == cudaCpuDeviceId, "x's first half: read-mostly %d, preferred %d", vals[0],
              vals[1]);
        CUDA(cudaMemRangeGetAttribute(&where, 4, cudaMemRangeAttributeReadMostly, x, N * 4));
        CHECK(where == 0, "all of x read-mostly: %d", where);
    }
    check_launches(mode, driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernel"), "cuLaunchKernel");
    run_copies(out);
    run_registered(mode);
    CUDA(cudaFree(x));
    CUDA(cudaFree(y));
    CUDA(cudaFree(out));
    printf("cuda-runtime %s: ok\n", argv[1]);
    return 0;
}
