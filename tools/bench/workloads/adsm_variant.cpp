// The adsm variant: one pointer, shared memory the coherence protocol moves.
#include <stdexcept>
#include <string>

#include "device_kernels.h"

namespace wl {
namespace {

class AdsmGpu final : public Gpu {
public:
    explicit AdsmGpu(const Options &o) : kernels_(o) {}
    bool unified() const override { return true; }
    void *alloc_host(size_t bytes) override {
        void *p = adsmAlloc(bytes);
        if (!p) throw std::runtime_error("adsmAlloc failed: " + std::string(adsmGetLastErrorDetail()));
        return p;
    }
    void free_host(void *p) override { adsm::check(adsmFree(p)); }
    void *alloc_device(size_t) override { throw std::logic_error("adsm has no separate device buffers"); }
    void free_device(void *) override {}
    void to_device(void *, const void *, size_t) override { throw std::logic_error("adsm copies nothing by hand"); }
    void to_host(void *, const void *, size_t) override { throw std::logic_error("adsm copies nothing by hand"); }
    void zero(void *p, size_t bytes) override { adsm::check(adsmMemset(p, 0, bytes)); }
    void launch(const KernelDesc &k, adsm::dim3 grid, adsm::dim3 block, void **args) override {
        adsm::check(adsmCall(kernels_.handle(k), grid, block, args));
    }
    void sync() override { adsm::sync(); }

private:
    DeviceKernels kernels_;
};

RegisterVariant reg("adsm", "shared memory at one address; the protocol (ADSM_PROTOCOL) moves the data",
                    [](const Options &o) -> std::unique_ptr<Gpu> { return std::make_unique<AdsmGpu>(o); });

}  // namespace
}  // namespace wl
