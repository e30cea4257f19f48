#include "device_server/worker.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/device.h"
#include "backend/remote/handshake.h"
#include "device_server/client_streams.h"
#include "device_server/hosting.h"
#include "device_server/kernels.h"
#include "os/vm.h"
#include "support/config.h"
#include "support/module_file.h"

namespace adsm::server {
namespace {

class Worker {
public:
    explicit Worker(const Options &options) : options_(options) {}
    ~Worker() {
        if (device_) streams_.destroy_all(*device_);
    }
    Status handle(const remote::Request &r, remote::Reply *reply);
    // The kernels that ran since the last look, in batches, with the
    // client's stream numbers and this machine's clock.
    void send_spans(int socket, uint64_t seq);

private:
    Status attach(uint64_t base, uint64_t size, remote::Reply *reply);
    // Where the kernels of an integrated device run on the window itself:
    // they reach committed memory only, as a discrete device's do, so one
    // that strays faults instead of making pages past --memory.
    Status commit(uint64_t addr, uint64_t len);
    void decommit(uint64_t addr, uint64_t len);
    Status load_modules();
    Status launch(const remote::LaunchBody &l);
    // A module's kernel: the driver's function and parameter sizes, and
    // once every size is known (from the driver, else declared by the
    // client) the kernel registered here with them.
    struct Resolved {
        void *fn = nullptr;
        std::vector<uint32_t> sizes;      // kUnknownParamSize where the driver does not say
        const KernelInfo *info = nullptr;  // null while a size is unknown
    };
    Status resolve(void *module, const char *name, Resolved *out);
    // The client's own modules: their images in parts.
    Status module_part(const remote::ModuleBody &m);
    // A kernel by name: of the client's module `module`, or with module 0
    // of the --modules (a GPU back-end runs GPU code).
    Status kernel_of(uint32_t module, const char *name, Resolved **out);
    // A launch's kernel of either kind, every parameter's size known.
    Status gpu_kernel(const remote::LaunchBody &l, const KernelInfo **out);
    // Sizes the program states for such a kernel: from here on its
    // launches are laid out by them.
    Status declare(const remote::DeclareBody &d);

    const Options &options_;
    std::unique_ptr<Device> device_;
    uint8_t *window_ = nullptr;  // an integrated device's kernels' view
    std::vector<void *> modules_;
    std::map<uint32_t, std::vector<char>> images_;  // coming in
    std::map<uint32_t, void *> client_modules_;
    std::map<std::pair<uint32_t, std::string>, Resolved> kernels_;  // by (module or 0, name)
    ClientStreams streams_;
};

Status Worker::attach(uint64_t base, uint64_t size, remote::Reply *reply) {
    Config config;
    if (Status s = parse_config([](const char *name) { return getenv(name); }, &config); s != adsmSuccess) return s;
    if (Status s = create_device(options_.device, config, &device_); s != adsmSuccess) return s;
    const bool integrated = device_->integrated();
    uint8_t *host = nullptr;
    if (integrated) {
        // Kernels run here on the window's addresses: the memory is there,
        // reachable once committed.
        void *at = os::map_shared(kWorkerMemoryFd, 0, size, PROT_NONE, base);
        if (at == MAP_FAILED)
            return fail(adsmErrorNoDevice, "the client's window [%#llx, +%llu) cannot be mapped in its device process: %s",
                        static_cast<unsigned long long>(base), static_cast<unsigned long long>(size), strerror(errno));
        host = static_cast<uint8_t *>(at);
        window_ = host;
    } else {
        uintptr_t got = 0;
        if (Status s = device_->reserve_window(base, size, &got); s != adsmSuccess) return s;
        if (got != base)
            return fail(adsmErrorNoDevice,
                        "the %s device reserved the client's window at %#llx, not at %#llx where the client has it",
                        device_->name(), static_cast<unsigned long long>(got), static_cast<unsigned long long>(base));
        // The staging copy, at addresses of its own: the driver would take
        // a host pointer inside its reservation for device memory.
        void *alias = os::map_shared(kWorkerMemoryFd, 0, size, PROT_READ | PROT_WRITE);
        if (alias == MAP_FAILED)
            return fail(adsmErrorNoDevice, "cannot map the client's staging memory: %s", strerror(errno));
        host = static_cast<uint8_t *>(alias);
    }
    if (Status s = device_->attach_window(base, size, kWorkerMemoryFd, host); s != adsmSuccess) return s;
    if (Status s = load_modules(); s != adsmSuccess) return s;
    reply->capacity = std::min(options_.memory, device_->capacity());
    reply->flags = (integrated ? 0 : remote::kStagedMemory) | (device_->runs_gpu_code() ? remote::kGpuCode : 0);
    return adsmSuccess;
}

Status Worker::commit(uint64_t addr, uint64_t len) {
    if (Status s = device_->commit(addr, len); s != adsmSuccess) return s;
    // (The server checked the range: whole pages of the window.)
    if (window_ && mprotect(reinterpret_cast<void *>(addr), len, PROT_READ | PROT_WRITE) != 0) {
        int e = errno;
        device_->decommit(addr, len);
        return fail(adsmErrorMemoryAllocation, "cannot open [%#llx, +%llu) to the client's kernels: %s",
                    static_cast<unsigned long long>(addr), static_cast<unsigned long long>(len), strerror(e));
    }
    // Zeros, as the client is told (a GPU's memory holds what it held
    // before); the staging copy's pages were given back at the decommit.
    if (Status s = device_->fill(addr, 0, len); s != adsmSuccess) {
        decommit(addr, len);
        return s;
    }
    return adsmSuccess;
}

void Worker::decommit(uint64_t addr, uint64_t len) {
    // Closing can fail only for want of memory to split the mapping; the
    // range stays reachable then, and its pages go all the same.
    if (window_) (void)mprotect(reinterpret_cast<void *>(addr), len, PROT_NONE);
    device_->decommit(addr, len);
}

Status Worker::load_modules() {
    if (!options_.modules.empty() && !device_->runs_gpu_code())
        return fail(adsmErrorNotSupported, "--modules: the %s device runs kernels from --kernels libraries",
                    device_->name());
    for (const std::string &path : options_.modules) {
        std::vector<char> image;
        if (Status s = read_module_file(path.c_str(), &image); s != adsmSuccess) return s;
        void *m = nullptr;
        if (Status s = device_->load_module(image.data(), image.size(), &m); s != adsmSuccess)
            return fail(s, "--modules %s: %s", path.c_str(), std::string(last_detail()).c_str());
        modules_.push_back(m);
    }
    return adsmSuccess;
}

Status Worker::resolve(void *module, const char *name, Resolved *out) {
    if (Status s = device_->module_function(module, name, &out->fn, &out->sizes); s != adsmSuccess) return s;
    for (uint32_t size : out->sizes)
        if (size == kUnknownParamSize) return adsmSuccess;
    adsmKernel_t handle;
    if (Status s = kernels().add_module_function(name, out->fn, out->sizes, &handle); s != adsmSuccess) return s;
    out->info = kernels().get(handle);
    return adsmSuccess;
}

Status Worker::module_part(const remote::ModuleBody &m) {
    if (!device_->runs_gpu_code()) return no_gpu_code(device_->name());
    // The server checked the parts come in order, within their total.
    std::vector<char> &image = images_[m.module];
    if (m.offset == 0) image.reserve(m.total);
    image.insert(image.end(), m.data, m.data + m.length);
    if (image.size() < m.total) return adsmSuccess;
    void *loaded = nullptr;
    Status s = device_->load_module(image.data(), image.size(), &loaded);
    images_.erase(m.module);
    if (s == adsmSuccess) client_modules_[m.module] = loaded;
    return s;
}

Status Worker::kernel_of(uint32_t module, const char *name, Resolved **out) {
    auto key = std::make_pair(module, std::string(name));
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
        Resolved k;
        if (module) {
            auto m = client_modules_.find(module);
            if (m == client_modules_.end())
                return fail(adsmErrorInvalidValue, "module %u was not loaded (its loading failed)", module);
            if (Status s = resolve(m->second, name, &k); s != adsmSuccess) return s;
        } else {
            bool found = false;
            for (void *m : modules_)
                if ((found = resolve(m, name, &k) == adsmSuccess)) break;
            if (!found) return fail(adsmErrorKernelNotFound, "no kernel '%s' on the device server (in its --modules)", name);
        }
        it = kernels_.emplace(key, k).first;
    }
    *out = &it->second;
    return adsmSuccess;
}

Status Worker::declare(const remote::DeclareBody &d) {
    if (!device_->runs_gpu_code()) return no_gpu_code(device_->name());
    Resolved *k = nullptr;
    if (Status s = kernel_of(d.module, d.kernel, &k); s != adsmSuccess) return s;
    if (d.params != k->sizes.size())
        return fail(adsmErrorInvalidValue, "kernel '%s' has %zu parameters, %u declared", d.kernel, k->sizes.size(),
                    d.params);
    std::vector<uint32_t> sizes(d.sizes, d.sizes + d.params);
    for (uint32_t i = 0; i < d.params; ++i)
        if (k->sizes[i] != kUnknownParamSize && k->sizes[i] != sizes[i])
            return fail(adsmErrorInvalidValue, "kernel '%s': parameter %u has %u bytes, %u declared", d.kernel, i,
                        k->sizes[i], sizes[i]);
    if (k->info && k->info->param_sizes == sizes) return adsmSuccess;  // known, or declared alike before
    if (k->info)
        return fail(adsmErrorInvalidValue, "kernel '%s': its parameters were declared with other sizes before",
                    d.kernel);
    adsmKernel_t handle;
    if (Status s = kernels().add_module_function(d.kernel, k->fn, sizes, &handle); s != adsmSuccess) return s;
    k->info = kernels().get(handle);
    return adsmSuccess;
}

Status Worker::gpu_kernel(const remote::LaunchBody &l, const KernelInfo **out) {
    Resolved *k = nullptr;
    if (Status s = kernel_of(l.module, l.kernel, &k); s != adsmSuccess) return s;
    if (!k->info)
        return fail(adsmErrorInvalidLaunch,
                    "kernel '%s': the %s driver says how many parameters it has, not their sizes (a module that is not "
                    "SPIR-V), and the client declared none",
                    l.kernel, device_->name());
    *out = k->info;
    return check_arguments(**out, l);
}

Status Worker::launch(const remote::LaunchBody &l) {
    const KernelInfo *k = nullptr;
    if (l.module && !device_->runs_gpu_code()) return no_gpu_code(device_->name());
    Status s = device_->runs_gpu_code() ? gpu_kernel(l, &k) : registered_kernel(l, &k);
    if (s != adsmSuccess) return s;
    StreamId id;
    if (Status st = streams_.get(*device_, l.stream, &id); st != adsmSuccess) return st;
    return device_->launch(id, launch_of(*k, l));
}

Status Worker::handle(const remote::Request &r, remote::Reply *reply) {
    using remote::Op;
    if (r.header.op != Op::attach && !device_) return fail(adsmErrorInvalidValue, "no window attached");
    const remote::RangeBody &range = r.body.range;
    // The staging copy is named by the window's addresses: the back-end
    // finds it behind them (its host mirror).
    void *staged = reinterpret_cast<void *>(range.addr);
    switch (r.header.op) {
    case Op::attach: return attach(r.body.attach.window_base, r.body.attach.window_size, reply);
    case Op::commit: return commit(range.addr, range.len);
    case Op::decommit: decommit(range.addr, range.len); return adsmSuccess;
    case Op::fill: return device_->fill(r.body.fill.addr, static_cast<int>(r.body.fill.value), r.body.fill.len);
    case Op::push: return device_->copy_to_device(range.addr, staged, range.len);
    case Op::pull: return device_->copy_to_host(staged, range.addr, range.len);
    case Op::module: return module_part(r.body.module);
    case Op::function: {
        Resolved *k = nullptr;
        const char *name = r.body.function.kernel;
        if (Status s = kernel_of(r.body.function.module, name, &k); s != adsmSuccess) return s;
        if (k->sizes.size() > remote::kMaxParams)
            return fail(adsmErrorNotSupported, "kernel '%s' has %zu parameters; a remote device takes %u", name,
                        k->sizes.size(), remote::kMaxParams);
        // (An unknown size goes as such: the client has the program state it.)
        reply->params = static_cast<uint32_t>(k->sizes.size());
        std::copy(k->sizes.begin(), k->sizes.end(), reply->param_sizes);
        return adsmSuccess;
    }
    case Op::declare: return declare(r.body.declare);
    case Op::launch: return launch(r.body.launch);
    case Op::sync: {
        StreamId id;
        return streams_.find(r.body.sync.stream, &id) ? device_->synchronize(id) : adsmSuccess;
    }
    case Op::bye: return adsmSuccess;
    }
    return fail(adsmErrorInvalidValue, "unknown operation");
}

void Worker::send_spans(int socket, uint64_t seq) {
    if (!device_) return;
    std::unique_ptr<remote::SpanBatch> batch(new remote::SpanBatch{});
    batch->magic = remote::kWireMagic;
    batch->status = remote::kSpans;
    batch->seq = seq;
    auto flush = [&] {
        if (batch->count)
            (void)send(socket, batch.get(), offsetof(remote::SpanBatch, spans) + batch->count * sizeof(remote::WireSpan),
                       MSG_NOSIGNAL);
        batch->count = 0;
    };
    device_->take_kernel_spans([&](const char *name, uint32_t stream, uint64_t start, uint64_t end, bool failed) {
        remote::WireSpan &w = batch->spans[batch->count];
        w = {};
        snprintf(w.kernel, sizeof w.kernel, "%s", name);
        w.stream = streams_.client_number(stream);
        w.failed = failed;
        w.start_ago_ns = start;  // the server's clock too: the session makes them relative
        w.end_ago_ns = end;
        if (++batch->count == remote::kSpansPerBatch) flush();
    });
    flush();
}

}  // namespace

int run_worker(const Options &options) {
    // Gone with the server's thread that serves this client, whatever ends it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) return 1;
    signal(SIGPIPE, SIG_IGN);
    std::string error;
    if (!load_kernel_libraries(options.kernels, &error)) {
        fprintf(stderr, "adsm-device-server (device process): %s\n", error.c_str());
        return 2;
    }
    Worker worker(options);
    std::unique_ptr<uint8_t[]> msg(new uint8_t[sizeof(remote::Request)]);
    for (;;) {
        ssize_t got = recv(kWorkerSocketFd, msg.get(), sizeof(remote::Request), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;  // the server closed it: the client is gone
        remote::Request r;
        remote::Reply reply{};
        reply.magic = remote::kWireMagic;
        // The server checked it against the client's memory already.
        Status s = remote::parse_request(msg.get(), static_cast<size_t>(got), &r);
        reply.seq = r.header.seq;
        if (s == adsmSuccess) s = worker.handle(r, &reply);
        if (r.header.op == remote::Op::sync && (r.body.sync.flags & remote::kSendSpans)) {
            worker.send_spans(kWorkerSocketFd, r.header.seq);
        }
        reply.status = s;
        if (s != adsmSuccess) snprintf(reply.message, sizeof reply.message, "%s", last_detail());
        if (send(kWorkerSocketFd, &reply, sizeof reply, MSG_NOSIGNAL) < 0) return 0;
    }
}

}  // namespace adsm::server
