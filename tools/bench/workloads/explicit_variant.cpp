// The hand-written baseline on adsm's own devices (sim, cpu): malloc'd host
// buffers, device memory from adsmDeviceAlloc, and explicit copies.
#include <cstdlib>
#include <new>
#include <unordered_map>

#include "variant.h"

namespace wl {
namespace {

class ExplicitGpu final : public Gpu {
public:
    explicit ExplicitGpu(const Options &) { adsm::sync(); }
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
        auto it = handles_.find(&k);
        if (it == handles_.end()) it = handles_.emplace(&k, host_kernel(k)).first;
        adsm::check(adsmCall(it->second, grid, block, args));
    }
    void sync() override { adsm::sync(); }

private:
    std::unordered_map<const KernelDesc *, adsmKernel_t> handles_;
};

RegisterVariant reg("explicit", "host buffers, device buffers and explicit copies, written by hand",
                    [](const Options &o) -> std::unique_ptr<Gpu> { return std::make_unique<ExplicitGpu>(o); });

}  // namespace
}  // namespace wl
