// The hand-written baseline on adsm's devices (sim, cpu, remote; a remote
// GPU too, its kernels from the module): malloc'd host buffers, device
// memory from adsmDeviceAlloc, and explicit copies.
#include <cstdlib>
#include <new>

#include "device_kernels.h"

namespace wl {
namespace {

class ExplicitGpu final : public Gpu {
public:
    explicit ExplicitGpu(const Options &o) : kernels_(o) {}
    bool unified() const override { return false; }
    void *alloc_host(size_t bytes) override {
        void *p = malloc(bytes);
        if (!p) throw std::bad_alloc();
        return p;
    }
    void free_host(void *p) override { free(p); }
    void *alloc_device(size_t bytes) override {
        void *p = nullptr;
        adsm::check(adsmDeviceAlloc(&p, bytes));
        return p;
    }
    void free_device(void *p) override { adsm::check(adsmDeviceFree(p)); }
    void to_device(void *dev, const void *host, size_t bytes) override {
        adsm::check(adsmCopyToDevice(dev, host, bytes));
    }
    void to_host(void *host, const void *dev, size_t bytes) override { adsm::check(adsmCopyToHost(host, dev, bytes)); }
    void zero(void *p, size_t bytes) override { adsm::check(adsmDeviceMemset(p, 0, bytes)); }
    void launch(const KernelDesc &k, adsm::dim3 grid, adsm::dim3 block, void **args) override {
        adsm::check(adsmCall(kernels_.handle(k), grid, block, args));
    }
    void sync() override { adsm::sync(); }

private:
    DeviceKernels kernels_;
};

RegisterVariant reg("explicit", "host buffers, device buffers and explicit copies, written by hand",
                    [](const Options &o) -> std::unique_ptr<Gpu> { return std::make_unique<ExplicitGpu>(o); });

}  // namespace
}  // namespace wl
