/*
 * An ordinary CUDA driver API program: managed memory written by the CPU,
 * kernels launched with cuLaunchKernel, cuLaunchKernelEx and a pointer from
 * cuGetProcAddress, results read back after stream, event and context
 * synchronisation, a linked list whose pointers a kernel follows.  In
 * `errors` mode it makes the mistakes a program makes and checks the codes.
 */
#define CUDA_ENABLE_DEPRECATED 1 /* the deprecated launch, as an old program makes it */
#include "cuda_app.h"

#define N (1u << 16)


static float sum3(unsigned i) { return 3.0f * i; }
static float times6(unsigned i) { return 6.0f * i; }
static float plus1_times2(unsigned i) { return (6.0f * i + 1) * 2; }

static long driver_launches(void) {
    return driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernel") +
           driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernelEx");
}

struct node {
    struct node *next;
    long value;
};

/* n floats of managed memory holding 0, 1, 2, ... */
static CUdeviceptr managed_ramp(unsigned n) {
    CUdeviceptr v;
    CU(cuMemAllocManaged(&v, n * 4, CU_MEM_ATTACH_GLOBAL));
    for (unsigned i = 0; i < n; ++i) ((float *)v)[i] = (float)i;
    return v;
}

/* Host functions in stream order: each sees what the kernel before it
 * wrote, and the kernel after it sees what it wrote (routed, one runs when
 * it is enqueued, after its stream's work and an acquire). */
static void CUDA_CB host_step_fn(void *arg) { host_step_run((host_step *)arg); }
static void CUDA_CB host_step_callback(CUstream stream, CUresult status, void *arg) {
    (void)stream;
    ((host_step *)arg)->status = (int)status;
    host_step_run((host_step *)arg);
}

static void run_errors(CUfunction add, CUfunction unregistered, CUfunction crash) {
    CUdeviceptr p;
    CHECK(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE, "size 0");
    CHECK(cuMemAllocManaged(&p, 16, 7) == CUDA_ERROR_INVALID_VALUE, "bad flags");
    CHECK(cuMemAllocManaged(NULL, 16, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE, "null result pointer");
    CU(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL));
    check_memory(ERRORS, (void *)p, 4096);
    CU(cuMemFree(p));
    CHECK(cuMemFree(p) == CUDA_ERROR_INVALID_VALUE, "double free");

    CHECK(cuLaunchKernel(unregistered, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_NOT_FOUND,
          "a kernel with no implementation on the runtime's accelerator");
    unsigned n = 1;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &n, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra) == CUDA_ERROR_INVALID_VALUE,
          "packed arguments without their size");
    void *unknown[] = {(void *)0x77, &n, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, unknown) == CUDA_ERROR_INVALID_VALUE,
          "an unknown key in extra");
    CHECK(cuLaunchKernel(add, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "empty grid");

    /* A kernel that faults: reported at the synchronisation; the program lives on. */
    CU(cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize() == CUDA_ERROR_LAUNCH_FAILED, "the fault is reported");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS, "reported once");
    /* ... by a host function or callback enqueued after it, which does
     * not run (routed, the runtime finds the fault at the call). */
    host_step after = {NULL, 0, 0, 0, 0, 0, CUDA_SUCCESS};
    CU(cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuLaunchHostFunc(NULL, host_step_fn, &after) == CUDA_ERROR_LAUNCH_FAILED, "the fault before a host function");
    CHECK(after.calls == 0, "a host function ran after the fault");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS, "reported once");
    CU(cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuStreamAddCallback(NULL, host_step_callback, &after, 0) == CUDA_ERROR_LAUNCH_FAILED,
          "the fault before a callback");
    CHECK(after.calls == 0, "a callback ran after the fault");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS, "reported once");

    CUdeviceptr x, y, out;
    CU(cuMemAllocManaged(&x, N * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&y, N * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&out, N * 4, CU_MEM_ATTACH_GLOBAL));
    for (unsigned i = 0; i < N; ++i) ((float *)x)[i] = i, ((float *)y)[i] = 2.0f * i;
    unsigned count = N;
    void *params[] = {&x, &y, &out, &count};
    CU(cuLaunchKernel(add, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU(cuCtxSynchronize());
    check_floats((float *)out, N, sum3, "out after the fault");
    CU(cuMemFree(x));
    CU(cuMemFree(y));
    CU(cuMemFree(out));
}

/* A CUDA array filled from managed memory and read back into it, every
 * way (routed, managed memory is shared memory, whose address the driver
 * would take for device memory). */
static void run_array(CUstream stream) {
    enum { COUNT = 4096, BYTES = COUNT * 4 };
    CUDA_ARRAY_DESCRIPTOR d = {COUNT, 0, CU_AD_FORMAT_FLOAT, 1};
    CUarray arr;
    CU(cuArrayCreate(&arr, &d));
    CUdeviceptr from, to;
    CU(cuMemAllocManaged(&from, BYTES, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&to, BYTES, CU_MEM_ATTACH_GLOBAL));
    float *f = (float *)from, *t = (float *)to;
    for (unsigned i = 0; i < COUNT; ++i) f[i] = 5.0f * i, t[i] = -1.0f;
    CU(cuMemcpyHtoA(arr, 0, f, BYTES));
    CU(cuMemcpyAtoH(t, arr, 0, BYTES));
    for (unsigned i = 0; i < COUNT; ++i) CHECK(t[i] == 5.0f * i, "cuMemcpyAtoH: %g at %u", t[i], i);
    for (unsigned i = 0; i < COUNT; ++i) f[i] = 7.0f * i, t[i] = -1.0f;
    CU(cuMemcpyDtoA(arr, 0, from, BYTES / 2));
    CU(cuMemcpyHtoAAsync(arr, BYTES / 2, f + COUNT / 2, BYTES / 2, stream));
    CU(cuMemcpyAtoD(to, arr, 0, BYTES / 2));
    CU(cuMemcpyAtoHAsync(t + COUNT / 2, arr, BYTES / 2, BYTES / 2, stream));
    CU(cuStreamSynchronize(stream));
    for (unsigned i = 0; i < COUNT; ++i) CHECK(t[i] == 7.0f * i, "cuMemcpyAtoD/AtoHAsync: %g at %u", t[i], i);
    CHECK(cuMemcpyHtoA(arr, BYTES - 4, f, 8) == CUDA_ERROR_INVALID_VALUE, "a copy past the array's end");
    CU(cuArrayDestroy(arr));

    /* A 2D array of 64 x 32 floats: its rows 8 to 23 from every other row
     * of managed memory (cuMemcpy2D), then those rows back into managed
     * memory at a pitch of its own (cuMemcpy3D), and row 23 alone
     * (cuMemcpy2DAsync). */
    enum { AW = 64, AH = 32, ROW = AW * 4 };
    CUDA_ARRAY_DESCRIPTOR d2 = {AW, AH, CU_AD_FORMAT_FLOAT, 1};
    CU(cuArrayCreate(&arr, &d2));
    for (unsigned i = 0; i < COUNT; ++i) f[i] = (float)i, t[i] = -1.0f;
    CUDA_MEMCPY2D in = {0};
    in.srcMemoryType = CU_MEMORYTYPE_UNIFIED, in.srcDevice = from, in.srcPitch = 2 * ROW;
    in.dstMemoryType = CU_MEMORYTYPE_ARRAY, in.dstArray = arr, in.dstY = 8;
    in.WidthInBytes = ROW, in.Height = 16;
    CU(cuMemcpy2D(&in));
    CUDA_MEMCPY3D out = {0};
    out.srcMemoryType = CU_MEMORYTYPE_ARRAY, out.srcArray = arr, out.srcY = 8;
    out.dstMemoryType = CU_MEMORYTYPE_HOST, out.dstHost = t, out.dstXInBytes = 4, out.dstPitch = ROW + 8,
    out.dstHeight = AH;
    out.WidthInBytes = ROW, out.Height = 16, out.Depth = 1;
    CU(cuMemcpy3D(&out));
    for (unsigned r = 0; r < 16; ++r)
        for (unsigned c = 0; c < AW; ++c) {
            float got = t[r * (AW + 2) + 1 + c], want = (float)(2 * r * AW + c);
            CHECK(got == want, "2D array row %u, column %u: %g, expected %g", r, c, got, want);
        }
    CHECK(t[0] == -1.0f && t[AW + 1] == -1.0f, "the copy out of the array wrote outside its columns");
    CUDA_MEMCPY2D back = {0};
    back.srcMemoryType = CU_MEMORYTYPE_ARRAY, back.srcArray = arr, back.srcY = 23;
    back.dstMemoryType = CU_MEMORYTYPE_DEVICE, back.dstDevice = to, back.dstPitch = ROW;
    back.WidthInBytes = ROW, back.Height = 1;
    CU(cuMemcpy2DAsync(&back, stream));
    CU(cuStreamSynchronize(stream));
    for (unsigned c = 0; c < AW; ++c) CHECK(t[c] == (float)(30 * AW + c), "the array's row 23: %g at %u", t[c], c);
    in.Height = AH;
    CHECK(cuMemcpy2D(&in) == CUDA_ERROR_INVALID_VALUE, "a 2D copy past the array's last row");
    CU(cuArrayDestroy(arr));
    CU(cuMemFree(from));
    CU(cuMemFree(to));
}

/* A kernel captured into a CUDA graph runs at each of the graph's launches,
 * after the CPU's writes since (routed on the cuda device: the launch
 * releases, the synchronisation acquires; on sim and cpu, which run host
 * functions, the captured launch is refused). */
static void run_graph(enum mode mode, CUfunction scale, CUstream stream) {
    unsigned n = 4096;
    CUdeviceptr v;
    CU(cuMemAllocManaged(&v, n * 4, CU_MEM_ATTACH_GLOBAL));
    float *f = (float *)v, two = 2.0f;
    void *params[] = {&v, &two, &n};
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult captured = cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL);
    CUgraph g;
    CU(cuStreamEndCapture(stream, &g));
    if (mode == ROUTED && !on_gpu_backend()) {
        CHECK(captured == CUDA_ERROR_NOT_SUPPORTED, "a launch captured on an emulated device: %d", (int)captured);
    } else {
        CU(captured);
        CUgraphExec e;
        CU(cuGraphInstantiate(&e, g, 0));
        for (unsigned i = 0; i < n; ++i) f[i] = (float)i;
        CU(cuGraphLaunch(e, stream));
        CU(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 2.0f * i, "after the graph: %g at %u", f[i], i);
        for (unsigned i = 0; i < n; ++i) f[i] += 1;
        CU(cuGraphLaunch(e, stream));
        CU(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < n; ++i)
            CHECK(f[i] == (2.0f * i + 1) * 2, "after the graph's second launch: %g at %u", f[i], i);
        CU(cuGraphExecDestroy(e));
    }
    CU(cuGraphDestroy(g));
    CU(cuMemFree(v));
}

/* Copies and a fill captured into a graph with a kernel run at each of the
 * graph's launches, on the data of then: managed memory copied (as host
 * memory) into device memory, scaled there, and copied back (as host
 * memory) over a cleared half (routed to sim or cpu, where the runtime
 * runs kernels and moves shared memory itself, such captures are refused). */
static void CUDA_CB count_launch(void *arg) { ++*(int *)arg; }

/* A host function captured into a graph after the graph's kernel, reading
 * what the kernel wrote: CUDA runs it at each launch; routed, the runtime
 * cannot serve it on the driver's thread (neither wait for the kernel nor
 * fetch its output there) and says so, where waiting would never end.
 * Only with APP_GRAPH_HOST_NODE=1: routed, it aborts. */
static float first_seen;
static void CUDA_CB read_first(void *arg) { first_seen = *(float *)arg; }

static void run_graph_host_node(CUfunction scale, CUstream stream) {
    unsigned n = 4096;
    CUdeviceptr v;
    CU(cuMemAllocManaged(&v, n * 4, CU_MEM_ATTACH_GLOBAL));
    float *f = (float *)v, two = 2.0f;
    for (unsigned i = 0; i < n; ++i) f[i] = 1.0f + i;
    void *params[] = {&v, &two, &n};
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    CU(cuLaunchHostFunc(stream, read_first, f));
    CUgraph g;
    CUgraphExec e;
    CU(cuStreamEndCapture(stream, &g));
    CU(cuGraphInstantiate(&e, g, 0));
    CU(cuGraphLaunch(e, stream));
    CU(cuStreamSynchronize(stream));
    printf("graph host node: read %g\n", first_seen);
}

static void run_captured_copies(enum mode mode, CUfunction scale, CUstream stream) {
    unsigned n = 4096, half = n / 2;
    CUdeviceptr v, dbuf;
    CU(cuMemAllocManaged(&v, n * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAlloc(&dbuf, n * 4));
    float *f = (float *)v, two = 2.0f;
    void *params[] = {&dbuf, &two, &n};
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult in = cuMemcpyHtoDAsync(dbuf, f, n * 4, stream);
    CUresult kernel = cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL);
    CUresult fill = cuMemsetD8Async(v, 0, n * 4, stream);
    CUresult out = cuMemcpyDtoHAsync(f + half, dbuf, half * 4, stream);
    int launches = 0; /* a host function that touches no shared memory runs at each launch */
    CU(cuLaunchHostFunc(stream, count_launch, &launches));
    CUgraph g;
    CU(cuStreamEndCapture(stream, &g));
    if (mode == ROUTED && !on_gpu_backend()) {
        CHECK(in == CUDA_ERROR_NOT_SUPPORTED && kernel == CUDA_ERROR_NOT_SUPPORTED &&
                  fill == CUDA_ERROR_NOT_SUPPORTED && out == CUDA_ERROR_NOT_SUPPORTED,
              "captured work on an emulated device: copy %d, kernel %d, fill %d, copy %d", (int)in, (int)kernel,
              (int)fill, (int)out);
    } else {
        CU(in);
        CU(kernel);
        CU(fill);
        CU(out);
        CUgraphExec e;
        CU(cuGraphInstantiate(&e, g, 0));
        for (unsigned round = 0; round < 2; ++round) {
            for (unsigned i = 0; i < n; ++i) f[i] = (float)(i + round);
            CU(cuGraphLaunch(e, stream));
            CU(cuStreamSynchronize(stream));
            for (unsigned i = 0; i < half; ++i) {
                CHECK(f[i] == 0.0f, "launch %u: the filled half: %g at %u", round, f[i], i);
                CHECK(f[half + i] == 2.0f * (i + round), "launch %u: the copied half: %g at %u", round, f[half + i],
                      i);
            }
        }
        CU(cuGraphExecDestroy(e));
        CHECK(launches == 2, "the captured host function ran %d times in 2 launches", launches);
    }
    CU(cuGraphDestroy(g));
    CU(cuMemFree(dbuf));
    CU(cuMemFree(v));
}

/* A cooperative launch and one with attributes: the runtime's own launch
 * would drop what makes them so, so that on the cuda device they reach the
 * driver as the program made them, after a release; routed to sim or cpu
 * they run as ordinary launches there. */
static void run_launches_as_made(enum mode mode, CUfunction scale) {
    unsigned n = 4096;
    CUdeviceptr v = managed_ramp(n);
    float *f = (float *)v, two = 2.0f;
    void *params[] = {&v, &two, &n};
    long cooperative = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernel");
    long with_attributes = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernelEx with attributes");
    CU(cuLaunchCooperativeKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, params));
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 2.0f * i, "after a cooperative launch: %g at %u", f[i], i);
    for (unsigned i = 0; i < n; ++i) f[i] += 1;
    CUlaunchAttribute priority;
    memset(&priority, 0, sizeof priority);
    priority.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    priority.value.priority = 0;
    CUlaunchConfig config = {n / 256, 1, 1, 256, 1, 1, 0, NULL, &priority, 1};
    CU(cuLaunchKernelEx(&config, scale, params, NULL));
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 4.0f * i + 2, "after a launch with attributes: %g at %u", f[i], i);
    /* The same on a list of devices (one here). */
    long multi = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernelMultiDevice");
    CUDA_LAUNCH_PARAMS one = {scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, params};
    CU(cuLaunchCooperativeKernelMultiDevice(&one, 1, 0));
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 8.0f * i + 4, "after a launch on a list of devices: %g at %u", f[i], i);
    check_launches(mode, driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernel") - cooperative,
                   "cuLaunchCooperativeKernel");
    check_launches(mode,
                   driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchCooperativeKernelMultiDevice") - multi,
                   "cuLaunchCooperativeKernelMultiDevice");
    check_launches(mode,
                   driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchKernelEx with attributes") - with_attributes,
                   "cuLaunchKernelEx with attributes");
    CU(cuMemFree(v));
}

/* Arguments packed in one buffer (cuLaunchKernel's `extra`, as PyCUDA
 * passes them), laid out at the offsets the driver reports. */
static void run_packed_arguments(CUfunction scale) {
    unsigned n = 4096;
    CUdeviceptr v = managed_ramp(n);
    float *f = (float *)v, three = 3.0f;
    size_t off[3], size[3];
    for (int i = 0; i < 3; ++i) CU(cuFuncGetParamInfo(scale, i, &off[i], &size[i]));
    CHECK(size[0] == sizeof v && size[1] == sizeof three && size[2] == sizeof n, "scale's parameter sizes");
    char buffer[64];
    memset(buffer, 0, sizeof buffer);
    memcpy(buffer + off[0], &v, sizeof v);
    memcpy(buffer + off[1], &three, sizeof three);
    memcpy(buffer + off[2], &n, sizeof n);
    size_t bytes = off[2] + size[2];
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END};
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 3.0f * i, "after a launch with packed arguments: %g at %u", f[i], i);
    /* A buffer too short for the parameters, and arguments given twice,
     * are refused and launch nothing. */
    size_t too_few = off[2];
    void *short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &too_few,
                           CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, NULL, short_extra) == CUDA_ERROR_INVALID_VALUE,
          "a packed buffer too short for the parameters");
    void *params[] = {&v, &three, &n};
    CHECK(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, params, extra) == CUDA_ERROR_INVALID_VALUE,
          "arguments both in kernelParams and in extra");
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 3.0f * i, "after refused launches: %g at %u", f[i], i);
    CU(cuMemFree(v));
}

/* The deprecated launch, as a program from CUDA's first years makes it:
 * the block shape and the arguments set on the function, then cuLaunchGrid
 * (routed, the runtime makes the launch: nothing reaches the driver's). */
static float times5(unsigned i) { return 5.0f * i; }
static float plus1_times5(unsigned i) { return 5.0f * (5.0f * i + 1); }
static void run_legacy_launch(enum mode mode, CUfunction scale, CUstream stream) {
    unsigned n = 4096;
    CUdeviceptr v = managed_ramp(n);
    float *f = (float *)v;
    size_t off[3];
    for (int i = 0; i < 3; ++i) CU(cuFuncGetParamInfo(scale, i, &off[i], NULL));
    long grids = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchGrid") +
                 driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchGridAsync");
    CU(cuFuncSetBlockShape(scale, 256, 1, 1));
    CU(cuFuncSetSharedSize(scale, 0));
    CU(cuParamSetv(scale, (int)off[0], &v, sizeof v));
    CU(cuParamSetf(scale, (int)off[1], 5.0f));
    CU(cuParamSeti(scale, (int)off[2], n));
    CU(cuParamSetSize(scale, (unsigned)(off[2] + sizeof n)));
    CU(cuLaunchGrid(scale, n / 256, 1));
    CU(cuCtxSynchronize());
    check_floats(f, n, times5, "after cuLaunchGrid");
    /* The CPU writes between kernels: the next launch, on a stream, sees it. */
    for (unsigned i = 0; i < n; ++i) f[i] += 1;
    CU(cuLaunchGridAsync(scale, n / 256, 1, stream));
    CU(cuStreamSynchronize(stream));
    check_floats(f, n, plus1_times5, "after cuLaunchGridAsync");
    CHECK(cuLaunchGrid(scale, 0, 1) == CUDA_ERROR_INVALID_VALUE, "an empty grid");
    long reached = driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchGrid") +
                   driver_calls("libcuda.so.1", "fake_cuda_calls", "cuLaunchGridAsync") - grids;
    CHECK((mode == ROUTED) == (reached == 0), "%ld deprecated launches reached the driver", reached);
    CU(cuMemFree(v));
}

/* A graph built node by node: a copy from managed memory the program
 * names as host memory into device memory, a kernel on that, a copy back
 * into managed memory named as host memory, a fill of managed memory and a
 * host node, launched three times with the CPU writing between and a copy
 * node changed in the instantiated graph.  Routed on the cuda device the
 * copies work on the device copy at the shared address, the launch
 * releasing it and the synchronisation acquiring; on sim and cpu the
 * kernel node and the nodes on shared memory are refused. */
static void run_built_graph(enum mode mode, CUfunction scale, CUstream stream) {
    unsigned n = 4096;
    CUdeviceptr v = managed_ramp(n), w = managed_ramp(n), z, d;
    CU(cuMemAllocManaged(&z, n, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAlloc(&d, n * 4));
    float *f = (float *)v, two = 2.0f;
    void *params[] = {&d, &two, &n};
    CUcontext ctx;
    CU(cuCtxGetCurrent(&ctx));
    CUDA_MEMCPY3D in, out;
    memset(&in, 0, sizeof in);
    in.srcMemoryType = CU_MEMORYTYPE_HOST;
    in.srcHost = (const void *)v;
    in.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    in.dstDevice = d;
    in.WidthInBytes = n * 4;
    in.Height = in.Depth = 1;
    memset(&out, 0, sizeof out);
    out.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    out.srcDevice = d;
    out.dstMemoryType = CU_MEMORYTYPE_HOST;
    out.dstHost = (void *)v;
    out.WidthInBytes = n * 4;
    out.Height = out.Depth = 1;
    CUDA_KERNEL_NODE_PARAMS kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.func = scale;
    kernel.gridDimX = n / 256, kernel.gridDimY = kernel.gridDimZ = 1;
    kernel.blockDimX = 256, kernel.blockDimY = kernel.blockDimZ = 1;
    kernel.kernelParams = params;
    CUDA_MEMSET_NODE_PARAMS fill = {z, 0, 7, 1, n, 1};
    int host_runs = 0;
    CUDA_HOST_NODE_PARAMS host = {count_launch, &host_runs};
    CUgraph g;
    CUgraphNode copy_in, run, copy_out, filled, counted;
    CU(cuGraphCreate(&g, 0));
    CUresult r_in = cuGraphAddMemcpyNode(&copy_in, g, NULL, 0, &in, ctx);
    CUresult r_run = cuGraphAddKernelNode(&run, g, NULL, 0, &kernel);
    CUresult r_out = cuGraphAddMemcpyNode(&copy_out, g, NULL, 0, &out, ctx);
    CUresult r_fill = cuGraphAddMemsetNode(&filled, g, NULL, 0, &fill, ctx);
    CU(cuGraphAddHostNode(&counted, g, NULL, 0, &host));
    if (mode == ROUTED && !on_gpu_backend()) {
        CHECK(r_in == CUDA_ERROR_NOT_SUPPORTED && r_run == CUDA_ERROR_NOT_SUPPORTED &&
                  r_out == CUDA_ERROR_NOT_SUPPORTED && r_fill == CUDA_ERROR_NOT_SUPPORTED,
              "nodes on shared memory built on an emulated device: %d %d %d %d", (int)r_in, (int)r_run, (int)r_out,
              (int)r_fill);
    } else {
        CU(r_in);
        CU(r_run);
        CU(r_out);
        CU(r_fill);
        CUgraphExec e;
        CU(cuGraphInstantiate(&e, g, 0));
        CU(cuGraphLaunch(e, stream));
        CU(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 2.0f * i, "after the built graph: %g at %u", f[i], i);
        for (unsigned i = 0; i < n; ++i) CHECK(((unsigned char *)z)[i] == 7, "the fill node: %u at %u", ((unsigned char *)z)[i], i);
        for (unsigned i = 0; i < n; ++i) f[i] += 1;
        CU(cuGraphLaunch(e, stream));
        CU(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < n; ++i)
            CHECK(f[i] == 4.0f * i + 2, "after the built graph's second launch: %g at %u", f[i], i);
        in.srcHost = (const void *)w;
        CU(cuGraphExecMemcpyNodeSetParams(e, copy_in, &in, ctx));
        CU(cuGraphLaunch(e, stream));
        CU(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < n; ++i)
            CHECK(f[i] == 2.0f * i, "after a copy node took another source: %g at %u", f[i], i);
        CHECK(host_runs == 3, "the host node ran %d times", host_runs);
        CU(cuGraphExecDestroy(e));
    }
    CU(cuGraphDestroy(g));
    CU(cuMemFree(d));
    CU(cuMemFree(z));
    CU(cuMemFree(w));
    CU(cuMemFree(v));
}

/* Host functions between kernels on one stream. */
static void run_host_functions(CUfunction scale, CUstream stream) {
    unsigned n = 4096;
    CUdeviceptr v = managed_ramp(n);
    float *f = (float *)v, two = 2.0f;
    void *params[] = {&v, &two, &n};
    host_step first = {f, n, 2, 0, 0, 0, CUDA_SUCCESS}, second = {f, n, 4, 2, 0, 0, CUDA_ERROR_UNKNOWN};
    CHECK(cuLaunchHostFunc(stream, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "a null host function");
    CHECK(cuStreamAddCallback(stream, host_step_callback, &second, 1) == CUDA_ERROR_INVALID_VALUE, "callback flags");
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL)); /* 2i */
    CU(cuLaunchHostFunc(stream, host_step_fn, &first));                           /* 2i + 1 */
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL)); /* 4i + 2 */
    CU(cuStreamAddCallback(stream, host_step_callback, &second, 0));              /* 4i + 3 */
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL)); /* 8i + 6 */
    CU(cuStreamSynchronize(stream));
    CHECK(first.calls == 1 && first.seen, "the host function ran %d times, saw the kernel's output: %d", first.calls,
          first.seen);
    CHECK(second.calls == 1 && second.seen && second.status == CUDA_SUCCESS,
          "the callback ran %d times, saw the kernels' output: %d, status %d", second.calls, second.seen,
          (int)second.status);
    for (unsigned i = 0; i < n; ++i) CHECK(f[i] == 8.0f * i + 6, "after the host functions: %g at %u", f[i], i);
    CU(cuMemFree(v));
}

/* A buffer the program pins and maps for its kernels (zero copy): from
 * malloc, shared memory where the preload shares it (kernels reach it at the
 * same address; the driver would refuse to register it on the cuda device). */
static void run_registered(enum mode mode, CUfunction scale) {
    unsigned n = REGISTERED_BYTES / sizeof(float);
    float *buf = (float *)malloc(REGISTERED_BYTES);
    CHECK(buf != NULL, "malloc");
    for (unsigned i = 0; i < n; ++i) buf[i] = i;
    check_registered(mode, buf);
    CUdeviceptr dbuf = 0;
    if (mode == ERRORS) {
        CHECK(cuMemHostRegister(buf + 1, REGISTERED_BYTES, CU_MEMHOSTREGISTER_DEVICEMAP) == CUDA_ERROR_INVALID_VALUE,
              "a registration past the end of shared memory");
        CHECK(cuMemHostRegister(buf, REGISTERED_BYTES, CU_MEMHOSTREGISTER_IOMEMORY) == CUDA_ERROR_INVALID_VALUE,
              "shared memory registered as I/O memory");
        CHECK(cuMemHostRegister(buf, REGISTERED_BYTES, 0x100) == CUDA_ERROR_INVALID_VALUE, "unknown flags");
        CHECK(cuMemHostGetDevicePointer(&dbuf, buf, 1) == CUDA_ERROR_INVALID_VALUE, "device pointer flags");
    }
    CU(cuMemHostRegister(buf, REGISTERED_BYTES, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
    CU(cuMemHostGetDevicePointer(&dbuf, buf, 0));
    float three = 3.0f;
    void *params[] = {&dbuf, &three, &n};
    CU(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU(cuCtxSynchronize());
    for (unsigned i = 0; i < n; ++i) CHECK(buf[i] == 3.0f * i, "registered buf[%u] = %g, expected %g", i, buf[i], 3.0f * i);
    CU(cuMemHostUnregister(buf));
    free(buf);
}

int main(int argc, char **argv) {
    enum mode mode = parse_mode(argc, argv);
    CUfunction add, scale, sum_list, crash, unregistered;
    CUmodule module = cuda_app_start();
    CU(cuModuleGetFunction(&add, module, "vec_add"));
    CU(cuModuleGetFunction(&scale, module, "scale"));
    CU(cuModuleGetFunction(&sum_list, module, "sum_list"));
    CU(cuModuleGetFunction(&crash, module, "crash"));
    CU(cuModuleGetFunction(&unregistered, module, "unregistered"));
    if (getenv("APP_GRAPH_HOST_NODE")) {
        CUstream own;
        CU(cuStreamCreate(&own, 0));
        run_graph_host_node(scale, own);
        return 0;
    }
    if (mode == ERRORS) {
        run_errors(add, unregistered, crash);
        run_registered(mode, scale);
        printf("cuda-driver errors: ok\n");
        return 0;
    }

    CUdeviceptr x, y, out;
    CU(cuMemAllocManaged(&x, N * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&y, N * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&out, N * 4, CU_MEM_ATTACH_HOST));
    check_memory(mode, (void *)x, N * 4);
    float *xs = (float *)x, *ys = (float *)y, *outs = (float *)out;
    for (unsigned i = 0; i < N; ++i) xs[i] = i, ys[i] = 2.0f * i;

    CUstream stream;
    CUevent done;
    CU(cuStreamCreate(&stream, 0));
    CU(cuEventCreate(&done, 0));
    /* `out` belongs to `stream` from here (routed: a hint, checked). */
    CHECK(cuStreamAttachMemAsync(NULL, out, 0, CU_MEM_ATTACH_SINGLE) == CUDA_ERROR_INVALID_VALUE,
          "a single attachment to the null stream");
    CHECK(cuStreamAttachMemAsync(stream, out + 4, 0, CU_MEM_ATTACH_SINGLE) == CUDA_ERROR_INVALID_VALUE,
          "an attachment of part of an allocation");
    CHECK(cuStreamAttachMemAsync(stream, out, 4, CU_MEM_ATTACH_SINGLE) == CUDA_ERROR_INVALID_VALUE,
          "an attachment of some of its bytes");
    CU(cuStreamAttachMemAsync(stream, out, 0, CU_MEM_ATTACH_SINGLE));
    unsigned n = N;
    void *add_params[] = {&x, &y, &out, &n};
    CU(cuLaunchKernel(add, N / 256, 1, 1, 256, 1, 1, 0, stream, add_params, NULL));
    CU(cuStreamSynchronize(stream));
    check_floats(outs, N, sum3, "out");

    float two = 2.0f;
    void *scale_params[] = {&out, &two, &n};
    CUlaunchConfig config = {N / 128, 1, 1, 128, 1, 1, 0, stream, NULL, 0};
    CU(cuLaunchKernelEx(&config, scale, scale_params, NULL));
    CU(cuEventRecord(done, stream));
    CU(cuEventSynchronize(done));
    check_floats(outs, N, times6, "out after scale");

    /* The CPU writes between kernels: the next launch must see it. */
    for (unsigned i = 0; i < N; ++i) outs[i] += 1;
    CU(cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, NULL, scale_params, NULL));
    /* A prefetch to the CPU ordered after the kernel (routed, the
     * synchronisation below hands it back). */
    CUmemLocation on_cpu = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CU(cuMemPrefetchAsync(out, N * 4, on_cpu, 0, NULL));
    while (cuStreamQuery(NULL) == CUDA_ERROR_NOT_READY) {
    }
    check_floats(outs, N, plus1_times2, "out after the CPU's write");

    /* The driver's own copies and fills with managed memory on either side
     * (routed, the runtime moves that data: the driver would take a shared
     * address for device memory). */
    /* Hints and queries on managed memory. */
    CUmemLocation on_gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CU(cuMemPrefetchAsync(x, N * 4, on_gpu, 0, stream));
    CU(cuMemPrefetchAsync(y, N * 4, on_cpu, 0, stream));
    CHECK(cuMemPrefetchAsync(x + 4, N * 4, on_gpu, 0, stream) != CUDA_SUCCESS, "a prefetch past the allocation");
    CU(cuMemAdvise(y, N * 4, CU_MEM_ADVISE_SET_READ_MOSTLY, on_gpu));
    CU(cuMemAdvise(y, N * 4, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_cpu));
    CU(cuMemAdvise(y, N * 4, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, on_cpu));
    CUdeviceptr base = 0;
    size_t size = 0;
    CU(cuMemGetAddressRange(&base, &size, x + 100));
    CHECK(base == x && size == N * 4, "cuMemGetAddressRange: %p + %zu, expected %p + %u", (void *)base, size, (void *)x,
          N * 4);
    CU(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, y + 8));
    CHECK(size == N * 4, "CU_POINTER_ATTRIBUTE_RANGE_SIZE: %zu, expected %u", size, N * 4);
    void *host_view = NULL;
    CU(cuPointerGetAttribute(&host_view, CU_POINTER_ATTRIBUTE_HOST_POINTER, y + 8));
    CHECK(host_view == (void *)(y + 8), "CU_POINTER_ATTRIBUTE_HOST_POINTER: %p", host_view);
    if (mode == ROUTED) {
        /* Routed, managed memory is shared memory, and says so as the
         * driver says it of its own managed memory (the double does not). */
        unsigned int managed = 0, type = 0;
        CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, y + 8));
        CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, y + 8));
        CHECK(managed == 1 && type == CU_MEMORYTYPE_DEVICE, "IS_MANAGED %u, MEMORY_TYPE %u", managed, type);
        CUpointer_attribute both[2] = {CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
        CUdeviceptr start = 0;
        managed = 0;
        void *out[2] = {&managed, &start};
        CU(cuPointerGetAttributes(2, both, out, y + 8));
        CHECK(managed == 1 && start == y, "cuPointerGetAttributes: IS_MANAGED %u, start %p", managed, (void *)start);

        /* The range queries give back the advice and prefetches above, page
         * by page, as the driver does for its own managed memory (the double
         * keeps none). */
        int v = 5, ids[3] = {5, 5, 5};
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, y, N * 4));
        CHECK(v == 1, "y read-mostly: %d", v);
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, y, N * 4));
        CHECK(v == CU_DEVICE_INVALID, "y's preferred location, unset: %d", v);
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, y + 64, 8));
        CHECK(v == CU_DEVICE_CPU, "y's last prefetch: %d", v);
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, x, N * 4));
        CHECK(v == 0, "x's last prefetch: %d", v);
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, x, N * 4));
        CHECK(v == 0, "x read-mostly: %d", v);
        CU(cuMemAdvise(x, N * 2, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_cpu));
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, x, N * 4));
        CHECK(v == CU_DEVICE_INVALID, "x's preferred location, half of it on the CPU: %d", v);
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, x, N * 2));
        CHECK(v == CU_DEVICE_CPU, "x's first half's preferred location: %d", v);
        CU(cuMemAdvise(x, N * 4, CU_MEM_ADVISE_SET_ACCESSED_BY, on_gpu));
        CU(cuMemRangeGetAttribute(ids, sizeof ids, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, x + 4096, 4096));
        CHECK(ids[0] == 0 && ids[1] == CU_DEVICE_INVALID && ids[2] == CU_DEVICE_INVALID, "x accessed by %d %d %d",
              ids[0], ids[1], ids[2]);
        CUmem_range_attribute two_attrs[2] = {CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
                                              CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE};
        CUmemLocationType types[2] = {CU_MEM_LOCATION_TYPE_INVALID, CU_MEM_LOCATION_TYPE_INVALID};
        void *types_out[2] = {&types[0], &types[1]};
        size_t sizes[2] = {sizeof types[0], sizeof types[1]};
        CU(cuMemRangeGetAttributes(types_out, sizes, two_attrs, 2, x, N * 2));
        CHECK(types[0] == CU_MEM_LOCATION_TYPE_HOST && types[1] == CU_MEM_LOCATION_TYPE_DEVICE,
              "cuMemRangeGetAttributes: preferred %d, last prefetch %d", (int)types[0], (int)types[1]);
        CHECK(cuMemRangeGetAttribute(&v, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, y, N * 4) == CUDA_ERROR_INVALID_VALUE,
              "an int's answer in 8 bytes");
        CHECK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, y + 4, N * 4) != CUDA_SUCCESS,
              "a range past the allocation");
        CHECK(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, y, 0) == CUDA_ERROR_INVALID_VALUE,
              "an empty range");
        CUmemLocation no_gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 77};
        CHECK(cuMemAdvise(y, N * 4, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, no_gpu) == CUDA_ERROR_INVALID_DEVICE,
              "advice naming a device the driver does not have");
        CHECK(cuMemPrefetchAsync(y, N * 4, no_gpu, 0, stream) == CUDA_ERROR_INVALID_DEVICE,
              "a prefetch to a device the driver does not have");
        /* A later allocation at the same address has no advice. */
        CUdeviceptr z, again;
        CU(cuMemAllocManaged(&z, N * 4, CU_MEM_ATTACH_GLOBAL));
        CU(cuMemAdvise(z, N * 4, CU_MEM_ADVISE_SET_READ_MOSTLY, on_gpu));
        CU(cuMemFree(z));
        CU(cuMemAllocManaged(&again, N * 4, CU_MEM_ATTACH_GLOBAL));
        CU(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, again, N * 4));
        CHECK(v == 0, "a new allocation (%s address) read-mostly: %d", again == z ? "the same" : "another", v);
        CU(cuMemFree(again));
    }

    CUdeviceptr dbuf, back, big;
    CU(cuMemAlloc(&dbuf, N * 4));
    CU(cuMemAllocManaged(&back, N * 4, CU_MEM_ATTACH_GLOBAL));
    CU(cuMemcpyHtoD(dbuf, outs, N * 4));
    CU(cuMemcpyDtoH((void *)back, dbuf, N * 4));
    check_floats((float *)back, N, plus1_times2, "copied through device memory");
    CU(cuMemsetD8(back, 0, N * 4));
    for (unsigned i = 0; i < N; ++i) CHECK(((float *)back)[i] == 0.0f, "back[%u] = %g after cuMemsetD8", i, ((float *)back)[i]);
    CU(cuMemsetD32(back, 0x3f800000u, N)); /* 1.0f */
    for (unsigned i = 0; i < N; ++i) CHECK(((float *)back)[i] == 1.0f, "back[%u] = %g after cuMemsetD32", i, ((float *)back)[i]);
    /* A 2D fill: rows 3 to 102 of 256-float rows, floats 5 to 204, to 2.0f. */
    CU(cuMemsetD2D32(back + (3 * 256 + 5) * 4, 256 * 4, 0x40000000u, 200, 100));
    for (unsigned i = 0; i < N; ++i) {
        unsigned row = i / 256, col = i % 256;
        float want = row >= 3 && row < 103 && col >= 5 && col < 205 ? 2.0f : 1.0f;
        CHECK(((float *)back)[i] == want, "back[%u] = %g after cuMemsetD2D32", i, ((float *)back)[i]);
    }
    CU(cuMemcpy(back, out, N * 4));
    check_floats((float *)back, N, plus1_times2, "copied managed to managed");
    /* A 2D copy: every other row of `out`, seen as 256-float rows, into
     * device memory, then back into `back`'s first half. */
    CU(cuMemsetD8(back, 0, N * 4));
    CUDA_MEMCPY2D c2 = {0};
    c2.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    c2.srcDevice = out;
    c2.srcPitch = 2 * 256 * 4;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = dbuf;
    c2.dstPitch = 256 * 4;
    c2.WidthInBytes = 256 * 4;
    c2.Height = N / 512;
    CU(cuMemcpy2D(&c2));
    CU(cuMemcpyDtoH((void *)back, dbuf, N * 2));
    for (unsigned i = 0; i < N / 2; ++i) {
        unsigned row = i / 256, col = i % 256;
        CHECK(((float *)back)[i] == plus1_times2(row * 512 + col), "back[%u] = %g after the 2D copy", i,
              ((float *)back)[i]);
    }
    /* A 3D copy the other way: a box of 4 slices of 8 rows of 128 floats
     * from device memory (`dbuf` holds out's values, slices of 16 rows of
     * 256 floats), starting at slice 1, row 1, float 64, into managed
     * memory packed. */
    CU(cuMemcpyHtoD(dbuf, (const void *)out, N * 4));
    CU(cuMemsetD8(back, 0, N * 4));
    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.srcDevice = dbuf;
    c3.srcXInBytes = 64 * 4;
    c3.srcY = 1;
    c3.srcZ = 1;
    c3.srcPitch = 256 * 4;
    c3.srcHeight = 16;
    c3.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c3.dstDevice = back;
    c3.dstPitch = 128 * 4;
    c3.dstHeight = 8;
    c3.WidthInBytes = 128 * 4;
    c3.Height = 8;
    c3.Depth = 4;
    CU(cuMemcpy3D(&c3));
    for (unsigned i = 0; i < 4 * 8 * 128; ++i) {
        unsigned z = i / (8 * 128), y = i / 128 % 8, x = i % 128;
        unsigned from = (z + 1) * 16 * 256 + (y + 1) * 256 + 64 + x;
        CHECK(((float *)back)[i] == plus1_times2(from), "back[%u] = %g after the 3D copy", i, ((float *)back)[i]);
    }
    CHECK(((float *)back)[4 * 8 * 128] == 0.0f, "the 3D copy wrote past its box");
    /* The same box between contexts (one here), managed memory now the
     * source: back to device memory at another place, then checked there. */
    CUcontext here;
    CU(cuCtxGetCurrent(&here));
    CUDA_MEMCPY3D_PEER p3 = {0};
    p3.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    p3.srcDevice = back;
    p3.srcContext = here;
    p3.srcPitch = 128 * 4;
    p3.srcHeight = 8;
    p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p3.dstDevice = dbuf;
    p3.dstContext = here;
    p3.dstPitch = 128 * 4;
    p3.dstHeight = 8;
    p3.WidthInBytes = 128 * 4;
    p3.Height = 8;
    p3.Depth = 4;
    CU(cuMemsetD8(dbuf, 0, N * 4));
    CU(cuMemcpy3DPeer(&p3));
    CU(cuMemsetD8(back, 0, N * 4));
    CU(cuMemcpyDtoH((void *)back, dbuf, 4 * 8 * 128 * 4));
    for (unsigned i = 0; i < 4 * 8 * 128; ++i) {
        unsigned z = i / (8 * 128), y = i / 128 % 8, x = i % 128;
        unsigned from = (z + 1) * 16 * 256 + (y + 1) * 256 + 64 + x;
        CHECK(((float *)back)[i] == plus1_times2(from), "back[%u] = %g after the 3D peer copy", i, ((float *)back)[i]);
    }
    CU(cuMemcpyHtoD(dbuf, (const void *)out, N * 4));
    /* A copy between contexts (one here) from device memory into managed. */
    CUcontext peer;
    CU(cuCtxGetCurrent(&peer));
    CU(cuMemsetD8(back, 0, N * 4));
    CU(cuMemcpyPeer(back, peer, dbuf, peer, N * 4));
    check_floats((float *)back, N, plus1_times2, "copied from a peer");
    /* A batch of copies (CUDA 12.8): the first half from device memory, the
     * second from managed memory, both into managed memory. */
    CU(cuMemsetD8(back, 0, N * 4));
    {
        CUdeviceptr dsts[2] = {back, back + N * 2}, srcs[2] = {dbuf, out + N * 2};
        size_t sizes[2] = {N * 2, N * 2}, attrs_idx = 0;
        CUmemcpyAttributes attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attrs, &attrs_idx, 1, 0));
        CU(cuStreamSynchronize(0));
    }
    check_floats((float *)back, N, plus1_times2, "copied in a batch");
    /* A batch of 3D copies (CUDA 12.8), which the driver may take in any
     * order: a box of 4 slices of 8 rows of 64 bytes out of device memory
     * (rows 256 bytes apart, slices of 16 rows) into managed memory packed
     * tight (row length and layer height 0: the extent's), and a copy
     * between two device buffers.  `dbuf` holds out's bytes. */
    {
        CUdeviceptr dtwo;
        CU(cuMemAlloc(&dtwo, 4096));
        CU(cuMemsetD8(back, 0, N * 4));
        CU(cuMemsetD8(dtwo, 0, 4096));
        CUDA_MEMCPY3D_BATCH_OP ops[2];
        memset(ops, 0, sizeof ops);
        for (int k = 0; k < 2; ++k) {
            ops[k].src.type = ops[k].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
            ops[k].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        }
        ops[0].src.op.ptr.ptr = dbuf + 4096 + 256 + 32; /* slice 1, row 1, byte 32 */
        ops[0].src.op.ptr.rowLength = 256;
        ops[0].src.op.ptr.layerHeight = 16;
        ops[0].dst.op.ptr.ptr = back;
        ops[0].extent.width = 64, ops[0].extent.height = 8, ops[0].extent.depth = 4;
        ops[1].src.op.ptr.ptr = dbuf;
        ops[1].dst.op.ptr.ptr = dtwo;
        ops[1].extent.width = 4096, ops[1].extent.height = ops[1].extent.depth = 1;
        CU(cuMemcpy3DBatchAsync(2, ops, 0, 0));
        CU(cuStreamSynchronize(0));
        const unsigned char *want = (const unsigned char *)out, *got = (const unsigned char *)back;
        for (unsigned z = 0; z < 4; ++z)
            for (unsigned y = 0; y < 8; ++y)
                for (unsigned x = 0; x < 64; ++x)
                    CHECK(got[z * 512 + y * 64 + x] == want[(z + 1) * 4096 + (y + 1) * 256 + 32 + x],
                          "byte (%u, %u, %u) of the batch's 3D box", x, y, z);
        CHECK(got[4 * 512] == 0, "the batch's box ends where its extent does");
        unsigned char two[4096];
        CU(cuMemcpyDtoH(two, dtwo, 4096));
        CHECK(memcmp(two, want, 4096) == 0, "the batch's copy between device buffers");
        CU(cuMemFree(dtwo));
    }
    /* Large enough that the runtime's own buffers for it are large too. */
    const size_t big_bytes = 8u << 20;
    unsigned char *host = (unsigned char *)malloc(big_bytes);
    CHECK(host != NULL, "malloc");
    CU(cuMemAllocManaged(&big, big_bytes, CU_MEM_ATTACH_GLOBAL));
    for (size_t i = 0; i < big_bytes; ++i) ((unsigned char *)big)[i] = (unsigned char)(i * 31);
    CUdeviceptr dbig;
    CU(cuMemAlloc(&dbig, big_bytes));
    CU(cuMemcpyHtoD(dbig, (void *)big, big_bytes));
    CU(cuMemsetD8(big, 0, big_bytes));
    CU(cuMemcpyDtoH((void *)big, dbig, big_bytes));
    for (size_t i = 0; i < big_bytes; ++i)
        CHECK(((unsigned char *)big)[i] == (unsigned char)(i * 31), "big[%zu] = %u after a round trip", i,
              ((unsigned char *)big)[i]);
    CU(cuMemFree(dbig));
    CU(cuMemFree(big));
    free(host);
    CU(cuMemFree(dbuf));
    CU(cuMemFree(back));

    /* Pointers inside managed memory, and entry points from cuGetProcAddress
     * as a statically linked CUDA runtime gets them. */
    CUdeviceptr nodes, total;
    CU(cuMemAllocManaged(&nodes, 1000 * sizeof(struct node), CU_MEM_ATTACH_GLOBAL));
    CU(cuMemAllocManaged(&total, sizeof(long), CU_MEM_ATTACH_GLOBAL));
    struct node *list = (struct node *)nodes;
    for (int i = 0; i < 1000; ++i) list[i] = (struct node){i + 1 < 1000 ? &list[i + 1] : NULL, i};
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **) = NULL;
    CUresult (*ctx_sync)(void) = NULL;
    CUdriverProcAddressQueryResult status;
    CU(cuGetProcAddress("cuLaunchKernel", (void **)&launch, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    CU(cuGetProcAddress("cuCtxSynchronize", (void **)&ctx_sync, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    void *list_params[] = {&list, &total};
    CU(launch(sum_list, 1, 1, 1, 1, 1, 1, 0, NULL, list_params, NULL));
    CU(ctx_sync());
    CHECK(*(long *)total == 999 * 1000 / 2, "the list sums to %ld", *(long *)total);

    run_registered(mode, scale);
    run_array(stream);
    run_graph(mode, scale, stream);
    run_captured_copies(mode, scale, stream);
    run_launches_as_made(mode, scale);
    run_packed_arguments(scale);
    run_legacy_launch(mode, scale, stream);
    run_built_graph(mode, scale, stream);
    run_host_functions(scale, stream);
    check_launches(mode, driver_launches(), "launch");
    CHECK(driver_calls("libcuda.so.1", "fake_cuda_calls", "cuCtxSynchronize") > 0, "synchronisations reach the driver");
    CU(cuMemFree(x));
    CU(cuMemFree(y));
    CU(cuMemFree(out));
    CU(cuMemFree(nodes));
    CU(cuMemFree(total));
    printf("cuda-driver %s: ok\n", argv[1]);
    return 0;
}
