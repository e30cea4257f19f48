// The adsm variant: one pointer, shared memory the coherence protocol moves.
// Kernels are host functions on sim and cpu, and the module's GPU code of
// the same name on cuda (its parameter sizes checked against the driver's).
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "variant.h"

namespace wl {
namespace {

class AdsmGpu final : public Gpu {
public:
    explicit AdsmGpu(const Options &o) {
        adsm::sync();  // starts the runtime and its device
        adsmDeviceInfo info{};
        adsm::check(adsmGetDeviceInfo(&info));
        gpu_code_ = !strcmp(info.name, "cuda");
        if (gpu_code_) {
            if (o.module_image.empty()) throw std::runtime_error("the cuda device needs the kernels' module (--module)");
            adsm::check(adsmLoadModuleData(o.module_image.data(), o.module_image.size(), &module_));
        }
    }
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
        adsm::check(adsmCall(handle(k), grid, block, args));
    }
    void sync() override { adsm::sync(); }

private:
    adsmKernel_t handle(const KernelDesc &k) {
        auto it = handles_.find(&k);
        if (it != handles_.end()) return it->second;
        adsmKernel_t h = nullptr;
        if (!gpu_code_) {
            h = host_kernel(k);
        } else {
            // The host function's parameters, checked against the module's
            // where the driver reports them.
            adsm::check(adsmModuleGetKernelWithParams(module_, k.name, k.arity, k.sizes, &h));
        }
        return handles_[&k] = h;
    }
    bool gpu_code_ = false;
    adsmModule_t module_ = nullptr;
    std::unordered_map<const KernelDesc *, adsmKernel_t> handles_;
};

RegisterVariant reg("adsm", "shared memory at one address; the protocol (ADSM_PROTOCOL) moves the data",
                    [](const Options &o) -> std::unique_ptr<Gpu> { return std::make_unique<AdsmGpu>(o); });

}  // namespace
}  // namespace wl
