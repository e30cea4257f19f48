#include "api/runtime.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <pthread.h>
#include <unistd.h>

#include "api/exit_reports.h"
#include "api/preload.h"
#include "backend/device_process.h"
#include "memory/fault_engine.h"
#include "os/call_stack.h"
#include "os/error_text.h"
#include "os/fork_handshake.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "os/write_hold.h"
#include "support/inside.h"
#include "support/log.h"
#include "support/profile.h"
#include "support/trace.h"

namespace adsm {
namespace {

std::once_flag g_once;
std::atomic<Runtime *> g_runtime{nullptr};
Status g_status = adsmErrorInitialization;
std::string *g_failure = nullptr;

std::atomic<bool> g_forked{false};
// The process the runtime started in: a vfork child shares its memory
// under another pid, without the fork handlers ever running.
std::atomic<pid_t> g_pid{0};

// The granularity of GPU virtual-memory mappings (2 MiB on current NVIDIA GPUs).
constexpr uint64_t kWindowAlign = 2ull << 20;
constexpr uint64_t kMinWindow = 64ull << 20;  // (the least ADSM_VA_SIZE takes)

// Kernels that ran but were never waited for are drawn too.
void trace_kernels_at_exit() {
    if (Runtime *rt = g_runtime.load(); rt && !g_forked.load())
        for (auto &d : rt->devices) d->trace_kernels();
}

// The forking thread's: its child copies the shared objects while it waits,
// and the other threads' writes to them wait too (t_holding).
thread_local os::ForkHandshake t_fork;
thread_local bool t_holding = false;

RacePolicy race_policy(const std::string &s) {
    return s == "warn" ? RacePolicy::warn : s == "abort" ? RacePolicy::abort : RacePolicy::sync;
}

// A fork's hold closes the objects to writes, which then fault: under a
// protocol that takes no faults the handler comes with the first fork.
bool serve_faults(Runtime &rt) {
    if (rt.faults_served.load()) return true;
    static std::mutex installing;
    std::lock_guard<std::mutex> g(installing);
    if (rt.faults_served.load()) return true;
    if (install_fault_engine(&rt.table, rt.protocol.get(), rt.manager.get(), race_policy(rt.config.on_race)) !=
        adsmSuccess) {
        ADSM_LOG(warn, "fork: %s; the parent's other threads go on while the child copies the shared objects, and "
                       "what they write may reach it", last_detail());
        return false;
    }
    rt.faults_served.store(true);
    return true;
}

void fork_prepare() {
    Runtime *rt = g_runtime.load();
    if (!rt || g_forked.load() || inside_runtime()) return;
    Inside in;
    if (!rt->manager->before_fork()) return;
    t_fork.prepare();
    t_holding = serve_faults(*rt) && rt->manager->hold_writes();
}

void fork_parent() {
    if (t_fork.parent_wait() == os::ForkHandshake::Wait::stopped)
        ADSM_LOG(warn, "fork: the child was stopped before it had copied the shared objects; the parent goes on, and "
                       "what it writes now may reach the child's copy");
    if (t_holding) {
        t_holding = false;
        Inside in;
        if (Runtime *rt = g_runtime.load()) rt->manager->resume_writes();
    }
}

void fork_child() {
    Runtime *rt = g_runtime.load();
    // A child of a child has nothing left to convert: its parent did it.
    if (!rt || g_forked.exchange(true)) return;
    os::write_hold::reset_after_fork();
    t_holding = false;
    t_fork.child_started();
    gc::tls_cache = nullptr;  // the child's one thread: its pages are not the collector's here
    trace::disable_in_child();
    profile::disable_in_child();
    for (os::UffdTracker *t : {rt->tracker.get(), rt->gc_tracker.get()})
        if (t) t->detach_after_fork();
    rt->manager->become_fork_child();
    t_fork.child_done();
}

// A write tracker over the window, or none (*out null) when the kernel has
// none to give: an error if the setting `required` asks for one (its name
// in the message), else a note in the log saying what `without` means.
Status new_tracker(Runtime &rt, const char *required, const char *without, std::unique_ptr<os::UffdTracker> *out) {
    const char *why = "";
    if (!os::UffdTracker::available(&why)) {
        if (required) return fail(adsmErrorInitialization, "%s: %s", required, why);
        ADSM_LOG(info, "%s: %s", without, why);
        return adsmSuccess;
    }
    auto t = std::make_unique<os::UffdTracker>();
    const char *step = "";
    if (int e = t->init(rt.space.base(), rt.space.size(), &step, rt.space.host_fd(), rt.space.alias(rt.space.base()))) {
        if (required) return fail(adsmErrorInitialization, "%s: %s: %s", required, step, os::error_text(e));
        ADSM_LOG(info, "%s: %s: %s", without, step, os::error_text(e));
        return adsmSuccess;
    }
    *out = std::move(t);
    return adsmSuccess;
}

// Which tracker the configuration asks for, given what the kernel offers.
Status choose_tracker(Runtime &rt) {
    const ProtocolInfo *info = find_protocol(rt.config.protocol);
    if (!info || !info->tracks_writes || all_integrated(rt.devices)) return adsmSuccess;
    const std::string &want = rt.config.dirty_tracking;
    if (want == "mprotect") return adsmSuccess;
    if (want == "auto")
        for (auto &d : rt.devices)
            if (d->fast_link()) {
                ADSM_LOG(info, "%s: its link moves a page faster than a tracked write costs: writes are found by "
                         "protection faults (ADSM_DIRTY_TRACKING=uffd tracks every page)", d->name());
                return adsmSuccess;
            }
    return new_tracker(rt, want == "uffd" ? "ADSM_DIRTY_TRACKING=uffd" : nullptr, "write tracking by protection faults",
                       &rt.tracker);
}

Status start(Runtime **out) {
    if (in_device_process())
        return fail(adsmErrorNotSupported, "the adsm API cannot be called from inside a kernel");
    auto rt = std::make_unique<Runtime>();
    if (Status s = parse_config(os::env, &rt->config);
        s != adsmSuccess)
        return s;
    set_log_level(rt->config.log_level);
    if (!os::page_size_supported()) return fail(adsmErrorInitialization, "only 4 KiB pages are supported");
    if (Status s = create_devices(rt->config, &rt->devices); s != adsmSuccess) return s;
    rt->device = rt->devices.front().get();
    std::vector<Device *> devices;
    uint64_t capacity = 0;
    bool pins = false;
    for (auto &d : rt->devices) {
        devices.push_back(d.get());
        capacity += d->capacity();
        pins |= d->pins_host_memory();
    }

    uint64_t window = rt->config.va_size ? rt->config.va_size : fit_address_limit(default_window_size(capacity));
    window = (window + kWindowAlign - 1) / kWindowAlign * kWindowAlign;  // whole GPU pages
    // A GPU driver owns device addresses: it reserves the window first and
    // the host mirror goes over its reservation (mapping the host first
    // makes the driver pick another range).  The first device does: the
    // other GPUs of its driver share its reservation (gpu/gpu_set.h).
    uintptr_t reserved = 0;
    if (Status s = rt->device->reserve_window(rt->config.va_base, window, &reserved); s != adsmSuccess) return s;
    if (reserved && reserved != rt->config.va_base)
        ADSM_LOG(info, "the %s driver placed the shared window at %p, not at ADSM_VA_BASE %p", rt->device->name(),
                 reinterpret_cast<void *>(reserved), reinterpret_cast<void *>(rt->config.va_base));
    rt->space.keep_pages(pins);
    if (Status s = rt->space.init(reserved ? reserved : rt->config.va_base, window, reserved != 0); s != adsmSuccess)
        return s;
    if (Status s = rt->table.init(rt->space.base(), rt->space.size()); s != adsmSuccess) return s;
    // Every device backs the whole window with its own memory: an object's
    // device copy is at its address on whichever device holds it.
    for (Device *d : devices)
        if (Status s = d->attach_window(rt->space.base(), rt->space.size(), rt->space.host_fd(),
                                        rt->space.alias(rt->space.base()));
            s != adsmSuccess)
            return s;
    if (Status s = choose_tracker(*rt); s != adsmSuccess) return s;
    ProtocolEnv env{rt->device, &rt->config, rt->tracker.get(), devices, &rt->kernels_expected};
    if (Status s = make_protocol(rt->config.protocol, env, &rt->protocol); s != adsmSuccess) return s;
    rt->manager = std::make_unique<Manager>(rt->config, rt->space, rt->table, devices, *rt->protocol);
    if (!rt->config.trace_file.empty()) {
        if (Status s = trace::start(rt->config.trace_file.c_str(), device_names(*rt).c_str()); s != adsmSuccess) return s;
        trace::before_writing(trace_kernels_at_exit);
    }
    // (Names fault sites in race reports and the profile; without it they
    // say "(unknown code)".)
    os::load_unwinder();
    // The last step that can fail: the fault handler keeps what it is given
    // here for good, and a failed start frees all of it.  (Chaos mode's
    // cycles under a protocol that takes no faults hold the program's
    // writes with them: Manager::chaos_cycle.)
    if (rt->protocol->uses_faults() || rt->config.chaos_every > 0) {
        if (Status s = install_fault_engine(&rt->table, rt->protocol.get(), rt->manager.get(),
                                            race_policy(rt->config.on_race));
            s != adsmSuccess)
            return s;
        rt->faults_served.store(true);
    }
    if (rt->config.profile_top) profile::start(rt->config.profile_top);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    preload::g_chaos.store(rt->config.chaos_every > 0, std::memory_order_relaxed);
    // (Chaos mode's releases stand for kernel calls at any moment.)
    if (rt->config.chaos_every > 0) expect_kernels(*rt);
    preload::g_window_size.store(rt->space.size(), std::memory_order_relaxed);
    preload::g_window_base.store(rt->space.base(), std::memory_order_release);

    ADSM_LOG(info, "runtime started: device %s, protocol %s, dirty tracking %s, window %p + %llu bytes",
             device_names(*rt).c_str(), rt->protocol->name(), dirty_tracking_name(*rt), reinterpret_cast<void *>(rt->space.base()),
             static_cast<unsigned long long>(rt->space.size()));
    *out = rt.release();
    return adsmSuccess;
}

// The write tracker minor collections read: the protocol's, shared, or one
// of the collector's own.  Registered only now: a window registered for
// write tracking loses the kernel's fault-around, which programs that never
// collect need not pay.
Status collector_write_tracking(Runtime &rt, os::UffdTracker **out) {
    *out = nullptr;
    const std::string &want = rt.config.gc_generational;
    if (want == "off") return adsmSuccess;
    const char *required = want == "on" ? "ADSM_GC_GENERATIONAL=on" : nullptr;
    const char *without = "collector: full collections only";
    if (!rt.tracker && !rt.gc_tracker) {
        if (Status s = new_tracker(rt, required, without, &rt.gc_tracker); s != adsmSuccess || !rt.gc_tracker) return s;
    }
    os::UffdTracker *t = rt.tracker ? rt.tracker.get() : rt.gc_tracker.get();
    if (int e = t->add_reader(os::UffdTracker::kCollector)) {
        if (required) return fail(adsmErrorInitialization, "%s: a write log: %s", required, os::error_text(e));
        ADSM_LOG(info, "%s: no memory for a write log: %s", without, os::error_text(e));
        return adsmSuccess;
    }
    rt.manager->set_write_log(t);
    *out = t;
    return adsmSuccess;
}
}  // namespace

void preload::fork_prepare() { adsm::fork_prepare(); }
void preload::fork_child() { adsm::fork_child(); }
void preload::fork_parent() { adsm::fork_parent(); }

Status collector(Runtime &rt, gc::Collector **out) {
    if (gc::Collector *c = rt.collector.load(std::memory_order_acquire)) {
        *out = c;
        return adsmSuccess;
    }
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (gc::Collector *c = rt.collector.load(std::memory_order_acquire)) {
        *out = c;
        return adsmSuccess;
    }
    gc::GcConfig gc;
    gc.max_heap = rt.config.gc_max_heap;
    gc.trigger = rt.config.gc_trigger;
    gc.growth = rt.config.gc_growth;
    gc.markers = rt.config.gc_markers;
    gc.automatic = rt.config.gc_auto;
    gc.full_every = rt.config.gc_full_every;
    gc.concurrent = rt.config.gc_concurrent;
    if (Status s = collector_write_tracking(rt, &gc.writes); s != adsmSuccess) return s;
    auto *c = new gc::Collector(*rt.manager, rt.table, rt.space, gc);
    if (Status s = c->init(); s != adsmSuccess) return s;  // (c is leaked: it may have started threads)
    rt.collector.store(c, std::memory_order_release);
    *out = c;
    return adsmSuccess;
}

std::string device_names(const Runtime &rt) {
    std::string names;
    for (auto &d : rt.devices) names += (names.empty() ? "" : ",") + std::string(d->name());
    return names;
}

Runtime *started_runtime() { return g_runtime.load(std::memory_order_acquire); }

void note_api_launch(Runtime &rt) {
    if (rt.api_launches.load(std::memory_order_relaxed) || rt.api_launches.exchange(true, std::memory_order_acq_rel))
        return;
    rt.manager->adopt_program_mallocs();
}

const char *start_failure() { return g_runtime.load(std::memory_order_acquire) || !g_failure ? nullptr : g_failure->c_str(); }
bool forked_child() { return g_forked.load(std::memory_order_relaxed); }
bool in_runtime_process() {
    return started_runtime() && !forked_child() && getpid() == g_pid.load(std::memory_order_relaxed);
}

const char *dirty_tracking_name(const Runtime &rt) {
    if (!rt.protocol->uses_faults()) return "-";
    return rt.tracker ? "uffd" : "mprotect";
}

// Under an address-space limit (RLIMIT_AS: `ulimit -v`, a batch system's
// memory limit) a window of the default size cannot be mapped at all, and
// the runtime did not start.  The window is mapped about three times over
// (reserved with the host mirror on it, the mirror's alias, a simulated
// device's memory): it takes a sixth of what the process may still map,
// half of that room, and leaves the rest to the program.  A size set with
// ADSM_VA_SIZE is kept, and fails as it must.
uint64_t fit_address_limit(uint64_t window) {
    const uint64_t room = os::address_room();
    if (room == UINT64_MAX) return window;
    const uint64_t fits = std::max<uint64_t>(room / 6 / kWindowAlign * kWindowAlign, kMinWindow);
    if (fits >= window) return window;
    ADSM_LOG(info, "the shared window is %llu MiB, not %llu: the process may map %llu MiB more (RLIMIT_AS, `ulimit -v`)",
             static_cast<unsigned long long>(fits >> 20), static_cast<unsigned long long>(window >> 20),
             static_cast<unsigned long long>(room >> 20));
    return fits;
}

uint64_t default_window_size(uint64_t capacity) {
    const uint64_t min = 64ull << 30, max = 16ull << 40, align = 2ull << 20;
    uint64_t w = capacity > max / 4 ? max : capacity * 4;
    if (w < min) w = min;
    return (w + align - 1) / align * align;
}

Status runtime(Runtime **out) {
    if (g_forked.load(std::memory_order_relaxed))
        return fail(adsmErrorNotSupported,
                    "adsm is not available in a process forked from one that used it; its shared memory is ordinary "
                    "memory here (exec a program to use adsm again)");
    if (Runtime *rt = g_runtime.load(std::memory_order_acquire)) {
        *out = rt;
        return adsmSuccess;
    }
    std::call_once(g_once, [] {
        Runtime *rt = nullptr;
        g_status = start(&rt);
        if (g_status == adsmSuccess) {
            g_pid.store(getpid(), std::memory_order_relaxed);
            g_runtime.store(rt, std::memory_order_release);
            if (rt->config.stats) atexit(print_stats);
        } else {
            g_failure = new std::string(last_detail());
            // (In a device process the code calling is a kernel library's
            // constructor, run because its module was loaded to find its
            // kernels: expected, and not the program's error.)
            if (!in_device_process()) ADSM_LOG(error, "cannot start: %s", g_failure->c_str());
        }
    });
    if (Runtime *rt = g_runtime.load(std::memory_order_acquire)) {
        *out = rt;
        return adsmSuccess;
    }
    return fail(g_status, "%s", g_failure ? g_failure->c_str() : "the runtime failed to start");
}

}  // namespace adsm
