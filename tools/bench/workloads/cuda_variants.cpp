// What CUDA programmers write today, on the same GPU and with the same
// kernels as the adsm variant: explicit copies from pinned buffers
// (cuMemAllocHost) or from pageable ones (malloc), and managed memory
// (cuMemAllocManaged, no prefetch or advice), all on one stream.
#include <cuda.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "variant.h"

namespace wl {
namespace {

void check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    const char *name = "?";
    cuGetErrorName(r, &name);
    throw std::runtime_error(std::string(what) + ": " + name);
}

CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

enum class Memory { pinned, pageable, managed };

class CudaGpu final : public Gpu {
public:
    CudaGpu(const Options &o, Memory m) : memory_(m) {
        if (o.module_image.empty()) throw std::runtime_error("the CUDA variants need the kernels' module (--module)");
        check(cuInit(0), "cuInit");
        CUdevice dev;
        check(cuDeviceGet(&dev, 0), "cuDeviceGet");
        check(cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
        check(cuModuleLoadDataEx(&module_, o.module_image.data(), 0, nullptr, nullptr), "cuModuleLoadDataEx");
        check(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        // The driver's lazy start-up of each kind of memory, outside the timed part.
        CUdeviceptr d;
        check(cuMemAlloc(&d, 1 << 20), "cuMemAlloc");
        check(cuMemFree(d), "cuMemFree");
        void *h = alloc_host(1 << 20);
        free_host(h);
    }
    bool unified() const override { return memory_ == Memory::managed; }
    void *alloc_host(size_t bytes) override {
        void *p = nullptr;
        switch (memory_) {
        case Memory::pinned:
            check(cuMemAllocHost(&p, bytes), "cuMemAllocHost");
            break;
        case Memory::pageable:
            if (!(p = malloc(bytes))) throw std::bad_alloc();
            break;
        case Memory::managed: {
            CUdeviceptr d;
            check(cuMemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
            p = reinterpret_cast<void *>(d);
            break;
        }
        }
        return p;
    }
    void free_host(void *p) override {
        switch (memory_) {
        case Memory::pinned: check(cuMemFreeHost(p), "cuMemFreeHost"); break;
        case Memory::pageable: free(p); break;
        case Memory::managed: check(cuMemFree(dptr(p)), "cuMemFree"); break;
        }
    }
    void *alloc_device(size_t bytes) override {
        CUdeviceptr d;
        check(cuMemAlloc(&d, bytes), "cuMemAlloc");
        return reinterpret_cast<void *>(d);
    }
    void free_device(void *p) override { check(cuMemFree(dptr(p)), "cuMemFree"); }
    void to_device(void *dev, const void *host, size_t bytes) override {
        check(cuMemcpyHtoDAsync(dptr(dev), host, bytes, stream_), "cuMemcpyHtoDAsync");
    }
    void to_host(void *host, const void *dev, size_t bytes) override {
        check(cuMemcpyDtoHAsync(host, dptr(dev), bytes, stream_), "cuMemcpyDtoHAsync");
        check(cuStreamSynchronize(stream_), "cuStreamSynchronize");
    }
    void zero(void *p, size_t bytes) override { check(cuMemsetD8Async(dptr(p), 0, bytes, stream_), "cuMemsetD8Async"); }
    void launch(const KernelDesc &k, adsm::dim3 grid, adsm::dim3 block, void **args) override {
        auto it = functions_.find(&k);
        if (it == functions_.end()) {
            CUfunction f;
            check(cuModuleGetFunction(&f, module_, k.name), k.name);
            it = functions_.emplace(&k, f).first;
        }
        check(cuLaunchKernel(it->second, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, stream_, args, nullptr),
              k.name);
    }
    void sync() override { check(cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

private:
    Memory memory_;
    CUcontext ctx_ = nullptr;
    CUmodule module_ = nullptr;
    CUstream stream_ = nullptr;
    std::unordered_map<const KernelDesc *, CUfunction> functions_;
};

template <Memory M>
std::unique_ptr<Gpu> make(const Options &o) {
    return std::make_unique<CudaGpu>(o, M);
}

RegisterVariant pinned("pinned", "explicit copies from pinned host buffers (cuMemAllocHost)", make<Memory::pinned>);
RegisterVariant pageable("pageable", "explicit copies from pageable host buffers (malloc)", make<Memory::pageable>);
RegisterVariant managed("managed", "managed memory (cuMemAllocManaged), no prefetch or advice", make<Memory::managed>);

}  // namespace
}  // namespace wl
