#include "backend/levelzero/levelzero_device.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "backend/levelzero/spirv_params.h"
#include "support/log.h"
#include "support/stats.h"

namespace adsm::levelzero {
namespace {

// GPU `ordinal` of the first driver that has GPUs (the GPUs of a process
// share one context, which is one driver's).  A driver whose devices
// cannot be listed is passed over, said in the log and in the error if no
// GPU is found; a device that cannot be described fails the search (passed
// over, it would shift the ordinals after it onto other GPUs).
Status find_gpu(const Driver *d, int ordinal, ze_driver_handle_t *driver, ze_device_handle_t *dev) {
    uint32_t ndrivers = 0;
    if (ze_result_t r = d->zeDriverGet(&ndrivers, nullptr); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDriverGet");
    std::vector<ze_driver_handle_t> drivers(ndrivers);
    if (ndrivers)
        if (ze_result_t r = d->zeDriverGet(&ndrivers, drivers.data()); r != ZE_RESULT_SUCCESS)
            return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDriverGet");
    const char *failed_call = nullptr;
    ze_result_t failure = ZE_RESULT_SUCCESS;
    auto passed_over = [&](const char *call, ze_result_t r) {
        if (r == ZE_RESULT_SUCCESS) return false;
        ADSM_LOG(warn, "levelzero: passing over a driver: %s failed: %s", call, Driver::describe(r));
        failed_call = call;
        failure = r;
        return true;
    };
    // "N GPUs (why)": a driver passed over says why, else `hint`.
    char text[192];
    auto why = [&](int gpus, const char *hint) {
        int n = snprintf(text, sizeof text, "%d GPU%s", gpus, gpus == 1 ? "" : "s");
        if (n < 0 || static_cast<size_t>(n) >= sizeof text) return;
        if (failed_call)
            snprintf(text + n, sizeof text - n, " (%u drivers; %s failed: %s (0x%x))", ndrivers, failed_call,
                     Driver::describe(failure), static_cast<unsigned>(failure));
        else if (*hint)
            snprintf(text + n, sizeof text - n, " (%s)", hint);
        else
            snprintf(text + n, sizeof text - n, " (%u drivers)", ndrivers);
    };
    for (uint32_t i = 0; i < ndrivers; ++i) {
        uint32_t ndev = 0;
        if (passed_over("zeDeviceGet", d->zeDeviceGet(drivers[i], &ndev, nullptr)) || ndev == 0) continue;
        std::vector<ze_device_handle_t> devs(ndev);
        if (passed_over("zeDeviceGet", d->zeDeviceGet(drivers[i], &ndev, devs.data()))) continue;
        int gpus = 0;
        for (uint32_t j = 0; j < ndev; ++j) {
            ze_device_properties_t p = {};
            p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
            if (ze_result_t r = d->zeDeviceGetProperties(devs[j], &p); r != ZE_RESULT_SUCCESS)
                return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetProperties");
            if (p.type != ZE_DEVICE_TYPE_GPU) continue;
            if (gpus++ == ordinal) {
                *driver = drivers[i];
                *dev = devs[j];
                return adsmSuccess;
            }
        }
        if (gpus) {
            // (Another driver's GPUs are not this one's: one context each.)
            why(gpus, "ZE_AFFINITY_MASK?");
            return fail(adsmErrorNoDevice, "ADSM_DEVICE lists %d levelzero devices, but the driver sees %s", ordinal + 1,
                        text);
        }
    }
    why(0, "");
    return fail(adsmErrorNoDevice, "ADSM_DEVICE=levelzero: the Level Zero loader sees %s", text);
}

}  // namespace

// In the fault handler, the call goes to a helper thread (gpu/handler_calls.h).
#define ADSM_OFF_HANDLER(...) ADSM_OFF_FAULT_HANDLER(handler_calls_, __VA_ARGS__)

Status LevelZeroDevice::open(const Config &config, int ordinal, std::unique_ptr<Device> *out) {
    const Driver *d = nullptr;
    if (Status s = load_driver(&d); s != adsmSuccess) return s;
    std::unique_ptr<LevelZeroDevice> dev(new LevelZeroDevice);
    dev->d_ = d;
    dev->set_ = Set::get();
    if (Status s = find_gpu(d, ordinal, &dev->driver_, &dev->dev_); s != adsmSuccess) return s;
    ze_device_properties_t props = {};
    props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    if (ze_result_t r = d->zeDeviceGetProperties(dev->dev_, &props); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetProperties");
    snprintf(dev->gpu_name_, sizeof dev->gpu_name_, "%s", props.name);
    if (props.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED)
        ADSM_LOG(info, "levelzero: %s is integrated; the runtime treats it as a discrete device (copies)", props.name);
    {
        // One context for the set: the window's reservation is the context's.
        std::lock_guard<std::mutex> lock(dev->set_->attach_mu);
        if (!dev->set_->shared_context) {
            ze_context_desc_t cd = {};
            cd.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
            ze_context_handle_t ctx = nullptr;
            if (ze_result_t r = d->zeContextCreate(dev->driver_, &cd, &ctx); r != ZE_RESULT_SUCCESS)
                return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeContextCreate");
            dev->set_->shared_context = ctx;
        }
        dev->ctx_ = static_cast<ze_context_handle_t>(dev->set_->shared_context);
    }

    uint32_t nmem = 0;
    if (ze_result_t r = d->zeDeviceGetMemoryProperties(dev->dev_, &nmem, nullptr); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetMemoryProperties");
    std::vector<ze_device_memory_properties_t> mem(nmem);
    for (auto &m : mem) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    if (nmem)
        if (ze_result_t r = d->zeDeviceGetMemoryProperties(dev->dev_, &nmem, mem.data()); r != ZE_RESULT_SUCCESS)
            return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetMemoryProperties");
    for (uint32_t i = 0; i < nmem; ++i) dev->capacity_ = std::max<uint64_t>(dev->capacity_, mem[i].totalSize);
    if (dev->capacity_ == 0) return fail(adsmErrorNoDevice, "ADSM_DEVICE=levelzero: %s reports no device memory", props.name);

    // Kernels on a compute group; copies on a copy engine when there is one.
    uint32_t ngroups = 0;
    if (ze_result_t r = d->zeDeviceGetCommandQueueGroupProperties(dev->dev_, &ngroups, nullptr); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetCommandQueueGroupProperties");
    std::vector<ze_command_queue_group_properties_t> groups(ngroups);
    for (auto &g : groups) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    if (ngroups)
        if (ze_result_t r = d->zeDeviceGetCommandQueueGroupProperties(dev->dev_, &ngroups, groups.data());
            r != ZE_RESULT_SUCCESS)
            return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: zeDeviceGetCommandQueueGroupProperties");
    bool compute = false, copy = false;
    for (uint32_t i = 0; i < ngroups; ++i) {
        bool computes = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
        bool copies = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        if (computes && !compute) {
            dev->compute_ordinal_ = i;
            compute = true;
        }
        if (copies && !computes && !copy) {
            dev->copy_ordinal_ = i;
            copy = true;
        }
    }
    if (!compute) return fail(adsmErrorNoDevice, "ADSM_DEVICE=levelzero: %s has no compute queue group", props.name);
    if (!copy) dev->copy_ordinal_ = dev->compute_ordinal_;

    size_t page = 0;
    if (ze_result_t r = d->zeVirtualMemQueryPageSize(dev->ctx_, dev->dev_, 2u << 20, &page); r != ZE_RESULT_SUCCESS || !page)
        return ze_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=levelzero: the device has no virtual-memory management");
    dev->window_.granularity = page;
    dev->memory().set_pinning(gpu::Pinning::off);
    // Two: one busy with a long copy leaves the other to other faulting threads.
    if (config.gpu_fault_calls == "helpers")
        if (Status s = dev->handler_calls_.start(2); s != adsmSuccess) return s;
    ADSM_LOG(info, "levelzero: %s, %llu bytes, page size %zu, copies on queue group %u%s", props.name,
             static_cast<unsigned long long>(dev->capacity_), page, dev->copy_ordinal_,
             copy ? " (a copy engine)" : " (no copy engine: the compute group)");
    dev->index_ = dev->set_->join(dev.get());
    *out = std::move(dev);
    return adsmSuccess;
}

LevelZeroDevice::~LevelZeroDevice() {
    handler_calls_.stop();
    // A fork child's driver is not its own, and a lost device's objects
    // may still be in use by work that never ends: both keep everything.
    if (loss_.usable() != adsmSuccess) {
        if (set_ && !loss_.in_fork_child()) memory().abandon(&granule_driver_);
        return;
    }
    for (uint32_t i = 0; i < kMaxStreams; ++i)
        if (streams_[i].list.load(std::memory_order_relaxed)) destroy_stream(i);
    async_.close();
    copies_.close();
    memory().release(&granule_driver_);
    // The set's context, and the window's reservation in it, go with the
    // last device.
    if (!set_->leave(this) || !ctx_) return;
    if (set_->reserved)
        if (ze_result_t r = d_->zeVirtualMemFree(ctx_, reinterpret_cast<void *>(set_->reserved), set_->reserved_size);
            r != ZE_RESULT_SUCCESS)
            ADSM_LOG(error, "levelzero: cannot give back the window's device addresses: %s", Driver::describe(r));
    set_->reserved = 0;
    if (ze_result_t r = d_->zeContextDestroy(ctx_); r != ZE_RESULT_SUCCESS)
        ADSM_LOG(error, "levelzero: cannot destroy the context: %s", Driver::describe(r));
    set_->shared_context = nullptr;
}

Status LevelZeroDevice::driver_error(ze_result_t r, const char *what, Status usual) {
    return ze_driver_error(&loss_, r, what, usual);
}

// ---------------------------------------------------------------- memory

Status LevelZeroDevice::reserve_window(uintptr_t preferred, uint64_t size, uintptr_t *out) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    uint64_t g = window_.granularity;
    if (size % g)
        return fail(adsmErrorInitialization,
                    "levelzero: the window size (%llu bytes, ADSM_VA_SIZE) must be a multiple of %llu",
                    static_cast<unsigned long long>(size), static_cast<unsigned long long>(g));
    void *p = nullptr;
    if (ze_result_t r = d_->zeVirtualMemReserve(ctx_, reinterpret_cast<void *>(preferred), size, &p);
        r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorInitialization, r, "levelzero: cannot reserve device addresses for the shared window");
    *out = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(set_->attach_mu);
    set_->reserved = *out;
    set_->reserved_size = size;
    return adsmSuccess;
}

Status LevelZeroDevice::attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    window_.base = base;
    window_.size = size;
    window_.alias = host_alias;
    granule_driver_.init(d_, ctx_, dev_, [this] { return streams_may_run(); });
    auto pins = std::make_unique<GranuleDriver>();  // (pins nothing: copies are staged)
    pins->init(d_, ctx_, dev_);
    if (Status s = set_->share_window(window_, host_fd, std::move(pins), name(), gpu_name_); s != adsmSuccess) return s;
    if (Status s = memory().warm_up(&granule_driver_); s != adsmSuccess) return s;
    if (Status s = copies_.init(d_, ctx_, dev_, copy_ordinal_, &window_, &loss_); s != adsmSuccess) return s;
    return async_.init(d_, ctx_, dev_, copy_ordinal_, &window_, &loss_);
}

Status LevelZeroDevice::commit(uintptr_t dev, uint64_t bytes) {
    ADSM_OFF_HANDLER(commit(dev, bytes));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_commit, "commit"); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, bytes); s != adsmSuccess) return s;
    if (Status s = memory().room_for(memory().unbacked(dev, bytes), capacity_, &granule_driver_, name(), gpu_name_,
                                     "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY");
        s != adsmSuccess)
        return s;
    return memory().commit(dev, bytes, &granule_driver_);
}

void LevelZeroDevice::decommit(uintptr_t dev, uint64_t bytes) {
    ADSM_OFF_HANDLER(decommit(dev, bytes));
    // A lost or forked device keeps its memory: the driver cannot be asked.
    if (loss_.usable() == adsmSuccess) memory().decommit(dev, bytes, &granule_driver_);
}

// ---------------------------------------------------------------- several GPUs

const LevelZeroDevice *LevelZeroDevice::peer(const Device &other) const {
    auto *z = dynamic_cast<const LevelZeroDevice *>(&other);
    return z && z != this && z->set_ == set_ ? z : nullptr;
}

bool LevelZeroDevice::reaches(const LevelZeroDevice &other) const {
    ze_bool_t can = 0;
    return d_->zeDeviceCanAccessPeer(dev_, other.dev_, &can) == ZE_RESULT_SUCCESS && can;
}

Status LevelZeroDevice::hand_over(Device &to, uintptr_t dev, uint64_t bytes) {
    auto *target = const_cast<LevelZeroDevice *>(peer(to));
    if (!target) return Device::hand_over(to, dev, bytes);
    ADSM_OFF_HANDLER(hand_over(to, dev, bytes));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (Status s = target->loss_.usable(); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, bytes); s != adsmSuccess) return s;
    // What the protocol sent last lands first.
    if (Status s = wait_copies(kAllCopies); s != adsmSuccess) return s;
    if (Status s = memory().room_for(bytes, target->capacity_, &target->granule_driver_, name(), target->gpu_name_,
                                     "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY");
        s != adsmSuccess)
        return s;
    // This GPU's copy engine writes the other's memory over a peer link;
    // without one the bytes go through the host, a granule at a time.
    const bool direct = reaches(*target);
    auto copy = [&](uintptr_t scratch, uintptr_t from, uint64_t n) -> Status {
        if (direct) return copies_.between(scratch, from, n);
        std::vector<unsigned char> bounce(window_.granularity);
        for (uint64_t off = 0; off < n; off += window_.granularity) {
            if (Status s = copies_.to_host(bounce.data(), from + off, window_.granularity); s != adsmSuccess) return s;
            if (Status s = target->copies_.to_device(scratch + off, bounce.data(), window_.granularity); s != adsmSuccess)
                return s;
        }
        return adsmSuccess;
    };
    return memory().hand_over(dev, bytes, &granule_driver_, &target->granule_driver_, copy);
}

// A context's mapping is reached by its GPU's peers as it is: nothing to
// map, but there must be a peer link.
Status LevelZeroDevice::map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) {
    const LevelZeroDevice *h = peer(holder);
    if (!h) return Device::map_peer_memory(holder, dev, bytes);
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (!reaches(*h))
        return fail(adsmErrorNotSupported, "levelzero: %s cannot reach memory of %s (no peer link between them)",
                    gpu_name_, h->gpu_name_);
    return adsmSuccess;
}

// ---------------------------------------------------------------- copies

Status LevelZeroDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    ADSM_OFF_HANDLER(copy_to_device(dev, src, n));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the device"); s != adsmSuccess) return s;
    if (Status s = copies_.to_device(dev, window_.host_name(src), n); s != adsmSuccess) return s;
    stats().transfer(true, n);
    return adsmSuccess;
}

Status LevelZeroDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) {
    ADSM_OFF_HANDLER(copy_to_host(dst, dev, n));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the host"); s != adsmSuccess) return s;
    if (Status s = copies_.to_host(window_.host_name(dst), dev, n); s != adsmSuccess) return s;
    stats().transfer(false, n);
    return adsmSuccess;
}

Status LevelZeroDevice::fill(uintptr_t dev, int value, size_t n) {
    ADSM_OFF_HANDLER(fill(dev, value, n));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "fill"); s != adsmSuccess) return s;
    if (Status s = copies_.fill(dev, value, n); s != adsmSuccess) return s;
    stats().add(Counter::device_fills);
    return adsmSuccess;
}

uint64_t LevelZeroDevice::copy_async(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    ADSM_OFF_HANDLER(copy_async(to_device, host, dev, n, done, arg));
    if (Status s = loss_.usable(); s != adsmSuccess) {
        if (done) done(arg, s);
        return 0;
    }
    if (Status s = injected_failure(os::injection::Site::device_copy, "asynchronous copy"); s != adsmSuccess) {
        note_copy_failure(s);
        if (done) done(arg, s);
        return 0;
    }
    stats().transfer(to_device, n, true);
    host = window_.host_name(host);
    return to_device ? async_.to_device(dev, host, n, done, arg) : async_.to_host(host, dev, n, done, arg);
}

uint64_t LevelZeroDevice::copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    return copy_async(true, const_cast<void *>(src), dev, n, done, arg);
}

uint64_t LevelZeroDevice::copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    return copy_async(false, dst, dev, n, done, arg);
}

// (A futex wait, no driver call: it stays on a faulting thread, whose
// helper would otherwise wait for a landing that may wait for a lock that
// thread holds.)
Status LevelZeroDevice::wait_copies(uint64_t ticket) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    async_.wait(std::min(ticket, async_.last_ticket()));
    if (Status s = async_.take_failure(); s != adsmSuccess) return s;
    return take_copy_failure();  // one that never reached the engine
}

// ---------------------------------------------------------------- modules

Status LevelZeroDevice::load_module(const void *image, size_t size, void **module) {
    std::vector<LevelZeroDevice *> gpus = set_->members();
    if (gpus.size() == 1) return load_here(image, size, module);
    // For every GPU: a module is built for one device, and a kernel runs
    // wherever its caller's context is.
    Set::PerGpu modules;
    for (LevelZeroDevice *g : gpus) {
        void *m = nullptr;
        if (Status s = g->load_here(image, size, &m); s != adsmSuccess) return s;
        modules.push_back(m);
    }
    *module = set_->add_module(std::move(modules));
    return adsmSuccess;
}

Status LevelZeroDevice::load_here(const void *image, size_t size, void **module) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    uint32_t magic = 0;
    if (size >= 4) memcpy(&magic, image, 4);
    bool spirv = magic == kSpirvMagic;
    ze_module_desc_t md = {};
    md.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    md.format = spirv ? ZE_MODULE_FORMAT_IL_SPIRV : ZE_MODULE_FORMAT_NATIVE;
    // SPIR-V is whole words (a file read for adsmLoadModule ends in one more NUL).
    md.inputSize = spirv ? size & ~size_t{3} : size;
    md.pInputModule = static_cast<const uint8_t *>(image);
    md.pBuildFlags = "";
    ze_module_handle_t m = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = d_->zeModuleCreate(ctx_, dev_, &md, &m, &log);
    std::string text;
    if (log) {
        size_t n = 0;
        if (r != ZE_RESULT_SUCCESS && d_->zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n > 1) {
            text.resize(n);
            if (d_->zeModuleBuildLogGetString(log, &n, text.data()) != ZE_RESULT_SUCCESS) text.clear();
            text.resize(strnlen(text.c_str(), text.size()));
        }
        d_->zeModuleBuildLogDestroy(log);
    }
    if (r != ZE_RESULT_SUCCESS) {
        if (device_is_gone(r)) return driver_error(r, "levelzero: loading a module", adsmErrorInvalidValue);
        return fail(adsmErrorInvalidValue, "levelzero: the driver cannot load this %s module for %s: %s (0x%x)%s%s",
                    spirv ? "SPIR-V" : "native", gpu_name_, Driver::describe(r), static_cast<unsigned>(r),
                    text.empty() ? "" : "; ", text.c_str());
    }
    if (spirv) {
        std::lock_guard<std::mutex> lock(modules_mu_);
        const auto *bytes = static_cast<const uint8_t *>(image);
        spirv_[m].assign(bytes, bytes + md.inputSize);
    }
    *module = m;
    return adsmSuccess;
}

Status LevelZeroDevice::module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) {
    const Set::PerGpu *modules = set_->module(module);
    if (!modules) return kernel_here(module, name, fn, param_sizes);
    std::vector<LevelZeroDevice *> gpus = set_->members();
    Set::PerGpu kernels;
    for (size_t i = 0; i < gpus.size() && i < modules->size(); ++i) {
        void *k = nullptr;
        std::vector<uint32_t> sizes;
        if (Status s = gpus[i]->kernel_here((*modules)[i], name, &k, &sizes); s != adsmSuccess) return s;
        if (i == 0) *param_sizes = std::move(sizes);
        kernels.push_back(k);
    }
    *fn = set_->add_function(std::move(kernels));
    return adsmSuccess;
}

Status LevelZeroDevice::kernel_here(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    std::lock_guard<std::mutex> lock(modules_mu_);
    ze_kernel_handle_t &k = kernels_[{module, name}];
    if (!k) {
        ze_kernel_desc_t kd = {};
        kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
        kd.pKernelName = name;
        if (ze_result_t r = d_->zeKernelCreate(static_cast<ze_module_handle_t>(module), &kd, &k); r != ZE_RESULT_SUCCESS) {
            kernels_.erase({module, name});
            if (r == ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
                return fail(adsmErrorKernelNotFound, "the module has no kernel '%s'", name);
            return ze_fail(adsmErrorInvalidValue, r, "levelzero: zeKernelCreate");
        }
    }
    ze_kernel_properties_t kp = {};
    kp.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
    if (ze_result_t r = d_->zeKernelGetProperties(k, &kp); r != ZE_RESULT_SUCCESS)
        return ze_fail(adsmErrorInvalidValue, r, "levelzero: zeKernelGetProperties");
    if (kp.numKernelArgs > kMaxKernelParams)
        return fail(adsmErrorNotSupported, "kernel '%s' has more than %u parameters", name, kMaxKernelParams);
    // The driver tells how many parameters, not their sizes: a SPIR-V
    // module says those; any other module's kernels have them stated.
    param_sizes->assign(kp.numKernelArgs, kUnknownParamSize);
    std::vector<uint32_t> read;
    if (auto it = spirv_.find(module); it != spirv_.end() &&
        spirv_kernel_params(it->second.data(), it->second.size(), name, &read) && read.size() == kp.numKernelArgs)
        *param_sizes = read;
    *fn = k;
    return adsmSuccess;
}

// A routed program's own kernel: its parameters are sized by the program
// (the sizes it set them with), which only the caller knows.
Status LevelZeroDevice::function_params(void *, const char *name, std::vector<uint32_t> *) {
    return fail(adsmErrorNotSupported,
                "kernel '%s': Level Zero does not report its parameters' sizes; the launch must give them", name);
}

Status LevelZeroDevice::check_kernel(const KernelInfo &k) const {
    if (k.device_fn) return adsmSuccess;
    return fail(adsmErrorNotSupported,
                "kernel '%s' is a host function (adsmRegisterKernel); the levelzero device runs GPU code: compile the "
                "kernel to SPIR-V and load it with adsmLoadModule",
                k.name.c_str());
}

// ---------------------------------------------------------------- kernels

Status LevelZeroDevice::create_stream(StreamId *out) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    for (uint32_t i = 0; i < kMaxStreams; ++i) {
        bool free_slot = false;
        if (!streams_[i].busy.compare_exchange_strong(free_slot, true)) continue;
        Stream &st = streams_[i];
        ze_command_list_handle_t list = nullptr;
        ze_result_t r = make_immediate_list(d_, ctx_, dev_, compute_ordinal_, &list);
        if (r == ZE_RESULT_SUCCESS) r = make_host_events(d_, ctx_, dev_, 1, &st.pool, &st.done);
        if (r != ZE_RESULT_SUCCESS) {
            if (list) d_->zeCommandListDestroy(list);
            st.pool = nullptr;
            st.done = nullptr;
            st.busy.store(false);
            return driver_error(r, "levelzero: creating a context's command list", adsmErrorNoDevice);
        }
        st.last.store(nullptr);
        st.synced.store(st.launched.load());
        stream_slots_.reach(i);
        st.list.store(list, std::memory_order_release);
        *out = i;
        return adsmSuccess;
    }
    return fail(adsmErrorMemoryAllocation, "levelzero: more than %u contexts have command lists", kMaxStreams);
}

void LevelZeroDevice::destroy_stream(StreamId id) {
    if (id >= kMaxStreams) return;
    Stream &st = streams_[id];
    ze_command_list_handle_t list = st.list.exchange(nullptr);
    if (!list) return;
    // (A lost device runs nothing more: its objects go without a wait.)
    if (!loss_.in_fork_child()) {
        const bool usable = loss_.usable() == adsmSuccess;
        // Whatever the context left running ends before its list goes.
        if (usable && d_->zeCommandListAppendBarrier(list, st.done, 0, nullptr) == ZE_RESULT_SUCCESS)
            d_->zeEventHostSynchronize(st.done, UINT64_MAX);
        d_->zeEventDestroy(st.done);
        d_->zeEventPoolDestroy(st.pool);
        d_->zeCommandListDestroy(list);
        std::lock_guard<std::mutex> lock(st.joins_mu);
        if (usable) wait_joins(st);
        st.joins_used = 0;
        for (ze_event_handle_t &e : st.joins)
            if (e) d_->zeEventDestroy(e), e = nullptr;
        if (st.joins_pool) d_->zeEventPoolDestroy(st.joins_pool);
        st.joins_pool = nullptr;
    }
    st.done = nullptr;
    st.pool = nullptr;
    st.busy.store(false);
}

Status LevelZeroDevice::launch(StreamId id, const LaunchDesc &l) {
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    const KernelInfo *k = l.kernel;
    if (Status s = check_kernel(*k); s != adsmSuccess) return s;
    ze_command_list_handle_t list = id < kMaxStreams ? streams_[id].list.load(std::memory_order_acquire) : nullptr;
    if (!list) return fail(adsmErrorInvalidContext, "levelzero: context %u has no command list", id);
    if (l.shared_mem)
        return fail(adsmErrorNotSupported,
                    "kernel '%s': dynamic local memory (%u bytes) is not passed to Level Zero kernels yet; declare it "
                    "in the kernel",
                    k->name.c_str(), l.shared_mem);
    // (A module's kernel on a GPU of several is that GPU's own kernel.)
    auto kernel = static_cast<ze_kernel_handle_t>(index_ == 0 ? k->device_fn : set_->function_on(k->device_fn, index_));
    // A routed program's kernel runs on its own list, in order with its
    // other commands; the context's sync waits for it there.
    ze_command_list_handle_t target = l.has_native_stream ? static_cast<ze_command_list_handle_t>(l.native_stream) : list;
    const unsigned char *blob = static_cast<const unsigned char *>(l.args);
    char what[192];
    snprintf(what, sizeof what, "levelzero: launching kernel '%s'", k->name.c_str());
    std::lock_guard<std::mutex> lock(launch_lock(kernel));
    ze_result_t r = d_->zeKernelSetGroupSize(kernel, l.block.x, l.block.y, l.block.z);
    if (r != ZE_RESULT_SUCCESS) return driver_error(r, what, adsmErrorInvalidLaunch);
    for (size_t i = 0; i < k->param_sizes.size(); ++i) {
        r = d_->zeKernelSetArgumentValue(kernel, static_cast<uint32_t>(i), k->param_sizes[i], blob + k->param_offsets[i]);
        if (r != ZE_RESULT_SUCCESS) return driver_error(r, what, adsmErrorInvalidLaunch);
    }
    // Copies still in flight (a rolling flush) land before the kernel starts.
    if (!async_.all_landed()) async_.wait(async_.last_ticket());
    // A command list orders nothing by itself: the kernel waits for the
    // context's earlier ones, as a stream's would.
    ze_group_count_t groups = {l.grid.x, l.grid.y, l.grid.z};
    r = d_->zeCommandListAppendBarrier(target, nullptr, 0, nullptr);
    if (r == ZE_RESULT_SUCCESS) r = d_->zeCommandListAppendLaunchKernel(target, kernel, &groups, nullptr, 0, nullptr);
    if (r == ZE_RESULT_SUCCESS && target != list) r = join(streams_[id], target);
    if (r != ZE_RESULT_SUCCESS) return driver_error(r, what, adsmErrorLaunchFailure);
    streams_[id].last.store(k);
    streams_[id].launched.fetch_add(1, std::memory_order_release);
    return adsmSuccess;
}

ze_result_t LevelZeroDevice::join(Stream &st, ze_command_list_handle_t program_list) {
    std::lock_guard<std::mutex> lock(st.joins_mu);
    if (!st.joins_pool)
        if (ze_result_t r = make_host_events(d_, ctx_, dev_, kJoins, &st.joins_pool, st.joins); r != ZE_RESULT_SUCCESS)
            return r;
    if (st.joins_used == kJoins)
        if (ze_result_t r = wait_joins(st); r != ZE_RESULT_SUCCESS) return r;
    return d_->zeCommandListAppendBarrier(program_list, st.joins[st.joins_used++], 0, nullptr);
}

ze_result_t LevelZeroDevice::wait_joins(Stream &st) {
    ze_result_t first = ZE_RESULT_SUCCESS;
    for (uint32_t i = 0; i < st.joins_used; ++i) {
        ze_result_t r = d_->zeEventHostSynchronize(st.joins[i], UINT64_MAX);
        d_->zeEventHostReset(st.joins[i]);
        if (first == ZE_RESULT_SUCCESS) first = r;
    }
    st.joins_used = 0;
    return first;
}

ze_result_t LevelZeroDevice::poll_stream(StreamId id, bool *closed) {
    if (loss_.usable() != adsmSuccess) return ZE_RESULT_ERROR_DEVICE_LOST;
    Stream *st = id < kMaxStreams ? &streams_[id] : nullptr;
    ze_command_list_handle_t list = st ? st->list.load(std::memory_order_acquire) : nullptr;
    if (!list) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // (synchronize says why)
    if (!*closed) {
        if (ze_result_t r = d_->zeCommandListAppendBarrier(list, st->done, 0, nullptr); r != ZE_RESULT_SUCCESS) return r;
        *closed = true;
    }
    {
        std::lock_guard<std::mutex> lock(st->joins_mu);
        for (uint32_t i = 0; i < st->joins_used; ++i)
            if (ze_result_t r = d_->zeEventHostSynchronize(st->joins[i], 0); r != ZE_RESULT_SUCCESS) return r;
    }
    if (ze_result_t r = d_->zeEventHostSynchronize(st->done, 0); r != ZE_RESULT_SUCCESS) return r;
    // Reset before synchronize appends its own barrier, which would
    // otherwise find the event signalled by this one's, and leave it
    // signalled for the next synchronisation.
    d_->zeEventHostReset(st->done);
    return ZE_RESULT_SUCCESS;
}

Status LevelZeroDevice::synchronize(StreamId id) {
    // In the fault handler (a racing access waits for the kernels), a
    // helper is asked whether they are done, never made to wait for them:
    // two helpers serve every faulting thread, and one held by a long
    // kernel stalls the others.  Once they are done, the helper's
    // synchronisation below returns at once.
    if (handler_calls_.needed()) {
        bool closed = false;
        ze_result_t r;
        while ((r = handler_calls_.call([&] { return poll_stream(id, &closed); })) == ZE_RESULT_NOT_READY) {
            struct timespec pause = {0, 20 * 1000};
            nanosleep(&pause, nullptr);
        }
        // Failed with its barrier in: no second one (which could find the
        // event signalled by the first, and leave it so for the next sync).
        if (r != ZE_RESULT_SUCCESS && closed) return handler_calls_.call([&] { return sync_failed(id, r); });
    }
    ADSM_OFF_HANDLER(synchronize(id));
    if (Status s = loss_.usable(); s != adsmSuccess) return s;
    Stream *st = id < kMaxStreams ? &streams_[id] : nullptr;
    ze_command_list_handle_t list = st ? st->list.load(std::memory_order_acquire) : nullptr;
    if (!list) return fail(adsmErrorInvalidContext, "levelzero: context %u has no command list", id);
    const uint64_t launched = st->launched.load(std::memory_order_acquire);
    ze_result_t r = d_->zeCommandListAppendBarrier(list, st->done, 0, nullptr);
    if (r == ZE_RESULT_SUCCESS) {
        r = d_->zeEventHostSynchronize(st->done, UINT64_MAX);
        d_->zeEventHostReset(st->done);
    }
    {
        std::lock_guard<std::mutex> lock(st->joins_mu);
        if (ze_result_t j = wait_joins(*st); r == ZE_RESULT_SUCCESS) r = j;
    }
    if (r != ZE_RESULT_SUCCESS) return sync_failed(id, r);
    st->synced.store(launched, std::memory_order_release);
    return async_.take_failure();
}

bool LevelZeroDevice::streams_may_run() const {
    const uint32_t used = std::min(stream_slots_.end(), kMaxStreams);
    for (uint32_t i = 0; i < used; ++i)
        if (streams_[i].list.load(std::memory_order_acquire) &&
            streams_[i].launched.load(std::memory_order_acquire) != streams_[i].synced.load(std::memory_order_acquire))
            return true;
    return false;
}

Status LevelZeroDevice::sync_failed(StreamId id, ze_result_t r) {
    const KernelInfo *k = id < kMaxStreams ? streams_[id].last.load() : nullptr;
    char what[384];
    snprintf(what, sizeof what, "kernel '%s' on %.200s", k ? k->name.c_str() : "?", gpu_name_);
    return driver_error(r, what, adsmErrorLaunchFailure);
}

}  // namespace adsm::levelzero
