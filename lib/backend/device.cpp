#include "backend/device.h"

namespace adsm {

Status Device::reserve_window(uintptr_t, uint64_t, uintptr_t *out) {
    *out = 0;
    return adsmSuccess;
}

Status Device::load_module(const void *, size_t, void **) {
    return fail(adsmErrorNotSupported,
                "the %s device runs kernels registered as host functions (adsmRegisterKernel); GPU modules need "
                "ADSM_DEVICE=cuda",
                name());
}

Status Device::module_function(void *, const char *, void **, std::vector<uint32_t> *) {
    return fail(adsmErrorNotSupported, "the %s device has no modules", name());
}

Status Device::function_params(void *, const char *, std::vector<uint32_t> *) {
    return fail(adsmErrorNotSupported, "the %s device does not run the driver's own kernels", name());
}

Status Device::follow(StreamId, void *) {
    return fail(adsmErrorNotSupported, "the %s device runs no work queued on the program's own streams", name());
}

Status Device::check_kernel(const KernelInfo &k) const {
    if (k.fn) return adsmSuccess;
    return fail(adsmErrorNotSupported,
                "kernel '%s' is GPU code from a module; the %s device runs host functions registered with "
                "adsmRegisterKernel",
                k.name.c_str(), name());
}

Status Device::map_host_memory(uintptr_t, uint64_t) {
    if (integrated()) return adsmSuccess;  // its memory is the host's
    return fail(adsmErrorNotSupported,
                "the %s device cannot let kernels reach host memory at shared addresses (host-resident memory needs "
                "ADSM_DEVICE=sim or an integrated device)",
                name());
}

Status Device::map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) {
    if (integrated() && holder.integrated()) return adsmSuccess;  // one memory
    // An integrated device's memory is the host's own.
    if (holder.integrated()) return map_host_memory(dev, bytes);
    return fail(adsmErrorNotSupported,
                "kernels on the %s device cannot reach the %s device's memory (an object kept on a preferred device "
                "needs devices that reach each other's memory: simulated ones, ADSM_DEVICE=sim,sim, or GPUs of one "
                "driver with a peer link; ADSM_PLACE_HOST puts it where every device's kernels reach it)",
                name(), holder.name());
}

Status Device::hand_over(Device &to, uintptr_t, uint64_t) {
    return fail(adsmErrorNotSupported, "the %s device cannot hand its memory over to the %s device", name(), to.name());
}

Status Device::copy_to_peer(Device &to, uintptr_t, size_t) {
    return fail(adsmErrorNotSupported, "the %s device cannot copy to the %s device directly", name(), to.name());
}

// Devices without a copy engine copy on the spot.
uint64_t Device::copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    Status s = copy_to_device(dev, src, n);
    if (s != adsmSuccess) note_copy_failure(s);
    if (done) done(arg, s);
    return 0;
}

uint64_t Device::copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    Status s = copy_to_host(dst, dev, n);
    if (s != adsmSuccess) note_copy_failure(s);
    if (done) done(arg, s);
    return 0;
}

void Device::note_copy_failure(Status s) {
    int none = adsmSuccess;
    copy_failure_.compare_exchange_strong(none, s, std::memory_order_acq_rel);
}

Status Device::take_copy_failure() {
    int s = copy_failure_.exchange(adsmSuccess, std::memory_order_acq_rel);
    if (s == adsmSuccess) return adsmSuccess;
    return fail(static_cast<Status>(s), "an asynchronous copy failed earlier");
}

Status Device::injected_failure(os::injection::Site site, const char *what) const {
    if (!os::injection::should_fail(site)) return adsmSuccess;
    return fail(site == os::injection::Site::device_commit ? adsmErrorMemoryAllocation : adsmErrorDeviceLost,
                "%s device: %s failed (injected)", name(), what);
}

}  // namespace adsm
