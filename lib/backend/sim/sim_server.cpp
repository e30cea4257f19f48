// The sim device process.  The host starts this program again with
// ADSM_SIM_SERVER set; the constructor below takes over before main() and
// never returns.  The process maps device memory at the window's addresses
// and runs kernels there, so host pointers mean nothing to them and shared
// pointers mean exactly what they mean on the CPU.  It exits when the host
// closes the socket (host exit or crash).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/code_location.h"
#include "backend/device_process.h"
#include "backend/exec/channel.h"
#include "backend/exec/executor.h"
#include "os/error_text.h"
#include "os/fault_signals.h"
#include "os/futex.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "support/config.h"

namespace adsm {
namespace {

class ModuleResolver final : public exec::KernelResolver {
public:
    adsmKernelFunc resolve(const exec::KernelRecord &rec, std::string *err) override {
        CodeLocation loc;
        loc.module_path = rec.module_path;
        loc.offset = rec.module_offset;
        loc.dev = rec.module_dev;
        loc.ino = rec.module_ino;
        return reinterpret_cast<adsmKernelFunc>(resolve_code(loc, err));
    }
};

// What kernels find at each window address: device memory where the host
// committed it, nothing elsewhere (a stray kernel faults, as on a GPU).
// Host-resident memory: the host mirror's own pages replace device memory
// at a range, so kernels read and write what the CPU does (over the link,
// on a real device).  An object that lives on another simulated device is
// reached the same way, through that device's memory (a peer link).
class WindowMapper final : public exec::MemoryMapper {
public:
    WindowMapper(uint64_t base, uint64_t size, int dev_fd, int host_fd, std::vector<int> peer_fds)
        : base_(base), size_(size), dev_fd_(dev_fd), host_fd_(host_fd), peer_fds_(std::move(peer_fds)) {}
    bool map(const exec::MapRecord &rec, std::string *err) override {
        if (rec.addr < base_ || rec.addr - base_ > size_ || rec.len > size_ - (rec.addr - base_) ||
            rec.addr % os::kPageSize || rec.len % os::kPageSize) {
            *err = "the range is not whole pages of the window";
            return false;
        }
        int fd = rec.source == exec::MapSource::host   ? host_fd_
                 : rec.source == exec::MapSource::peer ? (rec.peer < peer_fds_.size() ? peer_fds_[rec.peer] : -1)
                                                       : dev_fd_;
        if (fd < 0) {
            *err = "the device process has no descriptor for that memory";
            return false;
        }
        const bool none = rec.source == exec::MapSource::none;
        if (os::map_shared(fd, rec.addr - base_, rec.len, none ? PROT_NONE : PROT_READ | PROT_WRITE, rec.addr,
                           /*replace=*/true) == MAP_FAILED) {
            // Closing a range can fail only for want of a mapping to split
            // off (vm.max_map_count): it stays open, as before it was used,
            // and the kernels go on.
            if (none) return true;
            *err = os::error_text(errno);
            return false;
        }
        // A fresh mapping has no page tables: each page a kernel touches
        // would fault once in this process, though the host wrote it (a
        // range brought back to the device).  Those are mapped in one call.
        if (!none) os::populate_made_pages(reinterpret_cast<void *>(rec.addr), rec.len);
        return true;
    }

private:
    uint64_t base_, size_;
    int dev_fd_, host_fd_;
    std::vector<int> peer_fds_;
};

exec::Channel *g_channel = nullptr;

void note_death(const char *what) {
    if (g_channel && g_channel->death[0] == '\0') snprintf(g_channel->death, sizeof g_channel->death, "%s", what);
}

// Ways the device process can end that it can still describe.  The
// normal end (the host went away) is _exit and runs none of these.
void on_exit_call() { note_death("ended because code on the device called exit()"); }

void on_abort(int sig) {
    note_death("ended because code on the device called abort()");
    signal(sig, SIG_DFL);
    raise(sig);
}

bool on_unguarded_fault(int sig, siginfo_t *, void *) {
    // Reached only when no kernel was running on this thread.
    note_death(sig == SIGSEGV ? "crashed with SIGSEGV outside any kernel" : "crashed outside any kernel");
    return false;
}

[[noreturn]] void fail_start(exec::Channel *c, const char *fmt, const char *arg) {
    if (c) {
        snprintf(c->failure, sizeof c->failure, fmt, arg);
        c->state.store(static_cast<uint32_t>(exec::DeviceState::failed), std::memory_order_release);
        os::futex_wake(&c->state);
    }
    _exit(1);
}

unsigned worker_count() {
    Config c;
    if (parse_config(os::env, &c) == adsmSuccess && c.sim_workers) return c.sim_workers;
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

[[noreturn]] void serve(int sock, int channel_fd, int dev_fd, int host_fd, std::vector<int> peer_fds) {
    prctl(PR_SET_NAME, "adsm-sim-dev", 0, 0, 0);
    // Kernels that print should be seen even when stdout is a pipe.
    setvbuf(stdout, nullptr, _IOLBF, 0);

    void *ch = mmap(nullptr, sizeof(exec::Channel), PROT_READ | PROT_WRITE, MAP_SHARED, channel_fd, 0);
    if (ch == MAP_FAILED) _exit(1);
    auto *c = static_cast<exec::Channel *>(ch);
    if (c->magic != exec::kChannelMagic) fail_start(c, "%s", "channel layout mismatch between host and device");
    // Inaccessible until the host says what is committed (map_memory).
    void *win = os::map_shared(dev_fd, 0, c->window_size, PROT_NONE, c->window_base);
    if (win == MAP_FAILED) fail_start(c, "cannot map device memory at the window's address: %s", os::error_text(errno));
    // Both memories stay open: map_memory commands map ranges of them.
    fcntl(dev_fd, F_SETFD, FD_CLOEXEC);
    if (host_fd >= 0) fcntl(host_fd, F_SETFD, FD_CLOEXEC);
    for (int fd : peer_fds)
        if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    close(channel_fd);
    // Children that kernels may start must not keep the host's socket open.
    fcntl(sock, F_SETFD, FD_CLOEXEC);
    g_channel = c;
    atexit(on_exit_call);
    signal(SIGABRT, on_abort);

    static ModuleResolver resolver;
    static WindowMapper mapper(c->window_base, c->window_size, dev_fd, host_fd, std::move(peer_fds));
    static exec::Executor executor(c, &resolver, worker_count(), &mapper);
    os::add_fault_hook(on_unguarded_fault);  // after the kernel guard, which the executor installed
    std::thread([] { executor.run(); }).detach();

    c->state.store(static_cast<uint32_t>(exec::DeviceState::ready), std::memory_order_release);
    os::futex_wake(&c->state);

    // Live as long as the host: its end of the socket closes when it exits.
    for (;;) {
        struct pollfd p = {sock, POLLIN, 0};
        int r = poll(&p, 1, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        char buf[64];
        ssize_t n = read(sock, buf, sizeof buf);
        if (n <= 0 && !(n < 0 && errno == EINTR)) break;
    }
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

__attribute__((constructor(101))) void sim_device_entry() {
    const char *spec = os::env("ADSM_SIM_SERVER");
    if (!spec) return;
    int sock = -1, channel_fd = -1, dev_fd = -1, host_fd = -1, used = 0;
    if (sscanf(spec, "%d,%d,%d,%d%n", &sock, &channel_fd, &dev_fd, &host_fd, &used) != 4) _exit(1);
    // Then ":fd" for each simulated device of the process, in their order.
    std::vector<int> peer_fds;
    for (const char *p = spec + used; *p == ':';) {
        char *end;
        peer_fds.push_back(static_cast<int>(strtol(p + 1, &end, 10)));
        p = end;
    }
    mark_device_process();
    unsetenv("ADSM_SIM_SERVER");
    serve(sock, channel_fd, dev_fd, host_fd, std::move(peer_fds));
}

}  // namespace
}  // namespace adsm
