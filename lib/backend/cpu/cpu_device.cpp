#include "backend/cpu/cpu_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/clock.h"
#include "os/error_text.h"
#include "os/vm.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {
namespace {

class DirectResolver final : public exec::KernelResolver {
public:
    adsmKernelFunc resolve(const exec::KernelRecord &rec, std::string *) override {
        return reinterpret_cast<adsmKernelFunc>(rec.host_fn);
    }
};

unsigned worker_count(const Config &c) {
    if (c.sim_workers) return c.sim_workers;
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

}  // namespace

CpuDevice::CpuDevice(const Config &config)
    : config_(config),
      capacity_(static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) {}

CpuDevice::~CpuDevice() {
    if (executor_) {
        executor_->stop();
        if (thread_.joinable()) thread_.join();
    }
}

Status CpuDevice::attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *) {
    void *view = os::map_shared(host_fd, 0, size, PROT_READ | PROT_WRITE);
    if (view == MAP_FAILED)
        return fail(adsmErrorInitialization, "cpu: cannot map the window: %s", os::error_text(errno));
    void *ch = mmap(nullptr, sizeof(exec::Channel), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ch == MAP_FAILED) return fail(adsmErrorInitialization, "cpu: cannot allocate the command channel");
    base_ = base;
    size_ = size;
    view_ = static_cast<uint8_t *>(view);
    channel_ = static_cast<exec::Channel *>(ch);
    exec::channel_init(channel_, base, size);
    host_ = std::make_unique<exec::ChannelHost>(channel_, /*needs_module=*/false);
    return adsmSuccess;
}

Status CpuDevice::commit(uintptr_t, uint64_t bytes) {
    uint64_t now = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (now > capacity_) {
        used_.fetch_sub(bytes, std::memory_order_relaxed);
        return fail(adsmErrorMemoryAllocation, "cpu device memory (host RAM, %llu bytes) exhausted",
                    static_cast<unsigned long long>(capacity_));
    }
    return adsmSuccess;
}

void CpuDevice::decommit(uintptr_t, uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

Status CpuDevice::check_range(uintptr_t dev, size_t n) const {
    if (dev < base_ || dev - base_ > size_ || n > size_ - (dev - base_))
        return fail(adsmErrorInvalidValue, "[%p, +%zu) is not device memory", reinterpret_cast<void *>(dev), n);
    return adsmSuccess;
}

Status CpuDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    uint64_t t0 = trace::enabled() ? os::now_ns() : 0;
    memmove(view_ + (dev - base_), src, n);
    if (t0) trace::copy(true, n, dev, t0, false);
    stats().transfer(true, n);
    return adsmSuccess;
}

Status CpuDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    uint64_t t0 = trace::enabled() ? os::now_ns() : 0;
    memmove(dst, view_ + (dev - base_), n);
    if (t0) trace::copy(false, n, dev, t0, false);
    stats().transfer(false, n);
    return adsmSuccess;
}

Status CpuDevice::fill(uintptr_t dev, int value, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    memset(view_ + (dev - base_), value, n);
    stats().add(Counter::device_fills);
    return adsmSuccess;
}

Status CpuDevice::create_stream(StreamId *out) { return host_->create_stream(out); }
void CpuDevice::destroy_stream(StreamId id) { host_->destroy_stream(id); }

void CpuDevice::start_executor() {
    resolver_ = std::make_unique<DirectResolver>();
    executor_ = std::make_unique<exec::Executor>(channel_, resolver_.get(), worker_count(config_));
    thread_ = std::thread([this] { executor_->run(); });
}

Status CpuDevice::launch(StreamId id, const LaunchDesc &l) {
    std::call_once(started_, [this] { start_executor(); });
    return host_->launch(id, l, 0, [] { return true; });
}

Status CpuDevice::synchronize(StreamId id) { return host_->synchronize(id, [] { return true; }); }

void CpuDevice::trace_kernels() {
    if (host_) host_->trace_kernels();
}

void CpuDevice::take_kernel_spans(const KernelSpanSeen &seen) {
    if (host_) host_->take_kernel_spans(seen);
}

}  // namespace adsm
