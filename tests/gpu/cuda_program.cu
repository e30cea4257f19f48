// An ordinary CUDA runtime program, written as people write them and
// knowing nothing of adsm.  scripts/gpu-check runs it on a GPU plain and
// under `adsm-run --device cuda`, linked with the shared and with the
// static CUDA runtime, and it checks its own results each time.
//   explicit: malloc'd buffers, cudaMalloc, cudaMemcpy both ways
//   managed:  cudaMallocManaged touched by CPU and GPU in turn, with
//             cudaMemcpy and cudaMemset on managed memory
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

static float a_of(size_t i) { return float(i % 977); }
static float b_of(size_t i) { return float(i % 13); }
static float triad_of(size_t i) { return a_of(i) + 3.0f * b_of(i); }

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
    } else {
        printf("usage: %s explicit|managed\n", argv[0]);
        return 2;
    }
    printf("cuda program %s: ok\n", mode);
    return 0;
}
