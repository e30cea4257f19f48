#include "memory/fault_engine.h"

#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "memory/context.h"
#include "memory/manager.h"
#include "memory/region_table.h"
#include "os/call_stack.h"
#include "os/clock.h"
#include "os/error_text.h"
#include "os/fault_signals.h"
#include "os/safe_line.h"
#include "os/write_hold.h"
#include "protocols/protocol.h"
#include "support/driver_thread.h"
#include "support/inside.h"
#include "support/log.h"
#include "support/profile.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {
namespace {

RegionTable *g_table = nullptr;
Protocol *g_protocol = nullptr;
Manager *g_manager = nullptr;
RacePolicy g_policy = RacePolicy::sync;
std::atomic<bool> g_warned{false};

bool is_write(void *uctx) {
#if defined(__x86_64__)
    // Bit 1 of the page-fault error code: the access was a write.
    return static_cast<ucontext_t *>(uctx)->uc_mcontext.gregs[REG_ERR] & 2;
#else
    (void)uctx;
    return true;  // unknown: treat as a write, which is always safe
#endif
}

void report_race(const Region &r, uintptr_t addr, bool write, void *uctx, const char *action) {
    char where[384];
    os::describe_fault_site(uctx, 4, where, sizeof where);
    os::SafeLine()
        .str("adsm warn: the CPU ")
        .str(write ? "wrote " : "read ")
        .hex(addr)
        .str(" (")
        .dec(addr - r.host)
        .str(" bytes into a ")
        .dec(r.size)
        .str("-byte shared object) while a kernel launched by its context may still use it, between adsmCall and "
             "adsmSync; ")
        .str(action)
        .str(" (ADSM_ON_RACE=sync|warn|abort); the access was at ")
        .str(where)
        .write_stderr();
}

// The data of the block could not be brought in (why: the thread's
// detail); `level` and `then` say what follows.
void say_unserved(const char *level, uintptr_t addr, bool write, const char *then) {
    os::SafeLine()
        .str(level)
        .str(": the CPU ")
        .str(write ? "wrote " : "read ")
        .hex(addr)
        .str(" in shared memory that could not be made accessible with its current data: ")
        .str(last_detail())
        .str(then)
        .write_stderr();
}

// At a first try, it is tried once more (a driver may fail a copy for a
// moment, as for want of staging memory).
void report_retried_fault(uintptr_t addr, bool write) { say_unserved("adsm warn", addr, write, "; trying once more"); }

// Nor at the second: the access must not run on what the host copy holds.
// The program gets SIGBUS, as for a mapped file whose page could not be
// read.
void report_failed_fault(uintptr_t addr, bool write, void *uctx) {
    stats().add(Counter::failed_faults);
    say_unserved("adsm error", addr, write, "; raising SIGBUS");
    os::deliver_bus_error(reinterpret_cast<void *>(addr), uctx);
}

// The last write fault a hold may have caused that this thread retried
// (handle, below).
struct UnheldWrite {
    uintptr_t at;
    uint32_t holds_ended;
};
__attribute__((tls_model("initial-exec"))) thread_local UnheldWrite t_unheld_write = {0, 0};

Protocol::FaultOutcome handle(Region *r, uintptr_t a, void *uctx) {
    uint64_t t0 = os::now_ns();
    // The program's own write waits here while a fork child copies the
    // objects (os/write_hold.h); the runtime's, inside its own work, goes on.
    const uint32_t holds_ended = os::write_hold::holds_ended();
    std::optional<os::write_hold::Change> change;
    if (!inside_runtime()) change.emplace();
    Inside in;  // what the handler allocates stays private
    profile::Cause cause(uctx);
    bool write = is_write(uctx);
    Context *c = r->owner();
    // (A replicated object's kernels read their own device's copy: the CPU
    // writing the host's is no race.  Nor is an access made inside a call or
    // sync of the object's own context, whose lock this thread holds: a GPU
    // driver reading the program's environment strings during a launch.  It
    // cannot wait for that lock, and is served as it is.)
    if (c && r->home == Home::device && c->holds(*r) && !holds_context_lock(*c)) {
        if (!c->kernels_may_run()) {
            // Every call since the sync failed to launch: no kernel to race,
            // and the objects come back as at a sync.
            g_manager->settle(c);
        } else {
            stats().add(Counter::race_faults);
            if (on_driver_thread() && g_policy != RacePolicy::warn) {
                // Waiting here would wait for ever: the kernels' completion
                // waits for this very function.
                report_race(*r, a, write, uctx,
                            "aborting: the access is a host function's that the GPU driver runs (a CUDA graph's host "
                            "node), where the runtime can neither wait for the kernels nor fetch what they wrote");
                abort();
            }
            switch (g_policy) {
            case RacePolicy::abort:
                report_race(*r, a, write, uctx, "aborting");
                abort();
            case RacePolicy::warn:
                if (!g_warned.exchange(true))
                    report_race(*r, a, write, uctx, "going on (further races are not reported)");
                break;
            case RacePolicy::sync:
                if (!g_warned.exchange(true))
                    report_race(*r, a, write, uctx, "waiting for the kernels first (this warning is shown once)");
                g_manager->settle(c);
                break;
            }
        }
    }
    // The program starts using this part of the object: pinning its mirror
    // now makes its pages in one call (and saves a fault per page) where
    // pinning them at the first copy would pin pages the CPU made one fault
    // at a time.
    bool first = !r->touched.load(std::memory_order_relaxed) && !r->touched.exchange(true, std::memory_order_acq_rel);
    Manager::MirrorRange fresh = g_manager->ready_mirror(*r, a, first);
    Protocol::FaultOutcome outcome = g_protocol->on_fault(*r, a, write);
    // A write to an object whose protocol takes no faults, closed by a
    // hold (a fork's, a chaos cycle's): writable again once the hold ended
    // (it did while the change waited, or since the fault), or now if the
    // hold did not stop this write (the runtime's own, the collector's with
    // the world stopped).  A thread that ran late into the handler may find
    // every hold since its fault over: it tries once more, and only a second
    // fault at the same place with no hold ended between is the program's.
    if (outcome == Protocol::FaultOutcome::not_mine && write && r->live.load() && r->contains_host(a)) {
        if (r->writes_held.load())
            outcome = g_protocol->resume_writes(*r) == adsmSuccess ? Protocol::FaultOutcome::retry
                                                                   : Protocol::FaultOutcome::failed;
        else if (os::write_hold::holds_ended() != holds_ended || t_unheld_write.at != a ||
                 t_unheld_write.holds_ended != holds_ended)
            outcome = Protocol::FaultOutcome::retry;
        t_unheld_write = {outcome == Protocol::FaultOutcome::retry ? a : 0, holds_ended};
    }
    if (outcome == Protocol::FaultOutcome::retry) g_manager->enter_mirror(fresh);
    uint64_t t1 = os::now_ns();
    stats().add(Counter::fault_ns, t1 - t0);
    if (trace::enabled()) trace::record(write ? trace::Kind::write_fault : trace::Kind::read_fault, t0, t1, a);
    return outcome;
}

bool shared_memory_fault(int sig, siginfo_t *info, void *uctx) {
    if (sig != SIGSEGV || !info) return false;
    uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    Region *r = g_table->find(a);
    if (!r || r->kind == RegionKind::device || !r->contains_host(a)) return false;
    // (Not on a program's small alternate stack, where the handler may run.)
    struct Fault {
        Region *r;
        uintptr_t a;
        void *uctx;
        Protocol::FaultOutcome outcome;
    } f{r, a, uctx, Protocol::FaultOutcome::not_mine};
    auto run = [](void *p) {
        auto *f = static_cast<Fault *>(p);
        f->outcome = handle(f->r, f->a, f->uctx);
    };
    os::run_off_alt_stack(uctx, run, &f);
    // A failed fault changed nothing the second try depends on: the block
    // is as it was, closed, with its data where it was.
    if (f.outcome == Protocol::FaultOutcome::failed) {
        report_retried_fault(a, is_write(uctx));
        os::run_off_alt_stack(uctx, run, &f);
        if (f.outcome != Protocol::FaultOutcome::failed) stats().add(Counter::retried_faults);
    }
    Protocol::FaultOutcome outcome = f.outcome;
    // Outside handle()'s scope: the program's SIGBUS handler may jump away.
    if (outcome == Protocol::FaultOutcome::failed) report_failed_fault(a, is_write(uctx), uctx);
    return outcome != Protocol::FaultOutcome::not_mine;
}

}  // namespace

Status install_fault_engine(RegionTable *table, Protocol *protocol, Manager *manager, RacePolicy policy) {
    g_table = table;
    g_protocol = protocol;
    g_manager = manager;
    g_policy = policy;
    // The hook last: it stays for good, and a failed start frees what the
    // globals point to.  (The handler alone passes every fault on.)
    if (int r = os::install_fault_handler(SIGSEGV); r != 0)
        return fail(adsmErrorInitialization, "cannot install the SIGSEGV handler: %s", os::error_text(-r));
    if (!os::add_fault_hook(shared_memory_fault)) return fail(adsmErrorInitialization, "no room for the fault hook");
    return adsmSuccess;
}

}  // namespace adsm
