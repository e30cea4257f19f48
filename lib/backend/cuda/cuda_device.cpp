#include "backend/cuda/cuda_device.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "support/log.h"
#include "support/stats.h"

namespace adsm::cuda {
// The device's context, current on this thread while the object lives.
// The program may have a context of its own current: it is pushed aside
// and comes back, so the runtime never changes what the program sees.
class CudaDevice::Entered {
public:
    explicit Entered(const CudaDevice *dev) : d_(dev->d_) {
        status_ = dev->usable();
        if (status_ != adsmSuccess) return;
        CUcontext cur = nullptr;
        if (d_->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == dev->ctx_) return;
        if (CUresult r = d_->cuCtxPushCurrent(dev->ctx_); r != CUDA_SUCCESS) {
            status_ = cuda_fail(adsmErrorDeviceLost, r, "cuda: cannot make the device's context current");
            return;
        }
        pushed_ = true;
    }
    ~Entered() {
        CUcontext popped;
        // (A context left on the thread's stack is the program's to see.)
        if (CUresult r = pushed_ ? d_->cuCtxPopCurrent(&popped) : CUDA_SUCCESS; r != CUDA_SUCCESS)
            ADSM_LOG(error, "cuda: cannot pop the device's context off the thread: %s", d_->describe(r));
    }
    Entered(const Entered &) = delete;
    Entered &operator=(const Entered &) = delete;
    Status status() const { return status_; }

private:
    const Driver *d_;
    Status status_ = adsmSuccess;
    bool pushed_ = false;
};

#define ADSM_ENTER()                                       \
    Entered entered_(this);                                \
    if (entered_.status() != adsmSuccess) return entered_.status()

// In the fault handler, the call goes to a helper thread (gpu/handler_calls.h).
#define ADSM_OFF_HANDLER(...) ADSM_OFF_FAULT_HANDLER(handler_calls_, __VA_ARGS__)

Status CudaDevice::open(const Config &config, int ordinal, std::unique_ptr<Device> *out) {
    const Driver *d = nullptr;
    if (Status s = load_driver(&d); s != adsmSuccess) return s;
    int count = 0;
    if (CUresult r = d->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=cuda: cuDeviceGetCount");
    if (count == 0) return fail(adsmErrorNoDevice, "ADSM_DEVICE=cuda: the driver sees no GPU (CUDA_VISIBLE_DEVICES?)");
    if (ordinal >= count)
        return fail(adsmErrorNoDevice, "ADSM_DEVICE lists %d cuda devices, but the driver sees %d GPU%s (CUDA_VISIBLE_DEVICES?)",
                    ordinal + 1, count, count == 1 ? "" : "s");
    std::unique_ptr<CudaDevice> dev(new CudaDevice);
    dev->d_ = d;
    dev->set_ = Set::get();
    dev->memory().set_pinning(config.cuda_pin == "eager" ? gpu::Pinning::eager
                              : config.cuda_pin == "off" ? gpu::Pinning::off
                                                         : gpu::Pinning::lazy);
    // Making pages scales with threads only so far on a virtual machine
    // (on an H100's host, 8 threads made 64-256 MiB 1.5-2.4x as fast as
    // one), and registering pages made already costs 10-20% of registering
    // fresh ones there.
    unsigned makers = config.cuda_pin_threads;
    if (makers == 0) makers = std::clamp(static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)) / 2, 1u, 8u);
    dev->memory().set_page_makers(makers);
    if (CUresult r = d->cuDeviceGet(&dev->dev_, ordinal); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=cuda: cuDeviceGet");
    if (CUresult r = d->cuDeviceGetName(dev->gpu_name_, sizeof dev->gpu_name_ - 1, dev->dev_); r != CUDA_SUCCESS) {
        snprintf(dev->gpu_name_, sizeof dev->gpu_name_, "GPU %d", ordinal);
        ADSM_LOG(warn, "cuda: the driver does not name %s (%s)", dev->gpu_name_, d->describe(r));
    }
    // The primary context is the one a CUDA runtime in the program uses too.
    if (CUresult r = d->cuDevicePrimaryCtxRetain(&dev->ctx_, dev->dev_); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=cuda: cannot retain the GPU's primary context");
    Entered in(dev.get());
    if (in.status() != adsmSuccess) return in.status();
    size_t free_bytes = 0, total = 0;
    if (CUresult r = d->cuMemGetInfo(&free_bytes, &total); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=cuda: cuMemGetInfo");
    dev->capacity_ = total;
    CUmemAllocationProp prop = device_memory_prop(dev->dev_);
    size_t g = 0;
    if (CUresult r = d->cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNoDevice, r, "ADSM_DEVICE=cuda: the GPU has no virtual-memory management");
    dev->window_.granularity = g;
    // Two: one busy with a long copy leaves the other to other faulting threads.
    if (config.gpu_fault_calls == "helpers")
        if (Status s = dev->handler_calls_.start(2); s != adsmSuccess) return s;
    ADSM_LOG(info, "cuda: %s, %llu bytes, driver %d, mapping granularity %zu", dev->gpu_name_,
             static_cast<unsigned long long>(total), d->version, g);
    dev->index_ = dev->set_->join(dev.get());
    *out = std::move(dev);
    return adsmSuccess;
}

CudaDevice::~CudaDevice() {
    handler_calls_.stop();
    // A fork child's driver is not its own; a device that never got its
    // context has nothing to give back.
    if (!ctx_ || loss_.in_fork_child()) return;
    {
        Entered in(this);
        // A lost context frees nothing more: the program resets it.
        if (in.status() != adsmSuccess && set_) memory().abandon(&granule_driver_);
        if (in.status() == adsmSuccess) {
            for (uint32_t i = 0; i < kMaxStreams; ++i)
                if (streams_[i].s.load(std::memory_order_relaxed)) destroy_stream(i);
            copies_.close();
            memory().release(&granule_driver_);
            if (set_->leave(this) && set_->reserved) {
                if (CUresult r = d_->cuMemAddressFree(set_->reserved, set_->reserved_size); r != CUDA_SUCCESS)
                    ADSM_LOG(error, "cuda: cannot give back the window's device addresses: %s", d_->describe(r));
                set_->reserved = 0;
            }
        }
    }
    if (CUresult r = d_->cuDevicePrimaryCtxRelease(dev_); r != CUDA_SUCCESS)
        ADSM_LOG(error, "cuda: cannot release the GPU's primary context: %s", d_->describe(r));
}

Status CudaDevice::driver_error(CUresult r, const char *what, Status usual) {
    if (!context_is_gone(r)) return cuda_fail(usual, r, what);
    return loss_.lose(what, d_->describe(r));
}

// ---------------------------------------------------------------- memory

Status CudaDevice::reserve_window(uintptr_t preferred, uint64_t size, uintptr_t *out) {
    ADSM_ENTER();
    uint64_t granularity = window_.granularity;
    if (size % granularity)
        return fail(adsmErrorInitialization, "cuda: the window size (%llu bytes, ADSM_VA_SIZE) must be a multiple of %llu",
                    static_cast<unsigned long long>(size), static_cast<unsigned long long>(granularity));
    CUdeviceptr p = 0;
    if (CUresult r = d_->cuMemAddressReserve(&p, size, granularity, preferred, 0); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorInitialization, r, "cuda: cannot reserve device addresses for the shared window");
    *out = static_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(set_->attach_mu);
    set_->reserved = *out;
    set_->reserved_size = size;
    return adsmSuccess;
}

Status CudaDevice::attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) {
    ADSM_ENTER();
    window_.base = base;
    window_.size = size;
    window_.alias = host_alias;
    granule_driver_.init(d_, dev_, [this] { return streams_may_run(); });
    auto pins = std::make_unique<GranuleDriver>();
    pins->init(d_, dev_);
    if (Status s = set_->share_window(window_, host_fd, std::move(pins), name(), gpu_name_); s != adsmSuccess) return s;
    if (Status s = memory().warm_up(&granule_driver_); s != adsmSuccess) return s;
    return copies_.init(d_, &window_, &loss_);
}

Status CudaDevice::commit(uintptr_t dev, uint64_t bytes) {
    ADSM_OFF_HANDLER(commit(dev, bytes));
    ADSM_ENTER();
    if (Status s = injected_failure(os::injection::Site::device_commit, "commit"); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, bytes); s != adsmSuccess) return s;
    if (Status s = memory().room_for(memory().unbacked(dev, bytes), capacity_, &granule_driver_, name(), gpu_name_,
                                     "CUDA_ERROR_OUT_OF_MEMORY");
        s != adsmSuccess)
        return s;
    return memory().commit(dev, bytes, &granule_driver_);
}

void CudaDevice::decommit(uintptr_t dev, uint64_t bytes) {
    ADSM_OFF_HANDLER(decommit(dev, bytes));
    Entered in(this);
    // A lost or forked device keeps its memory: the driver cannot be asked.
    if (in.status() == adsmSuccess) memory().decommit(dev, bytes, &granule_driver_);
    else say_skipped(in, "freeing device memory");
}

void CudaDevice::say_skipped(const Entered &in, const char *what) const {
    if (in.status() != adsmSuccess && usable() == adsmSuccess)
        ADSM_LOG(error, "cuda: %s skipped: %s", what, last_detail());
}

// ---------------------------------------------------------------- several GPUs

const CudaDevice *CudaDevice::peer(const Device &other) const {
    auto *c = dynamic_cast<const CudaDevice *>(&other);
    return c && c != this && c->set_ == set_ ? c : nullptr;
}

bool CudaDevice::shares_addresses_with(const Device &other) const { return peer(other) != nullptr; }

Status CudaDevice::hand_over(Device &to, uintptr_t dev, uint64_t bytes) {
    auto *target = const_cast<CudaDevice *>(peer(to));
    if (!target) return Device::hand_over(to, dev, bytes);
    ADSM_OFF_HANDLER(hand_over(to, dev, bytes));
    ADSM_ENTER();
    if (Status s = target->usable(); s != adsmSuccess) return s;
    if (Status s = window_.check(dev, bytes); s != adsmSuccess) return s;
    // What the protocol sent last lands first.
    if (Status s = wait_copies(kAllCopies); s != adsmSuccess) return s;
    if (Status s = memory().room_for(bytes, target->capacity_, &target->granule_driver_, name(), target->gpu_name_,
                                     "CUDA_ERROR_OUT_OF_MEMORY");
        s != adsmSuccess)
        return s;
    // Granule by granule: the driver copies within one allocation at a time.
    auto copy = [&](uintptr_t scratch, uintptr_t from, uint64_t n) -> Status {
        for (uint64_t off = 0; off < n; off += window_.granularity)
            if (CUresult r = d_->cuMemcpyPeer(scratch + off, target->ctx_, from + off, ctx_, window_.granularity);
                r != CUDA_SUCCESS)
                return driver_error(r, "cuda: copying device memory to another GPU", adsmErrorLaunchFailure);
        return adsmSuccess;
    };
    return memory().hand_over(dev, bytes, &granule_driver_, &target->granule_driver_, copy);
}

Status CudaDevice::map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) {
    const CudaDevice *h = peer(holder);
    if (!h) return Device::map_peer_memory(holder, dev, bytes);
    ADSM_OFF_HANDLER(map_peer_memory(holder, dev, bytes));
    ADSM_ENTER();
    int can = 0;
    if (CUresult r = d_->cuDeviceCanAccessPeer(&can, dev_, h->dev_); r != CUDA_SUCCESS || !can)
        return fail(adsmErrorNotSupported, "cuda: %s cannot reach memory of %s (no peer link between them)", gpu_name_,
                    h->gpu_name_);
    const uint64_t g = window_.granularity;
    const uintptr_t lo = dev / g * g, hi = (dev + bytes + g - 1) / g * g;
    CUmemAccessDesc access = device_access(dev_, true);
    if (CUresult r = d_->cuMemSetAccess(lo, hi - lo, &access, 1); r != CUDA_SUCCESS)
        return cuda_fail(adsmErrorNotSupported, r, "cuda: mapping another GPU's memory for this one (cuMemSetAccess)");
    return adsmSuccess;
}

void CudaDevice::unmap_memory(uintptr_t dev, uint64_t bytes) {
    ADSM_OFF_HANDLER(unmap_memory(dev, bytes));
    Entered in(this);
    if (set_->size() < 2) return;
    if (in.status() != adsmSuccess) return say_skipped(in, "unmapping device memory from the other GPUs");
    const uint64_t g = window_.granularity;
    const uintptr_t lo = dev / g * g, hi = (dev + bytes + g - 1) / g * g;
    CUmemAccessDesc access = device_access(dev_, false);
    // (Memory gone with its holder already has no access to take away.)
    (void)d_->cuMemSetAccess(lo, hi - lo, &access, 1);
}

// ---------------------------------------------------------------- copies

Device::MirrorUse CudaDevice::pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len) {
    if (memory().pinning() != gpu::Pinning::lazy || !memory().pinned() || !window_.holds(lo, hi - lo))
        return MirrorUse::not_pinned;
    if (!memory().cpu_has_unseen()) return MirrorUse::again;  // no driver call, no lock
    ADSM_OFF_HANDLER(pin_for_cpu(lo, hi, start, len));
    Entered in(this);
    if (in.status() != adsmSuccess) return MirrorUse::not_pinned;
    bool fresh = memory().pin_for_cpu(lo, hi, start, len);
    if (!memory().pinned()) return MirrorUse::not_pinned;
    return fresh ? MirrorUse::first : MirrorUse::again;
}

bool CudaDevice::pin_staging(void *p, size_t n) {
    // Only where the mirror is pinned too: ADSM_CUDA_PIN=off asks for no pins.
    if (memory().pinning() == gpu::Pinning::off || !memory().pinned()) return false;
    Entered in(this);
    return in.status() == adsmSuccess && d_->cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
}

void CudaDevice::unpin_staging(void *p) {
    Entered in(this);
    if (in.status() != adsmSuccess) return say_skipped(in, "unpinning staging memory");
    if (CUresult r = d_->cuMemHostUnregister(p); r != CUDA_SUCCESS)
        ADSM_LOG(warn, "cuda: cannot unpin the staging memory at %p (%s); it stays pinned", p, d_->describe(r));
}

const void *CudaDevice::host_for_copy(const void *p, size_t n) {
    p = window_.host_name(p);
    memory().pin_for_copy(p, n);
    return p;
}

Status CudaDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    ADSM_OFF_HANDLER(copy_to_device(dev, src, n));
    ADSM_ENTER();
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the device"); s != adsmSuccess) return s;
    if (Status s = copies_.to_device(dev, host_for_copy(src, n), n); s != adsmSuccess) return s;
    stats().transfer(true, n);
    return adsmSuccess;
}

Status CudaDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) {
    ADSM_OFF_HANDLER(copy_to_host(dst, dev, n));
    ADSM_ENTER();
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the host"); s != adsmSuccess) return s;
    if (Status s = copies_.to_host(const_cast<void *>(host_for_copy(dst, n)), dev, n); s != adsmSuccess) return s;
    stats().transfer(false, n);
    return adsmSuccess;
}

Status CudaDevice::fill(uintptr_t dev, int value, size_t n) {
    ADSM_OFF_HANDLER(fill(dev, value, n));
    ADSM_ENTER();
    if (Status s = window_.check(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "fill"); s != adsmSuccess) return s;
    if (Status s = copies_.fill(dev, value, n); s != adsmSuccess) return s;
    stats().add(Counter::device_fills);
    return adsmSuccess;
}

uint64_t CudaDevice::copy_async(bool to_device, void *host, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    ADSM_OFF_HANDLER(copy_async(to_device, host, dev, n, done, arg));
    Entered in(this);
    if (in.status() != adsmSuccess) {
        if (done) done(arg, in.status());
        return 0;
    }
    if (Status s = injected_failure(os::injection::Site::device_copy, "asynchronous copy"); s != adsmSuccess) {
        note_copy_failure(s);
        if (done) done(arg, s);
        return 0;
    }
    stats().transfer(to_device, n, true);
    host = const_cast<void *>(host_for_copy(host, n));
    return to_device ? copies_.to_device_async(dev, host, n, done, arg) : copies_.to_host_async(host, dev, n, done, arg);
}

uint64_t CudaDevice::copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    return copy_async(true, const_cast<void *>(src), dev, n, done, arg);
}

uint64_t CudaDevice::copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    return copy_async(false, dst, dev, n, done, arg);
}

// The wait is a futex wait, on the calling thread even in the fault
// handler: a helper waiting there would wait for a landing that may wait for
// a lock the faulting thread holds while it waits for a helper.  Only the
// driver calls go to one: whether the stream failed, and what the failure was.
Status CudaDevice::wait_copies(uint64_t ticket) {
    if (Status s = usable(); s != adsmSuccess) return s;
    copies_.wait(std::min(ticket, copies_.last_ticket()), [this] { return copy_stream_failed(); });
    return copy_failure();
}

bool CudaDevice::copy_stream_failed() {
    ADSM_OFF_HANDLER(copy_stream_failed());
    Entered in(this);
    return in.status() != adsmSuccess || copies_.stream_failed();
}

Status CudaDevice::copy_failure() {
    ADSM_OFF_HANDLER(copy_failure());
    if (Status s = copies_.take_failure(); s != adsmSuccess) return s;
    return take_copy_failure();  // one that never reached the stream
}

// ---------------------------------------------------------------- modules

Status CudaDevice::load_module(const void *image, size_t, void **module) {
    std::vector<CudaDevice *> gpus = set_->members();
    if (gpus.size() == 1) return load_here(image, module);
    // In every GPU's context: a kernel runs wherever its caller's context is.
    Set::PerGpu modules;
    for (CudaDevice *g : gpus) {
        void *m = nullptr;
        if (Status s = g->load_here(image, &m); s != adsmSuccess) return s;
        modules.push_back(m);
    }
    *module = set_->add_module(std::move(modules));
    return adsmSuccess;
}

Status CudaDevice::load_here(const void *image, void **module) {
    ADSM_ENTER();
    // PTX is compiled here; the compiler's complaints are the useful part
    // of a failure.
    char log[4096] = {};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof log - 1))};
    CUmodule m = nullptr;
    CUresult r = d_->cuModuleLoadDataEx(&m, image, 2, opts, vals);
    if (r != CUDA_SUCCESS) {
        if (context_is_gone(r)) return driver_error(r, "cuda: loading a module", adsmErrorInvalidValue);
        return fail(adsmErrorInvalidValue, "cuda: the driver cannot load this module for %s: %s%s%s", gpu_name_,
                    d_->describe(r), *log ? "; " : "", log);
    }
    *module = m;
    return adsmSuccess;
}

Status CudaDevice::module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) {
    const Set::PerGpu *modules = set_->module(module);
    if (!modules) {
        if (Status s = function_here(module, name, fn); s != adsmSuccess) return s;
        return function_params(*fn, name, param_sizes);
    }
    std::vector<CudaDevice *> gpus = set_->members();
    Set::PerGpu functions;
    for (size_t i = 0; i < gpus.size() && i < modules->size(); ++i) {
        void *f = nullptr;
        if (Status s = gpus[i]->function_here((*modules)[i], name, &f); s != adsmSuccess) return s;
        functions.push_back(f);
    }
    *fn = set_->add_function(std::move(functions));
    return gpus.front()->function_params(*fn, name, param_sizes);
}

Status CudaDevice::function_here(void *module, const char *name, void **fn) {
    ADSM_ENTER();
    CUfunction f = nullptr;
    if (CUresult r = d_->cuModuleGetFunction(&f, static_cast<CUmodule>(module), name); r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_NOT_FOUND)
            return fail(adsmErrorKernelNotFound,
                        "the module has no kernel '%s' (a kernel not declared extern \"C\" has a mangled name)", name);
        return cuda_fail(adsmErrorInvalidValue, r, "cuda: cuModuleGetFunction");
    }
    *fn = f;
    return adsmSuccess;
}

Status CudaDevice::function_params(void *fn, const char *name, std::vector<uint32_t> *param_sizes) {
    if (!d_->cuFuncGetParamInfo)
        return fail(adsmErrorNotSupported,
                    "kernel '%s': the driver (version %d) cannot report parameter sizes (cuFuncGetParamInfo needs "
                    "CUDA 12.4 or later)",
                    name, d_->version);
    ADSM_ENTER();
    param_sizes->clear();
    // A CUDA runtime launches library kernels (CUkernel), which the driver
    // takes where a CUfunction goes; their parameters are asked differently.
    bool library_kernel = false;
    for (size_t i = 0;; ++i) {
        size_t offset = 0, size = 0;
        CUresult r = library_kernel ? d_->cuKernelGetParamInfo(static_cast<CUkernel>(fn), i, &offset, &size)
                                    : d_->cuFuncGetParamInfo(static_cast<CUfunction>(fn), i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_HANDLE && i == 0 && !library_kernel && d_->cuKernelGetParamInfo) {
            library_kernel = true;
            --i;
            continue;
        }
        if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
        if (r != CUDA_SUCCESS) return cuda_fail(adsmErrorInvalidValue, r, "cuda: cuFuncGetParamInfo");
        if (i == kMaxKernelParams)
            return fail(adsmErrorNotSupported, "kernel '%s' has more than %u parameters", name, kMaxKernelParams);
        param_sizes->push_back(static_cast<uint32_t>(size));
    }
    return adsmSuccess;
}

Status CudaDevice::check_kernel(const KernelInfo &k) const {
    if (k.device_fn) return adsmSuccess;
    return fail(adsmErrorNotSupported,
                "kernel '%s' is a host function (adsmRegisterKernel); the cuda device runs GPU code: compile the kernel "
                "with nvcc and load it with adsmLoadModule",
                k.name.c_str());
}

// ---------------------------------------------------------------- kernels

CUresult CudaDevice::query_stream(StreamId id) {
    Entered in(this);
    CUstream s = id < kMaxStreams ? streams_[id].s.load() : nullptr;
    if (in.status() != adsmSuccess || !s) return CUDA_ERROR_INVALID_HANDLE;  // (synchronize says why)
    return d_->cuStreamQuery(s);
}

bool CudaDevice::streams_may_run() {
    // (A lost device answers no query: nothing is unmapped there then.)
    const uint32_t used = std::min(stream_slots_.end(), kMaxStreams);
    for (uint32_t i = 0; i < used; ++i)
        if (query_stream(i) == CUDA_ERROR_NOT_READY) return true;
    return false;
}

Status CudaDevice::create_stream(StreamId *out) {
    ADSM_ENTER();
    CUstream s = nullptr;
    if (CUresult r = d_->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
        return driver_error(r, "cuda: cuStreamCreate", adsmErrorNoDevice);
    for (uint32_t i = 0; i < kMaxStreams; ++i) {
        CUstream none = nullptr;
        if (streams_[i].s.compare_exchange_strong(none, s)) {
            streams_[i].last.store(nullptr);
            stream_slots_.reach(i);
            *out = i;
            return adsmSuccess;
        }
    }
    d_->cuStreamDestroy(s);
    return fail(adsmErrorMemoryAllocation, "cuda: more than %u contexts have streams", kMaxStreams);
}

void CudaDevice::destroy_stream(StreamId id) {
    Entered in(this);
    if (id >= kMaxStreams) return;
    CUstream s = streams_[id].s.exchange(nullptr);
    CUevent e = streams_[id].joined.exchange(nullptr);
    if (in.status() != adsmSuccess) return say_skipped(in, "destroying a stream");
    if (s) d_->cuStreamDestroy(s);
    if (e) d_->cuEventDestroy(e);
}

Status CudaDevice::launch(StreamId id, const LaunchDesc &l) {
    ADSM_ENTER();
    const KernelInfo *k = l.kernel;
    if (Status s = check_kernel(*k); s != adsmSuccess) return s;
    CUstream s = id < kMaxStreams ? streams_[id].s.load() : nullptr;
    if (!s) return fail(adsmErrorInvalidContext, "cuda: stream %u does not exist", id);
    void *params[kMaxKernelParams];
    const unsigned char *blob = static_cast<const unsigned char *>(l.args);
    for (size_t i = 0; i < k->param_offsets.size(); ++i) params[i] = const_cast<unsigned char *>(blob + k->param_offsets[i]);
    // A routed program's kernel runs on its own stream; ours waits for it.
    CUstream target = l.has_native_stream ? static_cast<CUstream>(l.native_stream) : s;
    // Copies still in flight (a rolling flush) land before the kernel starts.
    if (Status st = copies_.order_before(target); st != adsmSuccess) return st;
    // (A module's kernel on a GPU of several is that GPU's own function.)
    void *fn = index_ == 0 ? k->device_fn : set_->function_on(k->device_fn, index_);
    CUresult r = d_->cuLaunchKernel(static_cast<CUfunction>(fn), l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y,
                                    l.block.z, l.shared_mem, target, params, nullptr);
    if (r == CUDA_SUCCESS && target != s) r = join(streams_[id], target, s);
    if (r != CUDA_SUCCESS) {
        char what[192];
        snprintf(what, sizeof what, "cuda: launching kernel '%s'", k->name.c_str());
        return driver_error(r, what, r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                                         ? adsmErrorInvalidLaunch
                                         : adsmErrorLaunchFailure);
    }
    streams_[id].last.store(k);
    return adsmSuccess;
}

Status CudaDevice::follow(StreamId id, void *native_stream) {
    ADSM_ENTER();
    CUstream s = id < kMaxStreams ? streams_[id].s.load() : nullptr;
    if (!s) return fail(adsmErrorInvalidContext, "cuda: stream %u does not exist", id);
    if (CUresult r = join(streams_[id], static_cast<CUstream>(native_stream), s); r != CUDA_SUCCESS)
        return driver_error(r, "cuda: ordering after the program's stream", adsmErrorLaunchFailure);
    return adsmSuccess;
}

// The context's stream waits (on the device) for the program's stream, so
// that a sync of the context waits for the kernel launched there.
CUresult CudaDevice::join(Stream &slot, CUstream program, CUstream ours) {
    CUevent e = slot.joined.load();
    if (!e) {
        if (CUresult r = d_->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) return r;
        CUevent none = nullptr;
        if (!slot.joined.compare_exchange_strong(none, e)) {
            d_->cuEventDestroy(e);
            e = none;
        }
    }
    CUresult r = d_->cuEventRecord(e, program);
    return r == CUDA_SUCCESS ? d_->cuStreamWaitEvent(ours, e, 0) : r;
}

Status CudaDevice::synchronize(StreamId id) {
    // In the fault handler (a racing access waits for the kernels), a
    // helper is asked whether the stream is done, never made to wait for
    // it: a kernel waits for the copies before it, whose landings may wait
    // for a lock that a faulting thread holds while it needs a helper.
    // Once it is done, the helper's synchronisation returns at once.
    if (handler_calls_.needed())
        while (handler_calls_.call([&] { return query_stream(id); }) == CUDA_ERROR_NOT_READY) {
            struct timespec pause = {0, 20 * 1000};
            nanosleep(&pause, nullptr);
        }
    ADSM_OFF_HANDLER(synchronize(id));
    ADSM_ENTER();
    CUstream s = id < kMaxStreams ? streams_[id].s.load() : nullptr;
    if (!s) return fail(adsmErrorInvalidContext, "cuda: stream %u does not exist", id);
    CUresult r = d_->cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS) {
        const KernelInfo *k = streams_[id].last.load();
        char what[192];
        snprintf(what, sizeof what, "kernel '%s' on %s", k ? k->name.c_str() : "?", gpu_name_);
        return driver_error(r, what, adsmErrorLaunchFailure);
    }
    return copies_.take_failure();
}

}  // namespace adsm::cuda
