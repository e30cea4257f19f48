// An ordinary CUDA runtime program, written as people write them and
// knowing nothing of adsm.  scripts/gpu-check runs it on a GPU plain and
// under `adsm-run --device cuda`, linked with the shared and with the
// static CUDA runtime, and it checks its own results each time.
//   explicit: malloc'd buffers, cudaMalloc, cudaMemcpy both ways
//   managed:  cudaMallocManaged touched by CPU and GPU in turn, with
//             cudaMemcpy and cudaMemset on managed memory
//   pitched:  2D and 3D copies and fills between managed memory, pitched
//             device memory and malloc'd buffers, with kernels on both, and
//             a batch of copies (cudaMemcpyBatchAsync) and one of 3D
//             copies (cudaMemcpy3DBatchAsync)
//   apis:     advice and a prefetch read back by range queries; a kernel
//             captured into a CUDA graph and launched twice with
//             the CPU writing between, and copies and a fill captured
//             with one; managed memory attached to a
//             stream; a malloc'd buffer registered and mapped for a kernel;
//             a CUDA array filled from managed memory and read back; a
//             module variable written from and read into managed memory; host
//             functions between kernels on a stream, reading what the
//             kernel before wrote and writing what the kernel after reads;
//             the driver's launch with arguments packed in one buffer;
//             a graph built node by node with copies of managed memory
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            printf("%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

__device__ float module_variable[4096];

__global__ void triad(float *out, const float *a, const float *b, float s, size_t n) {
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a[i] + s * b[i];
}

static void expect(const float *v, size_t n, float (*want)(size_t), const char *what) {
    for (size_t i = 0; i < n; ++i)
        if (v[i] != want(i)) {
            printf("%s: [%zu] = %g, expected %g\n", what, i, v[i], want(i));
            exit(1);
        }
}

// Pitched memory: each row of `width` floats starts `pitch` bytes after the last.
__global__ void scale_rows(float *m, size_t pitch, size_t width, size_t height) {
    size_t x = blockIdx.x * size_t(blockDim.x) + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) {
        float *row = reinterpret_cast<float *>(reinterpret_cast<char *>(m) + y * pitch);
        row[x] = 2.0f * row[x] + float(y);
    }
}

static float a_of(size_t i) { return float(i % 977); }
static float b_of(size_t i) { return float(i % 13); }
static float triad_of(size_t i) { return a_of(i) + 3.0f * b_of(i); }

static float cell_of(size_t x, size_t y, size_t z) { return float((x * 7 + y * 131 + z * 1009) % 4093); }

static float *managed(size_t bytes) {
    float *p;
    CK(cudaMallocManaged(&p, bytes));
    return p;
}

static void expect_cell(const char *what, size_t x, size_t y, size_t z, float got, float want) {
    if (got == want) return;
    printf("pitched: %s: (%zu, %zu, %zu) = %g, expected %g\n", what, x, y, z, got, want);
    exit(1);
}

// Rows of odd widths at pitches that differ on every side, so a copy that
// treats any side as contiguous, or misses a row's offset, is seen.
static void pitched() {
    const size_t w = 1000, h = 777, wide = w + 37;  // floats
    const size_t row = w * sizeof(float);
    float *m = managed(w * h * sizeof(float));
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; ++x) m[y * w + x] = cell_of(x, y, 0);
    // Managed to pitched device memory, a kernel there, and back into
    // managed memory of another pitch whose gaps must stay as they were.
    float *dev;
    size_t pitch;
    CK(cudaMallocPitch(reinterpret_cast<void **>(&dev), &pitch, row, h));
    CK(cudaMemcpy2D(dev, pitch, m, row, row, h, cudaMemcpyDefault));
    scale_rows<<<dim3(unsigned((w + 127) / 128), unsigned(h)), 128>>>(dev, pitch, w, h);
    CK(cudaGetLastError());
    float *out = managed(wide * h * sizeof(float));
    for (size_t i = 0; i < wide * h; ++i) out[i] = -1.0f;
    CK(cudaMemcpy2D(out, wide * sizeof(float), dev, pitch, row, h, cudaMemcpyDefault));
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < wide; ++x)
            expect_cell("device to managed", x, y, 0, out[y * wide + x], x < w ? 2.0f * cell_of(x, y, 0) + float(y) : -1.0f);
    // A fill of a window inside managed memory, then the program's kernel on
    // what the copies and the fill left there.
    const size_t fx = 100, fy = 50, fw = 300, fh = 200;
    CK(cudaMemset2D(out + fy * wide + fx, wide * sizeof(float), 0, fw * sizeof(float), fh));
    CK(cudaDeviceSynchronize());
    scale_rows<<<dim3(unsigned((wide + 127) / 128), unsigned(h)), 128>>>(out, wide * sizeof(float), w, h);
    CK(cudaDeviceSynchronize());
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < wide; ++x) {
            bool filled = x >= fx && x < fx + fw && y >= fy && y < fy + fh;
            float copied = filled ? 0.0f : 2.0f * cell_of(x, y, 0) + float(y);
            expect_cell("fill and kernel", x, y, 0, out[y * wide + x], x < w ? 2.0f * copied + float(y) : -1.0f);
        }
    // Managed to malloc'd memory and back, both seen by the runtime as host memory.
    float *plain = static_cast<float *>(malloc(w * h * sizeof(float)));
    CK(cudaMemcpy2D(plain, row, out, wide * sizeof(float), row, h, cudaMemcpyDefault));
    for (size_t i = 0; i < w * h; ++i) plain[i] += 1.0f;
    CK(cudaMemcpy2D(m, row, plain, row, row, h, cudaMemcpyDefault));
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; ++x) expect_cell("malloc'd to managed", x, y, 0, m[y * w + x], out[y * wide + x] + 1.0f);

    // A box out of a managed volume into a 3D device allocation and back
    // into another managed volume at an offset, and a 3D fill there.
    const size_t d = 9, bx = 250, by = 60, bz = 5;  // the box: bx floats, by rows, bz slices
    float *vol = managed(w * h * d * sizeof(float));
    for (size_t z = 0; z < d; ++z)
        for (size_t y = 0; y < h; ++y)
            for (size_t x = 0; x < w; ++x) vol[(z * h + y) * w + x] = cell_of(x, y, z);
    cudaPitchedPtr dev3;
    CK(cudaMalloc3D(&dev3, make_cudaExtent(bx * sizeof(float), by, bz)));
    cudaMemcpy3DParms in = {};
    in.srcPtr = make_cudaPitchedPtr(vol, row, w, h);
    in.srcPos = make_cudaPos(7 * sizeof(float), 11, 2);
    in.dstPtr = dev3;
    in.extent = make_cudaExtent(bx * sizeof(float), by, bz);
    in.kind = cudaMemcpyDefault;
    CK(cudaMemcpy3D(&in));
    float *back = managed(w * h * d * sizeof(float));
    for (size_t i = 0; i < w * h * d; ++i) back[i] = -2.0f;
    cudaMemcpy3DParms out3 = {};
    out3.srcPtr = dev3;
    out3.dstPtr = make_cudaPitchedPtr(back, row, w, h);
    out3.dstPos = make_cudaPos(13 * sizeof(float), 17, 3);
    out3.extent = in.extent;
    out3.kind = cudaMemcpyDefault;
    CK(cudaMemcpy3D(&out3));
    cudaPitchedPtr corner = make_cudaPitchedPtr(back, row, w, h);
    CK(cudaMemset3D(corner, 0, make_cudaExtent(4 * sizeof(float), 3, 2)));
    CK(cudaDeviceSynchronize());
    for (size_t z = 0; z < d; ++z)
        for (size_t y = 0; y < h; ++y)
            for (size_t x = 0; x < w; ++x) {
                float want = -2.0f;
                if (x < 4 && y < 3 && z < 2) want = 0.0f;
                else if (x >= 13 && x < 13 + bx && y >= 17 && y < 17 + by && z >= 3 && z < 3 + bz)
                    want = cell_of(x - 13 + 7, y - 17 + 11, z - 3 + 2);
                expect_cell("3D copies and fill", x, y, z, back[(z * h + y) * w + x], want);
            }
    // A batch of copies (CUDA 12.8), on a stream of the program's: a managed
    // row into device memory, and device memory into a managed row.
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *lin_in, *lin_out, *row_back = managed(row);
    CK(cudaMalloc(reinterpret_cast<void **>(&lin_in), row));
    CK(cudaMalloc(reinterpret_cast<void **>(&lin_out), row));
    for (size_t x = 0; x < w; ++x) plain[x] = cell_of(x, 0, 7), row_back[x] = -3.0f;
    CK(cudaMemcpy(lin_out, plain, row, cudaMemcpyHostToDevice));
    void *dsts[2] = {lin_in, row_back};
    const void *srcs[2] = {m + 5 * w, lin_out};
    size_t sizes[2] = {row, row}, attr_index = 0;
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_index, 1, stream));
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(plain, lin_in, row, cudaMemcpyDeviceToHost));
    for (size_t x = 0; x < w; ++x) {
        expect_cell("batch, managed to device", x, 5, 0, plain[x], m[5 * w + x]);
        expect_cell("batch, device to managed", x, 0, 7, row_back[x], cell_of(x, 0, 7));
    }
    cudaFree(lin_in), cudaFree(lin_out), cudaFree(row_back);
    // A batch of 3D copies (CUDA 12.8) on the same stream: a box of 3
    // slices of 8 rows of 64 bytes out of device memory (rows 256 bytes
    // apart, slices of 16 rows) into managed memory packed tight, and device
    // memory into device memory.
    const size_t slab = 4 * 16 * 256, box = 4 * 8 * 64;
    unsigned char *bytes = static_cast<unsigned char *>(malloc(slab)), *box_src, *box_copy, *box_back;
    for (size_t i = 0; i < slab; ++i) bytes[i] = static_cast<unsigned char>(i * 13 + i / 256);
    CK(cudaMalloc(reinterpret_cast<void **>(&box_src), slab));
    CK(cudaMalloc(reinterpret_cast<void **>(&box_copy), slab));
    CK(cudaMallocManaged(reinterpret_cast<void **>(&box_back), box + 64));
    memset(box_back, 0, box + 64);
    CK(cudaMemcpy(box_src, bytes, slab, cudaMemcpyHostToDevice));
    cudaMemcpy3DBatchOp ops[2] = {};
    for (cudaMemcpy3DBatchOp &op : ops) {
        op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
        op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    }
    ops[0].src.op.ptr.ptr = box_src + 16 * 256 + 256 + 32;  // slice 1, row 1, byte 32
    ops[0].src.op.ptr.rowLength = 256;
    ops[0].src.op.ptr.layerHeight = 16;
    ops[0].dst.op.ptr.ptr = box_back;
    ops[0].extent = make_cudaExtent(64, 8, 3);
    ops[1].src.op.ptr.ptr = box_src;
    ops[1].dst.op.ptr.ptr = box_copy;
    ops[1].extent = make_cudaExtent(slab, 1, 1);
    CK(cudaMemcpy3DBatchAsync(2, ops, 0, stream));
    CK(cudaStreamSynchronize(stream));
    for (size_t z = 0; z < 3; ++z)
        for (size_t y = 0; y < 8; ++y)
            for (size_t x = 0; x < 64; ++x)
                expect_cell("3D batch, device to managed", x, y, z, box_back[(z * 8 + y) * 64 + x],
                            bytes[(z + 1) * 16 * 256 + (y + 1) * 256 + 32 + x]);
    expect_cell("3D batch, past the box", 0, 0, 3, box_back[3 * 8 * 64], 0);
    unsigned char *copied = static_cast<unsigned char *>(malloc(slab));
    CK(cudaMemcpy(copied, box_copy, slab, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < slab; i += 97) expect_cell("3D batch, device to device", i, 0, 0, copied[i], bytes[i]);
    cudaFree(box_src), cudaFree(box_copy), cudaFree(box_back);
    free(bytes), free(copied);
    cudaStreamDestroy(stream);
    cudaFree(dev3.ptr), cudaFree(back), cudaFree(vol), cudaFree(dev), cudaFree(out), cudaFree(m);
    free(plain);
}

// The CUDA APIs around managed memory that programs use besides kernels
// and copies: graphs, stream attachment, registered host memory, arrays.
// A host function's step between kernels: it checks what the kernel before
// it wrote, then clears `b` for the kernel after it.
struct HostStep {
    const float *out;
    float *b;
    size_t n;
    float (*want)(size_t);
    int calls = 0, seen = 0;
};
static void CUDART_CB host_step(void *arg) {
    HostStep *h = static_cast<HostStep *>(arg);
    ++h->calls;
    h->seen = 1;
    for (size_t i = 0; i < h->n; ++i) {
        if (h->out[i] != h->want(i)) h->seen = 0;
        h->b[i] = 0.0f;
    }
}
static void CUDART_CB callback_step(cudaStream_t, cudaError_t status, void *arg) {
    if (status != cudaSuccess) printf("apis: a callback's status: %s\n", cudaGetErrorString(status)), exit(1);
    host_step(arg);
}

static void apis(size_t n, unsigned blocks) {
    const size_t bytes = n * sizeof(float);
    float *a = managed(bytes), *b = managed(bytes), *out = managed(bytes);
    for (size_t i = 0; i < n; ++i) a[i] = a_of(i), b[i] = b_of(i);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));

    // Advice and a prefetch come back from the range queries.
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0}, cpu = {cudaMemLocationTypeHost, 0};
    CK(cudaMemAdvise(a, bytes, cudaMemAdviseSetReadMostly, gpu));
    CK(cudaMemAdvise(b, bytes / 2, cudaMemAdviseSetPreferredLocation, cpu));
    CK(cudaMemPrefetchAsync(b, bytes, gpu, 0, s));
    CK(cudaStreamSynchronize(s));
    int read_mostly = 0, preferred_half = 0, preferred_all = 0, prefetched = 0;
    CK(cudaMemRangeGetAttribute(&read_mostly, 4, cudaMemRangeAttributeReadMostly, a, bytes));
    CK(cudaMemRangeGetAttribute(&preferred_half, 4, cudaMemRangeAttributePreferredLocation, b, bytes / 2));
    CK(cudaMemRangeGetAttribute(&preferred_all, 4, cudaMemRangeAttributePreferredLocation, b, bytes));
    CK(cudaMemRangeGetAttribute(&prefetched, 4, cudaMemRangeAttributeLastPrefetchLocation, b, bytes));
    if (read_mostly != 1 || preferred_half != cudaCpuDeviceId || preferred_all != cudaInvalidDeviceId ||
        prefetched != 0)
        printf("apis: range attributes: read-mostly %d, preferred %d and %d, last prefetch %d\n", read_mostly,
               preferred_half, preferred_all, prefetched),
            exit(1);
    CK(cudaMemAdvise(a, bytes, cudaMemAdviseUnsetReadMostly, gpu));
    CK(cudaMemAdvise(b, bytes / 2, cudaMemAdviseUnsetPreferredLocation, cpu));

    CK(cudaStreamAttachMemAsync(s, out, 0, cudaMemAttachSingle));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    triad<<<blocks, 256, 0, s>>>(out, a, b, 3.0f, n);
    CK(cudaGetLastError());
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int round = 0; round < 2; ++round) {
        if (round == 1)
            for (size_t i = 0; i < n; ++i) b[i] = 0.0f;  // the CPU writes between the graph's launches
        CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
        for (size_t i = 0; i < n; ++i)
            if (out[i] != (round ? a_of(i) : triad_of(i)))
                printf("apis: graph launch %d: [%zu] = %g\n", round, i, out[i]), exit(1);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));

    // Copies and a fill captured with a kernel run at each of the graph's
    // launches, on the data of then: b copied (as host memory) to device
    // memory, a triad there, out cleared and its first half copied back (as
    // host memory).
    float *dev = nullptr;
    CK(cudaMalloc(&dev, bytes));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(dev, b, bytes, cudaMemcpyHostToDevice, s));
    triad<<<blocks, 256, 0, s>>>(dev, a, dev, 3.0f, n);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(out, 0, bytes, s));
    CK(cudaMemcpyAsync(out, dev, bytes / 2, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < n; ++i) b[i] = round ? 0.0f : b_of(i);
        CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
        for (size_t i = 0; i < n; ++i) {
            float want = i >= n / 2 ? 0.0f : round ? a_of(i) : triad_of(i);
            if (out[i] != want) printf("apis: captured copies, launch %d: [%zu] = %g\n", round, i, out[i]), exit(1);
        }
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));

    // The same graph built node by node: b copied (as host memory) to
    // device memory, a triad kernel node there, the result copied back into
    // out (as host memory), launched with the CPU writing b between.
    CK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t copy_in, run, copy_out;
    CK(cudaGraphAddMemcpyNode1D(&copy_in, graph, nullptr, 0, dev, b, bytes, cudaMemcpyHostToDevice));
    float triad_scale = 3.0f;
    void *triad_args[] = {&dev, &a, &dev, &triad_scale, &n};
    cudaKernelNodeParams triad_node = {};
    triad_node.func = reinterpret_cast<void *>(triad);
    triad_node.gridDim = dim3(blocks);
    triad_node.blockDim = dim3(256);
    triad_node.kernelParams = triad_args;
    CK(cudaGraphAddKernelNode(&run, graph, &copy_in, 1, &triad_node));
    CK(cudaGraphAddMemcpyNode1D(&copy_out, graph, &run, 1, out, dev, bytes, cudaMemcpyDeviceToHost));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < n; ++i) b[i] = round ? 0.0f : b_of(i);
        CK(cudaGraphLaunch(exec, s));
        CK(cudaStreamSynchronize(s));
        for (size_t i = 0; i < n; ++i)
            if (out[i] != (round ? a_of(i) : triad_of(i)))
                printf("apis: built graph, launch %d: [%zu] = %g\n", round, i, out[i]), exit(1);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaFree(dev));

    // A malloc'd buffer pinned and mapped for a kernel (zero copy); under
    // adsm-run --threshold 1M it is shared memory.
    float *host = static_cast<float *>(malloc(bytes)), *mapped = nullptr;
    for (size_t i = 0; i < n; ++i) host[i] = b_of(i);
    CK(cudaHostRegister(host, bytes, cudaHostRegisterMapped));
    CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&mapped), host, 0));
    triad<<<blocks, 256, 0, s>>>(out, a, mapped, 3.0f, n);
    CK(cudaStreamSynchronize(s));
    expect(out, n, triad_of, "apis: registered memory");
    CK(cudaHostUnregister(host));
    free(host);

    // A 2D CUDA array of 1024 x 64 floats from and back to managed memory.
    const size_t aw = 1024, ah = 64;
    cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CK(cudaMallocArray(&arr, &f, aw, ah));
    CK(cudaMemcpy2DToArray(arr, 0, 0, a, aw * sizeof(float), aw * sizeof(float), ah, cudaMemcpyDefault));
    for (size_t i = 0; i < aw * ah; ++i) out[i] = -1.0f;
    CK(cudaMemcpy2DFromArray(out, aw * sizeof(float), arr, 0, 0, aw * sizeof(float), ah, cudaMemcpyDefault));
    CK(cudaDeviceSynchronize());
    for (size_t i = 0; i < aw * ah; ++i)
        if (out[i] != a_of(i)) printf("apis: array round trip: [%zu] = %g\n", i, out[i]), exit(1);
    CK(cudaFreeArray(arr));

    // A module variable to and from managed memory.
    const size_t vn = sizeof module_variable / sizeof(float);
    CK(cudaMemcpyToSymbol(module_variable, a, vn * sizeof(float)));
    for (size_t i = 0; i < vn; ++i) out[i] = -1.0f;
    CK(cudaMemcpyFromSymbol(out + 8, module_variable, (vn - 16) * sizeof(float), 8 * sizeof(float)));
    for (size_t i = 0; i < vn; ++i) {
        float want = i < 8 || i >= vn - 8 ? -1.0f : a_of(i);
        if (out[i] != want) printf("apis: module variable: [%zu] = %g\n", i, out[i]), exit(1);
    }

    // Host functions in stream order: each reads the kernel's output before
    // it and clears b, which the kernel after it reads.
    for (size_t i = 0; i < n; ++i) b[i] = b_of(i);
    HostStep first{out, b, n, triad_of}, second{out, b, n, a_of};
    triad<<<blocks, 256, 0, s>>>(out, a, b, 3.0f, n);
    CK(cudaLaunchHostFunc(s, host_step, &first));
    triad<<<blocks, 256, 0, s>>>(out, a, b, 3.0f, n);
    CK(cudaStreamAddCallback(s, callback_step, &second, 0));
    CK(cudaStreamSynchronize(s));
    if (first.calls != 1 || !first.seen || second.calls != 1 || !second.seen)
        printf("apis: host functions ran %d and %d times, saw their kernels' output: %d and %d\n", first.calls,
               second.calls, first.seen, second.seen),
            exit(1);

    // The driver's launch with the arguments packed in one buffer (`extra`,
    // as PyCUDA passes them), reached through the runtime's entry point.
    using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void **, void **);
    using ParamInfo = CUresult (*)(CUfunction, size_t, size_t *, size_t *);
    void *launch_fn = nullptr, *info_fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &launch_fn, 12000, cudaEnableDefault, &found));
    CK(cudaGetDriverEntryPointByVersion("cuFuncGetParamInfo", &info_fn, 12040, cudaEnableDefault, &found));
    cudaFunction_t fn;
    CK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void *>(triad)));
    CUfunction triad_fn = reinterpret_cast<CUfunction>(fn);
    float three = 3.0f;
    const void *args[] = {&out, &a, &b, &three, &n};
    const size_t sizes[] = {sizeof out, sizeof a, sizeof b, sizeof three, sizeof n};
    alignas(8) char packed[64] = {};
    size_t packed_bytes = 0;
    for (size_t i = 0; i < 5; ++i) {
        size_t offset = 0, size = 0;
        if (reinterpret_cast<ParamInfo>(info_fn)(triad_fn, i, &offset, &size) != CUDA_SUCCESS || size != sizes[i])
            printf("apis: triad's parameter %zu: size %zu\n", i, size), exit(1);
        memcpy(packed + offset, args[i], size);
        packed_bytes = offset + size;
    }
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_bytes,
                     CU_LAUNCH_PARAM_END};
    for (size_t i = 0; i < n; ++i) out[i] = -1.0f;
    if (CUresult r = reinterpret_cast<Launch>(launch_fn)(triad_fn, blocks, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra);
        r != CUDA_SUCCESS)
        printf("apis: a launch with packed arguments: CUDA error %d\n", int(r)), exit(1);
    CK(cudaDeviceSynchronize());
    expect(out, n, triad_of, "apis: packed arguments");

    CK(cudaStreamDestroy(s));
    cudaFree(a), cudaFree(b), cudaFree(out);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "explicit";
    const size_t n = size_t(8) << 20;
    const size_t bytes = n * sizeof(float);
    unsigned blocks = unsigned((n + 255) / 256);
    if (strcmp(mode, "explicit") == 0) {
        float *a = static_cast<float *>(malloc(bytes)), *b = static_cast<float *>(malloc(bytes));
        float *out = static_cast<float *>(malloc(bytes));
        for (size_t i = 0; i < n; ++i) a[i] = a_of(i), b[i] = b_of(i);
        float *da, *db, *dout;
        CK(cudaMalloc(&da, bytes));
        CK(cudaMalloc(&db, bytes));
        CK(cudaMalloc(&dout, bytes));
        CK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
        cudaPointerAttributes attr;
        CK(cudaPointerGetAttributes(&attr, da + 5));
        if (attr.type != cudaMemoryTypeDevice) printf("explicit: cudaMalloc'd memory is of type %d\n", attr.type), exit(1);
        triad<<<blocks, 256>>>(dout, da, db, 3.0f, n);
        CK(cudaGetLastError());
        CK(cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost));
        expect(out, n, triad_of, "explicit");
        cudaFree(da), cudaFree(db), cudaFree(dout);
        free(a), free(b), free(out);
    } else if (strcmp(mode, "managed") == 0) {
        float *a, *b, *out;
        CK(cudaMallocManaged(&a, bytes));
        CK(cudaMallocManaged(&b, bytes));
        CK(cudaMallocManaged(&out, bytes));
        for (size_t i = 0; i < n; ++i) a[i] = a_of(i), b[i] = b_of(i);
        // Libraries (MPI, NCCL) ask what memory they were given.
        cudaPointerAttributes attr;
        CK(cudaPointerGetAttributes(&attr, a + 5));
        if (attr.type != cudaMemoryTypeManaged || attr.devicePointer != a + 5)
            printf("managed: attributes say type %d, device pointer %p for %p\n", attr.type, attr.devicePointer,
                   (void *)(a + 5)),
                exit(1);
        for (int round = 0; round < 3; ++round) {
            triad<<<blocks, 256>>>(out, a, b, 3.0f, n);
            CK(cudaDeviceSynchronize());
            expect(out, n, triad_of, "managed");
            a[round] += 1.0f;  // the CPU writes between kernels
            a[round] -= 1.0f;
        }
        // The program's own copies and fills on managed memory.
        float *dev, *copy;
        CK(cudaMalloc(&dev, bytes));
        CK(cudaMallocManaged(&copy, bytes));
        CK(cudaMemcpy(dev, out, bytes, cudaMemcpyDefault));
        CK(cudaMemset(copy, 0, bytes));
        CK(cudaDeviceSynchronize());
        for (size_t i = 0; i < n; i += 4099)
            if (copy[i] != 0.0f) printf("managed: cudaMemset left %g at %zu\n", copy[i], i), exit(1);
        CK(cudaMemcpy(copy, dev, bytes, cudaMemcpyDefault));
        expect(copy, n, triad_of, "managed copy");
        cudaFree(dev), cudaFree(copy), cudaFree(a), cudaFree(b), cudaFree(out);
    } else if (strcmp(mode, "pitched") == 0) {
        pitched();
    } else if (strcmp(mode, "apis") == 0) {
        apis(n, blocks);
    } else {
        printf("usage: %s explicit|managed|pitched|apis\n", argv[0]);
        return 2;
    }
    printf("cuda program %s: ok\n", mode);
    return 0;
}
