#include "backend/sim/sim_device.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <shared_mutex>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/code_location.h"
#include "backend/sim/server_env.h"
#include "os/clock.h"
#include "os/error_text.h"
#include "os/fault_injection.h"
#include "os/futex.h"
#include "os/held_fds.h"
#include "os/real_libc.h"
#include "os/spawn.h"
#include "os/vm.h"
#include "support/log.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {
namespace {
constexpr uint64_t kStartTimeoutNs = 30ull * 1000 * 1000 * 1000;
constexpr size_t kPunchThreshold = 64 * 1024;

bool socket_closed(int fd) {
    if (fd < 0) return true;
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    do {
        r = poll(&p, 1, 0);
    } while (r < 0 && errno == EINTR);
    // The device never writes to the socket: anything readable is the end.
    return r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}
}  // namespace

// Every simulated device of the process, in the order they were attached:
// a device process gets all their memories, to reach objects on its peers.
static std::mutex g_sims_mu;
static std::vector<SimDevice *> g_sims;

std::string SimDevice::death_reason() const {
    std::string why(channel_->death, strnlen(channel_->death, sizeof channel_->death));
    if (!why.empty()) return why;
    std::string kernel(channel_->running, strnlen(channel_->running, sizeof channel_->running));
    if (!kernel.empty()) return "ended while kernel '" + kernel + "' ran (it called _exit, or a signal killed the process)";
    return "ended unexpectedly (killed by a signal?)";
}

SimDevice::SimDevice(const Config &config)
    : config_(config),
      capacity_(config.sim_memory),
      link_(config.link_gbps, config.link_latency_us),
      launch_ns_(static_cast<uint64_t>(config.launch_us * 1000)),
      sync_copy_ns_(static_cast<uint64_t>(config.sync_copy_us * 1000)) {}

void SimDevice::end_device_process() {
    if (!running_.load()) return;
    if (int fd = pidfd_.load(); fd >= 0) (void)os::pidfd_kill(fd, SIGKILL);
    else if (pid_t pid = pid_.load(); pid > 0 && kill_by_pid_.load()) kill(pid, SIGKILL);
}

void SimDevice::keep_apart() {
    static std::atomic<uint64_t> groups{0};
    peer_group_ = groups.fetch_add(1) + 1;
}

SimDevice::~SimDevice() {
    {
        std::lock_guard<std::mutex> g(g_sims_mu);
        for (SimDevice *&d : g_sims)
            if (d == this) d = nullptr;
    }
    // Closing the socket ends the device process.
    os::close_held(sock_.exchange(-1));
    // Then what reaches device memory and the channel goes, and they with
    // it (a device server makes and ends one per client session).
    engine_.stop();
    host_.reset();
    if (dma_) munmap(dma_, size_);
    if (channel_) munmap(channel_, sizeof(exec::Channel));
    os::close_held(dev_fd_);
    os::close_held(channel_fd_);
    os::close_held(pidfd_.exchange(-1));
}

Status SimDevice::attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) {
    int fd = os::hold_fd(os::memfd_sized("adsm-sim-device-memory", size));
    if (fd < 0) return fail(adsmErrorInitialization, "sim: cannot create device memory: %s", os::error_text(-fd));
    void *dma = os::map_shared(fd, 0, size, PROT_READ | PROT_WRITE);
    if (dma == MAP_FAILED) {
        int e = errno;
        os::close_held(fd);
        return fail(adsmErrorInitialization, "sim: cannot map device memory: %s%s", os::error_text(e),
                    os::address_limit_note(e).c_str());
    }
    int cfd = os::hold_fd(os::memfd_sized("adsm-sim-channel", sizeof(exec::Channel)));
    if (cfd < 0) {
        munmap(dma, size);
        os::close_held(fd);
        return fail(adsmErrorInitialization, "sim: cannot create the command channel: %s", os::error_text(-cfd));
    }
    void *ch = os::map_shared(cfd, 0, sizeof(exec::Channel), PROT_READ | PROT_WRITE);
    if (ch == MAP_FAILED) {
        int e = errno;
        munmap(dma, size);
        os::close_held(fd);
        os::close_held(cfd);
        return fail(adsmErrorInitialization, "sim: cannot map the command channel: %s", os::error_text(e));
    }
    base_ = base;
    size_ = size;
    dev_fd_ = fd;
    host_fd_ = host_fd;
    {
        // (The place of one that ended is taken again: a device server
        // makes one per client session.)
        std::lock_guard<std::mutex> g(g_sims_mu);
        auto free_place = std::find(g_sims.begin(), g_sims.end(), nullptr);
        index_ = static_cast<uint32_t>(free_place - g_sims.begin());
        if (free_place == g_sims.end()) g_sims.push_back(this);
        else *free_place = this;
    }
    dma_ = static_cast<uint8_t *>(dma);
    channel_fd_ = cfd;
    channel_ = static_cast<exec::Channel *>(ch);
    exec::channel_init(channel_, base, size);
    host_ = std::make_unique<exec::ChannelHost>(channel_, /*needs_module=*/true);
    pins_.init(config_.sim_pin_us_per_mib, base, size, host_alias);
    return adsmSuccess;
}

Status SimDevice::commit(uintptr_t dev, uint64_t bytes) {
    if (Status s = check_range(dev, bytes); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_commit, "commit"); s != adsmSuccess) return s;
    uint64_t now = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (now > capacity_) {
        used_.fetch_sub(bytes, std::memory_order_relaxed);
        return fail(adsmErrorMemoryAllocation,
                    "sim device memory exhausted: %llu bytes requested, %llu of %llu bytes in use (ADSM_SIM_MEMORY)",
                    static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(now - bytes),
                    static_cast<unsigned long long>(capacity_));
    }
    pins_.committed(dev, bytes);
    note_committed(dev, bytes, true);
    return adsmSuccess;
}

void SimDevice::note_committed(uintptr_t dev, uint64_t bytes, bool committed) {
    uintptr_t lo = os::page_down(dev), hi = os::page_up(dev + bytes);
    std::lock_guard<std::mutex> g(ranges_mu_);
    if (committed) committed_.add(lo, hi);
    else committed_.remove(lo, hi);
    mark_unshown(lo, hi);
}

void SimDevice::decommit(uintptr_t dev, uint64_t bytes) {
    note_committed(dev, bytes, false);
    if (bytes >= kPunchThreshold) os::punch_hole(dev_fd_, dev - base_, bytes);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    pins_.decommitted(dev, bytes);
}

void SimDevice::show_unshown() {
    // Shows run one at a time, each sending what it planned before the
    // next plans: the device process takes the records in that order.
    // The ring may be full (a long kernel, many launches queued): only
    // launches wait for it then, never an allocation, which needs
    // ranges_mu_ alone.
    std::lock_guard<std::mutex> one(show_mu_);
    std::vector<exec::MapRecord> records;
    {
        std::lock_guard<std::mutex> g(ranges_mu_);
        unshown_.for_each([&](uintptr_t lo, uintptr_t hi) { plan(lo, hi, false, &records); });
        unshown_.clear();
    }
    send_records(records);  // (a process gone is told everything when the next starts)
    std::lock_guard<std::mutex> g(ranges_mu_);
    // Only now, and only if nothing came meanwhile: a launch that finds
    // nothing to show is queued after these records.
    if (unshown_.empty()) unshown_any_.store(false, std::memory_order_release);
}

void SimDevice::send_records(const std::vector<exec::MapRecord> &records) {
    // The first that cannot go means the process is gone: the rest would
    // not go either.
    for (const exec::MapRecord &r : records)
        if (host_->map_memory(r, [this] { return server_alive(); }) != adsmSuccess) return;
}

void SimDevice::mark_unshown(uintptr_t lo, uintptr_t hi) {
    // (A process that starts later is told of everything when it starts.)
    if (!running_.load()) return;
    unshown_.add(lo, hi);
    unshown_any_.store(true, std::memory_order_release);
}

void SimDevice::plan(uintptr_t lo, uintptr_t hi, bool fresh, std::vector<exec::MapRecord> *out) const {
    auto own = [&](uintptr_t b, uintptr_t e) {
        committed_.pieces(b, e, [&](uintptr_t pb, uintptr_t pe, bool committed) {
            if (committed || !fresh)
                out->push_back({pb, pe - pb, committed ? exec::MapSource::device : exec::MapSource::none, 0});
        });
    };
    // Mappings cover whole objects and never overlap.
    auto it = mappings_.upper_bound(lo);
    if (it != mappings_.begin() && std::prev(it)->first + std::prev(it)->second.bytes > lo) --it;
    for (uintptr_t x = lo; x < hi;) {
        if (it == mappings_.end() || it->first >= hi) {
            own(x, hi);
            return;
        }
        if (it->first > x) {
            own(x, it->first);
            x = it->first;
        }
        uintptr_t e = std::min<uintptr_t>(it->first + it->second.bytes, hi);
        out->push_back({x, e - x, it->second.source, it->second.peer});
        x = e;
        ++it;
    }
}

Status SimDevice::add_mapping(uintptr_t dev, const Mapping &m) {
    if (Status s = check_range(dev, m.bytes); s != adsmSuccess) return s;
    std::shared_lock<os::FutexRwLock> lock(server_mu_);
    {
        std::lock_guard<std::mutex> g(ranges_mu_);
        mappings_[dev] = m;
        mark_unshown(dev, dev + m.bytes);
    }
    // Told now, in order with the launches queued meanwhile.
    if (running_.load()) show_unshown();
    return adsmSuccess;
}

Status SimDevice::map_host_memory(uintptr_t dev, uint64_t bytes) {
    if (host_fd_ < 0) return fail(adsmErrorNotSupported, "sim: the host mirror cannot be shared with the device");
    return add_mapping(dev, {bytes, exec::MapSource::host, 0});
}

Status SimDevice::map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) {
    auto *peer = dynamic_cast<SimDevice *>(&holder);
    if (!peer) return Device::map_peer_memory(holder, dev, bytes);
    if (peer == this) return adsmSuccess;
    if (peer->peer_group_ != peer_group_)
        return fail(adsmErrorNotSupported, "sim: device %u is kept apart from device %u", peer->index_, index_);
    return add_mapping(dev, {bytes, exec::MapSource::peer, peer->index_});
}

void SimDevice::unmap_memory(uintptr_t dev, uint64_t bytes) {
    std::shared_lock<os::FutexRwLock> lock(server_mu_);
    {
        std::lock_guard<std::mutex> g(ranges_mu_);
        if (!mappings_.erase(dev)) return;
        mark_unshown(dev, dev + bytes);
    }
    if (running_.load()) show_unshown();
}

Status SimDevice::check_range(uintptr_t dev, size_t n) const {
    if (dev < base_ || dev - base_ > size_ || n > size_ - (dev - base_))
        return fail(adsmErrorInvalidValue, "[%p, +%zu) is not device memory", reinterpret_cast<void *>(dev), n);
    return adsmSuccess;
}

void SimDevice::transfer_done(Direction d, size_t n, uintptr_t dev, uint64_t start) {
    if (link_.enabled()) os::sleep_until_ns(link_.reserve(d, n, start));
    if (trace::enabled()) trace::copy(d == Direction::to_device, n, dev, start, false);
}

void SimDevice::sync_floor(uint64_t start) {
    if (sync_copy_ns_) os::sleep_until_ns(start + sync_copy_ns_);
}

Status SimDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the device"); s != adsmSuccess) return s;
    pins_.use_for_copy(src, n);
    uint64_t t0 = link_.enabled() || trace::enabled() || sync_copy_ns_ ? os::now_ns() : 0;
    copy_into_device_memory(dma_ + (dev - base_), src, n);
    transfer_done(Direction::to_device, n, dev, t0);
    sync_floor(t0);
    stats().transfer(true, n);
    return adsmSuccess;
}

Status SimDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to the host"); s != adsmSuccess) return s;
    pins_.use_for_copy(dst, n);
    uint64_t t0 = link_.enabled() || trace::enabled() || sync_copy_ns_ ? os::now_ns() : 0;
    os::real_memcpy(dst, dma_ + (dev - base_), n);
    transfer_done(Direction::to_host, n, dev, t0);
    sync_floor(t0);
    stats().transfer(false, n);
    return adsmSuccess;
}

bool SimDevice::can_copy_to(const Device &to) const {
    return dynamic_cast<const SimDevice *>(&to) != nullptr && &to != this;
}

Status SimDevice::copy_to_peer(Device &to, uintptr_t dev, size_t n) {
    auto *peer = dynamic_cast<SimDevice *>(&to);
    if (!peer || peer == this) return Device::copy_to_peer(to, dev, n);
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    if (Status s = peer->check_range(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "copy to another device"); s != adsmSuccess)
        return s;
    uint64_t t0 = link_.enabled() || peer->link_.enabled() ? os::now_ns() : 0;
    copy_into_device_memory(peer->dma_ + (dev - peer->base_), dma_ + (dev - base_), n);
    uint64_t end = 0;
    if (link_.enabled()) end = link_.reserve(Direction::to_host, n, t0);
    if (peer->link_.enabled()) end = std::max(end, peer->link_.reserve(Direction::to_device, n, t0));
    if (end) os::sleep_until_ns(end);
    stats().add(Counter::d2d_transfers);
    stats().add(Counter::d2d_bytes, n);
    return adsmSuccess;
}

Status SimDevice::fill(uintptr_t dev, int value, size_t n) {
    if (Status s = check_range(dev, n); s != adsmSuccess) return s;
    if (Status s = injected_failure(os::injection::Site::device_copy, "fill"); s != adsmSuccess) return s;
    // Zeroing a large range by giving its whole pages back costs nothing
    // when, as for fresh allocations, it holds none; the ends of a range
    // that is not whole pages (a calloc of 200,000 bytes) are written.  (A
    // memset made and cleared every page of each such calloc: five times a
    // malloc-heavy program's own time.)
    const uintptr_t lo = os::page_up(dev), hi = os::page_down(dev + n);
    if (value == 0 && hi > lo && hi - lo >= kPunchThreshold) {
        os::real_memset(dma_ + (dev - base_), 0, lo - dev);
        os::punch_hole(dev_fd_, lo - base_, hi - lo);
        os::real_memset(dma_ + (hi - base_), 0, dev + n - hi);
    } else {
        make_device_pages(dma_ + (dev - base_), n);
        os::real_memset(dma_ + (dev - base_), value, n);
    }
    stats().add(Counter::device_fills);
    return adsmSuccess;
}

uint64_t SimDevice::copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    pins_.use_for_copy(src, n);
    uint64_t t = engine_.submit(dma_ + (dev - base_), src, n, Direction::to_device, dev, done, arg);
    if (t == 0) return Device::copy_to_device_async(dev, src, n, done, arg);
    stats().transfer(true, n, true);
    return t;
}

uint64_t SimDevice::copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) {
    pins_.use_for_copy(dst, n);
    uint64_t t = engine_.submit(dst, dma_ + (dev - base_), n, Direction::to_host, dev, done, arg);
    if (t == 0) return Device::copy_to_host_async(dst, dev, n, done, arg);
    stats().transfer(false, n, true);
    return t;
}

Status SimDevice::wait_copies(uint64_t ticket) {
    if (engine_.running()) engine_.wait(std::min(ticket, engine_.last_ticket()));
    if (Status s = engine_.take_failure(); s != adsmSuccess) note_copy_failure(s);
    return take_copy_failure();
}

void SimDevice::detach_after_fork() {
    // Our copy of the socket must go, or the device process would outlive
    // the parent for as long as this child runs.
    running_.store(false);
    os::close_held(sock_.exchange(-1));
    if (dma_) munmap(dma_, size_);
    dma_ = nullptr;
    os::close_held(dev_fd_);
    os::close_held(channel_fd_);
    dev_fd_ = channel_fd_ = -1;
    os::close_held(pidfd_.exchange(-1));
}

Status SimDevice::create_stream(StreamId *out) { return host_->create_stream(out); }
void SimDevice::destroy_stream(StreamId id) { host_->destroy_stream(id); }

bool SimDevice::server_alive() { return !socket_closed(sock_.load()); }

void SimDevice::handle_death(uint32_t generation) {
    std::unique_lock<os::FutexRwLock> lock(server_mu_);
    if (!running_.load() || generation_.load() != generation) return;  // already handled
    running_.store(false);
    std::string why = "the sim device process " + death_reason() +
                      "; device memory is intact and the next launch starts a new device process";
    ADSM_LOG(error, "%s", why.c_str());
    host_->lost(generation, why.c_str());
    os::close_held(sock_.exchange(-1));
}

Status SimDevice::start_server() {
    if (running_.load()) return adsmSuccess;
    host_->reset();

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(adsmErrorNoDevice, "sim: socketpair failed: %s", os::error_text(errno));

    // The device is this very program started again in device mode.
    std::vector<int> keep = {sv[1], channel_fd_, dev_fd_};
    if (host_fd_ >= 0) keep.push_back(host_fd_);
    std::vector<int> peer_fds;
    {
        std::lock_guard<std::mutex> g(g_sims_mu);
        for (SimDevice *d : g_sims) {
            int fd = d && d->peer_group_ == peer_group_ ? d->dev_fd_ : -1;
            peer_fds.push_back(fd);
            if (d != this && fd >= 0) keep.push_back(fd);
        }
    }
    std::vector<std::string> env = server_environment(sv[1], channel_fd_, dev_fd_, host_fd_, peer_fds);
    std::vector<char *> envp;
    for (auto &s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    char arg0[] = "adsm-sim-device";
    char *argv[] = {arg0, nullptr};

    pid_t pid = 0;
    std::string program = main_program_path();
    int r = os::spawn_detached(program.c_str(), argv, envp.data(), keep.data(), static_cast<int>(keep.size()), &pid);
    close(sv[1]);
    if (r != 0) {
        close(sv[0]);
        return fail(adsmErrorNoDevice, "sim: cannot start the device process: %s", os::error_text(-r));
    }
    pid_.store(pid);

    uint64_t start = os::now_ns();
    for (;;) {
        uint32_t st = channel_->state.load(std::memory_order_acquire);
        if (st == static_cast<uint32_t>(exec::DeviceState::ready)) break;
        if (st == static_cast<uint32_t>(exec::DeviceState::failed)) {
            std::string why(channel_->failure);
            close(sv[0]);
            return fail(adsmErrorNoDevice, "sim: the device process failed to start: %s", why.c_str());
        }
        if (socket_closed(sv[0]) && channel_->state.load() != static_cast<uint32_t>(exec::DeviceState::ready)) {
            close(sv[0]);
            return fail(adsmErrorNoDevice, "sim: the device process %s during start-up", death_reason().c_str());
        }
        if (os::now_ns() - start > kStartTimeoutNs) {
            kill(pid, SIGKILL);
            close(sv[0]);
            return fail(adsmErrorNoDevice, "sim: the device process did not start within 30 s");
        }
        os::futex_wait(&channel_->state, st, 20ull * 1000 * 1000);
    }
    // Taken while the process is known alive: its end of the socket is open.
    // (Without one, the process ended already, or the kernel has no
    // pidfds: only then does its pid name it.)
    int pidfd = os::pidfd_of(pid);
    kill_by_pid_.store(pidfd == -ENOSYS);
    if (pidfd >= 0 && socket_closed(sv[0])) {
        close(pidfd);
        pidfd = -1;
    }
    os::close_held(pidfd_.exchange(os::hold_fd(pidfd)));
    sock_.store(os::hold_fd(sv[0]));
    generation_.fetch_add(1);
    running_.store(true);
    {
        // Ahead of any launch: the ring runs in order.  (What changes
        // meanwhile is marked unshown, and shown at the launch.)
        std::vector<exec::MapRecord> records;
        {
            std::lock_guard<std::mutex> g(ranges_mu_);
            plan(base_, base_ + size_, /*fresh=*/true, &records);
            unshown_.clear();
        }
        send_records(records);
    }
    ADSM_LOG(info, "sim device process %d started (window %p, %llu bytes)", pid, reinterpret_cast<void *>(base_),
             static_cast<unsigned long long>(size_));
    return adsmSuccess;
}

Status SimDevice::launch(StreamId id, const LaunchDesc &l) {
    for (;;) {
        {
            std::shared_lock<os::FutexRwLock> lock(server_mu_);
            if (running_.load()) {
                uint32_t gen = generation_.load();
                if (launch_ns_ && id < kLaunchSlots) done_not_before_[id].store(os::now_ns() + launch_ns_);
                if (unshown_any_.load(std::memory_order_acquire)) show_unshown();
                Status s = host_->launch(id, l, gen, [this] { return server_alive(); });
                if (s == adsmErrorDeviceLost) {
                    lock.unlock();
                    handle_death(gen);
                }
                return s;
            }
        }
        std::unique_lock<os::FutexRwLock> lock(server_mu_);
        if (Status s = start_server(); s != adsmSuccess) return s;
    }
}

void SimDevice::trace_kernels() {
    std::shared_lock<os::FutexRwLock> lock(server_mu_);
    if (host_) host_->trace_kernels();
}

void SimDevice::take_kernel_spans(const KernelSpanSeen &seen) {
    std::shared_lock<os::FutexRwLock> lock(server_mu_);
    if (host_) host_->take_kernel_spans(seen);
}

Status SimDevice::synchronize(StreamId id) { return synchronize(id, nullptr); }

Status SimDevice::synchronize(StreamId id, const std::function<void()> &waiting) {
    uint32_t gen;
    Status s;
    {
        std::shared_lock<os::FutexRwLock> lock(server_mu_);
        gen = generation_.load();
        s = host_->synchronize(id, [&] {
            if (waiting) waiting();
            return server_alive();
        });
    }
    // A GPU's launch round trip: the kernel is not seen done any sooner.
    if (launch_ns_ && id < kLaunchSlots) os::sleep_until_ns(done_not_before_[id].load());
    if (s == adsmErrorDeviceLost && running_.load() && !server_alive()) {
        std::string detail = last_detail();
        handle_death(gen);
        fail(adsmErrorDeviceLost, "%s: the sim device process %s", detail.c_str(), death_reason().c_str());
    }
    return s;
}

}  // namespace adsm
