#include "backend/remote/remote_device.h"

#include <algorithm>
#include <cstring>

#include "backend/remote/key_file.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {

RemoteDevice::RemoteDevice(const Config &config) : config_(config) {}

RemoteDevice::~RemoteDevice() = default;

Status RemoteDevice::attach_window(uintptr_t base, uint64_t size, int, uint8_t *) {
    const std::string &where = config_.remote;
    size_t colon = where.rfind(':');
    if (where.empty() || colon == std::string::npos || colon == 0 || colon + 1 == where.size())
        return fail(adsmErrorNoDevice, "ADSM_DEVICE=remote needs ADSM_REMOTE=HOST:PORT (the device server%s)",
                    where.empty() ? "" : ("; not '" + where + "'").c_str());
    if (config_.remote_key.empty())
        return fail(adsmErrorNoDevice,
                    "ADSM_DEVICE=remote needs ADSM_REMOTE_KEY=FILE (adsm-run --remote-key FILE): the key the device "
                    "server was started with");
    std::string key;
    if (Status s = remote::load_key(config_.remote_key.c_str(), &key); s != adsmSuccess)
        return fail(adsmErrorNoDevice, "ADSM_REMOTE_KEY: %s", std::string(last_detail()).c_str());
    const int timeout_ms = static_cast<int>(config_.remote_timeout_s * 1000);
    if (Status s = link_.open(where.substr(0, colon), where.substr(colon + 1), config_.remote_provider, key, timeout_ms,
                                  remote::Endpoint::spin_us(config_.remote_spin_us));
        s != adsmSuccess)
        return fail(adsmErrorNoDevice, "%s", std::string(last_detail()).c_str());
    remote::AttachBody a{base, size};
    remote::Reply r{};
    if (Status s = link_.call(remote::Op::attach, &a, sizeof a, &r); s != adsmSuccess)
        return fail(adsmErrorNoDevice, "the device server at %s refused the window: %s", where.c_str(),
                    std::string(last_detail()).c_str());
    capacity_ = r.capacity;
    link_.set_staged((r.flags & remote::kStagedMemory) != 0);
    gpu_code_ = (r.flags & remote::kGpuCode) != 0;
    zeroed_commits_ = (r.flags & remote::kZeroedCommits) != 0;
    return adsmSuccess;
}

Status RemoteDevice::commit(uintptr_t dev, uint64_t bytes) {
    if (Status s = injected_failure(os::injection::Site::device_commit, "commit"); s != adsmSuccess) return s;
    remote::RangeBody b{dev, bytes};
    remote::Reply r{};
    if (Status s = link_.call(remote::Op::commit, &b, sizeof b, &r); s != adsmSuccess) return s;
    link_.add_range(dev, bytes, r.rma_key);
    used_.fetch_add(bytes, std::memory_order_relaxed);
    return adsmSuccess;
}

void RemoteDevice::decommit(uintptr_t dev, uint64_t bytes) {
    link_.remove_range(dev);
    // Not waited for: nothing reaches the range any more, and a later
    // request (a commit there again) comes after it on the connection.  A
    // lost server holds nothing any more.
    remote::RangeBody b{dev, bytes};
    (void)link_.post(remote::Op::decommit, &b, sizeof b);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
}

Status RemoteDevice::copy(bool to_device, uintptr_t dev, void *host, size_t n) {
    if (Status s = injected_failure(os::injection::Site::device_copy, to_device ? "copy to the device" : "copy to the host");
        s != adsmSuccess)
        return s;
    return link_.copy_now(to_device, dev, host, n);
}

Status RemoteDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    return copy(true, dev, const_cast<void *>(src), n);
}

Status RemoteDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) { return copy(false, dev, dst, n); }

uint64_t RemoteDevice::copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    uint64_t t = link_.submit_write(dev, src, n, done, arg);
    if (t == 0) return Device::copy_to_device_async(dev, src, n, done, arg);
    stats().add(Counter::async_copies);
    return t;
}

uint64_t RemoteDevice::copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    uint64_t t = link_.submit_read(dst, dev, n, done, arg);
    if (t == 0) return Device::copy_to_host_async(dst, dev, n, done, arg);
    stats().add(Counter::async_copies);
    return t;
}

Status RemoteDevice::wait_copies(uint64_t ticket) {
    link_.wait(std::min(ticket, link_.last_ticket()));
    if (Status s = link_.take_failure(); s != adsmSuccess) note_copy_failure(s);
    return take_copy_failure();
}

Status RemoteDevice::fill(uintptr_t dev, int value, size_t n) {
    remote::FillBody f{dev, n, static_cast<uint32_t>(value & 0xff), 0};
    remote::Reply r{};
    if (Status s = link_.call(remote::Op::fill, &f, sizeof f, &r); s != adsmSuccess) return s;
    stats().add(Counter::device_fills);
    return adsmSuccess;
}

static_assert(remote::kMaxParams >= kMaxKernelParams, "a reply holds every parameter's size");

Status RemoteDevice::load_module(const void *image, size_t size, void **module) {
    if (!gpu_code_)
        return fail(adsmErrorNotSupported,
                    "the device server at %s runs kernels its --kernels libraries registered, by name; GPU code from a "
                    "module needs a server with --device cuda or levelzero",
                    config_.remote.c_str());
    if (size > remote::kMaxModuleBytes)
        return fail(adsmErrorNotSupported, "a %zu-byte module: a remote device takes images of at most %llu bytes", size,
                    static_cast<unsigned long long>(remote::kMaxModuleBytes));
    uint32_t id;
    {
        std::lock_guard<std::mutex> g(modules_mu_);
        if (modules_ == remote::kMaxModules)
            return fail(adsmErrorNotSupported, "a remote device takes %u modules at most", remote::kMaxModules);
        id = ++modules_;
    }
    // In parts, one request each, in order on the connection.
    std::unique_ptr<remote::ModuleBody> part(new remote::ModuleBody{});
    part->module = id;
    part->total = size;
    for (size_t at = 0; at < size;) {
        part->offset = at;
        part->length = static_cast<uint32_t>(std::min(size - at, remote::kModulePartBytes));
        memcpy(part->data, static_cast<const uint8_t *>(image) + at, part->length);
        remote::Reply r{};
        if (Status s = link_.call(remote::Op::module, part.get(), remote::kModuleFixedBytes + part->length, &r);
            s != adsmSuccess)
            return s;
        at += part->length;
    }
    *module = reinterpret_cast<void *>(static_cast<uintptr_t>(id));
    return adsmSuccess;
}

Status RemoteDevice::module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes) {
    remote::FunctionBody f{};
    f.module = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(module));
    if (strlen(name) >= sizeof f.kernel)
        return fail(adsmErrorInvalidValue, "kernel name '%s' is longer than a remote device takes (%zu)", name,
                    sizeof f.kernel - 1);
    memcpy(f.kernel, name, strlen(name) + 1);
    remote::Reply r{};
    if (Status s = link_.call(remote::Op::function, &f, sizeof f, &r); s != adsmSuccess) return s;
    if (r.params > remote::kMaxParams) return fail(adsmErrorDeviceLost, "the device server said %u parameters", r.params);
    param_sizes->assign(r.param_sizes, r.param_sizes + r.params);
    // One handle per kernel of a module, however often it is asked for.
    std::lock_guard<std::mutex> g(modules_mu_);
    auto same = std::find_if(module_kernels_.begin(), module_kernels_.end(),
                             [&](const ModuleKernel &k) { return k.module == f.module && k.name == name; });
    if (same == module_kernels_.end()) same = module_kernels_.insert(module_kernels_.end(), {f.module, name});
    *fn = &*same;
    return adsmSuccess;
}

Status RemoteDevice::declare_params(void *fn, const std::vector<uint32_t> &sizes) {
    uint32_t module;
    std::string name;
    {
        std::lock_guard<std::mutex> g(modules_mu_);
        const auto *k = static_cast<const ModuleKernel *>(fn);
        module = k->module;
        name = k->name;
    }
    return declare(module, name, sizes);
}

Status RemoteDevice::declare(uint32_t module, const std::string &name, const std::vector<uint32_t> &sizes) {
    remote::DeclareBody d{};
    d.module = module;
    if (name.size() >= sizeof d.kernel)
        return fail(adsmErrorInvalidValue, "kernel name '%s' is longer than a remote device takes (%zu)", name.c_str(),
                    sizeof d.kernel - 1);
    memcpy(d.kernel, name.c_str(), name.size() + 1);
    if (sizes.size() > remote::kMaxParams)
        return fail(adsmErrorNotSupported, "%zu parameters: a remote device takes %u", sizes.size(), remote::kMaxParams);
    d.params = static_cast<uint32_t>(sizes.size());
    std::copy(sizes.begin(), sizes.end(), d.sizes);
    remote::Reply r{};
    return link_.call(remote::Op::declare, &d, sizeof d, &r);
}

Status RemoteDevice::declare_once(const KernelInfo &k) {
    {
        std::lock_guard<std::mutex> g(modules_mu_);
        if (k.id < declared_.size() && declared_[k.id]) return adsmSuccess;
    }
    if (Status s = declare(0, k.name, k.param_sizes); s != adsmSuccess) return s;
    std::lock_guard<std::mutex> g(modules_mu_);
    if (declared_.size() <= k.id) declared_.resize(k.id + 1);
    declared_[k.id] = true;
    return adsmSuccess;
}

bool RemoteDevice::is_module_kernel(const void *fn) const {
    std::lock_guard<std::mutex> g(modules_mu_);
    for (const ModuleKernel &k : module_kernels_)
        if (&k == fn) return true;
    return false;
}

Status RemoteDevice::check_kernel(const KernelInfo &k) const {
    if (k.fn) return adsmSuccess;  // run by its name on the server
    if (gpu_code_ && is_module_kernel(k.device_fn)) return adsmSuccess;
    return fail(adsmErrorNotSupported,
                "kernel '%s' is GPU code from a module not loaded on this remote device; a remote device runs kernels "
                "its server registered by name, and modules loaded on it when its server runs GPU code",
                k.name.c_str());
}

Status RemoteDevice::create_stream(StreamId *out) {
    std::lock_guard<std::mutex> g(streams_mu_);
    for (size_t i = 0; i < streams_.size(); ++i)
        if (!streams_[i]) {
            streams_[i] = true;
            *out = static_cast<StreamId>(i);
            return adsmSuccess;
        }
    if (streams_.size() >= remote::kMaxStreams)
        return fail(adsmErrorMemoryAllocation, "a remote device serves %u streams (contexts) at most",
                    remote::kMaxStreams);
    streams_.push_back(true);
    *out = static_cast<StreamId>(streams_.size() - 1);
    return adsmSuccess;
}

void RemoteDevice::destroy_stream(StreamId id) {
    std::lock_guard<std::mutex> g(streams_mu_);
    if (id < streams_.size()) streams_[id] = false;
    if (id < remote::kMaxStreams) refusals_[id].status.store(adsmSuccess, std::memory_order_release);  // (its next owner's)
}

Status RemoteDevice::launch(StreamId id, const LaunchDesc &l) {
    remote::LaunchBody b{};
    if (l.kernel->name.size() >= sizeof b.kernel)
        return fail(adsmErrorInvalidLaunch, "kernel name '%s' is longer than a remote device takes (%zu)",
                    l.kernel->name.c_str(), sizeof b.kernel - 1);
    if (l.args_size > sizeof b.args) return fail(adsmErrorInvalidLaunch, "arguments too large");
    memcpy(b.kernel, l.kernel->name.c_str(), l.kernel->name.size() + 1);
    b.grid[0] = l.grid.x, b.grid[1] = l.grid.y, b.grid[2] = l.grid.z;
    b.block[0] = l.block.x, b.block[1] = l.block.y, b.block[2] = l.block.z;
    b.args_size = l.args_size;
    b.stream = id;
    if (!l.kernel->fn) {
        if (Status s = check_kernel(*l.kernel); s != adsmSuccess) return s;
        b.module = static_cast<const ModuleKernel *>(l.kernel->device_fn)->module;
    } else if (gpu_code_) {
        // The server's GPU code of that name takes what the program
        // registered: its driver may not say its parameters' sizes.
        if (Status s = declare_once(*l.kernel); s != adsmSuccess) return s;
    }
    if (l.args_size) memcpy(b.args, l.args, l.args_size);
    const size_t size = remote::kLaunchFixedBytes + l.args_size;
    const LaunchShape shape{l.kernel->id, l.block.x, l.block.y, l.block.z, l.shared_mem};
    {
        std::lock_guard<std::mutex> g(accepted_mu_);
        if (accepted_.count(shape) && id < remote::kMaxStreams)
            return link_.post(remote::Op::launch, &b, size, &RemoteDevice::launch_refused, &refusals_[id]);
    }
    remote::Reply r{};
    if (Status s = link_.call(remote::Op::launch, &b, size, &r); s != adsmSuccess) return s;
    std::lock_guard<std::mutex> g(accepted_mu_);
    accepted_.insert(shape);
    return adsmSuccess;
}

void RemoteDevice::launch_refused(void *refusal, Status s, const char *why) {
    auto *r = static_cast<Refusal *>(refusal);
    int none = adsmSuccess;
    if (!r->status.compare_exchange_strong(none, Refusal::kWriting, std::memory_order_acq_rel)) return;  // the first stays
    snprintf(r->why, sizeof r->why, "%s", why);
    r->status.store(s, std::memory_order_release);
}

Status RemoteDevice::synchronize(StreamId id) {
    remote::SyncBody b{id, link_.heartbeat_ms(), trace::enabled() ? remote::kSendSpans : 0u, 0};
    remote::Reply r{};
    Status s = link_.call(remote::Op::sync, &b, sizeof b, &r, /*patient=*/true);
    // A posted launch's refusal came before the sync's answer.
    if (id < remote::kMaxStreams) {
        Refusal &f = refusals_[id];
        // (Written before the sync's answer was taken: never half-way here.)
        if (int st = f.status.load(std::memory_order_acquire); st != adsmSuccess && st != Refusal::kWriting) {
            char why[sizeof f.why];
            memcpy(why, f.why, sizeof why);
            f.status.store(adsmSuccess, std::memory_order_release);
            return fail(static_cast<Status>(st), "the device server at %s refused a launch: %s", config_.remote.c_str(), why);
        }
    }
    return s;
}

}  // namespace adsm
