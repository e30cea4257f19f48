#include "os/fault_signals.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "os/deferred_signals.h"
#include "os/futex_lock.h"
#include "os/raw_syscall.h"
#include "os/real_libc.h"

namespace adsm::os {
namespace {

constexpr int kMaxHooks = 4;
std::atomic<FaultHook> g_hooks[kMaxHooks];
std::atomic<int> g_nhooks{0};

// The handler the application wants for a signal we own: two copies and an
// index, so the signal handler always reads a complete one.
struct ChainTarget {
    struct sigaction slot[2] = {};
    std::atomic<int> current{0};
    std::atomic<bool> owned{false};
    bool alt_stack = false;
};
// Constant-initialized: zeroes need no code at load, and a table written
// at load cost a page fault per page in every process under the preload.
constinit ChainTarget g_chain[NSIG];
FutexLock g_chain_lock;  // writers only
// Held across a fork, so that the child's one thread finds the program's
// fault handlers whole and the lock free.
__attribute__((constructor)) void guard_chain_across_fork() {
    pthread_atfork([] { g_chain_lock.lock(); }, [] { g_chain_lock.unlock(); }, [] { g_chain_lock.unlock(); });
}
std::mutex g_install_mu;

void handler(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    int n = g_nhooks.load(std::memory_order_acquire);
    ++fault_handler_depth;
    for (int i = 0; i < n; ++i) {
        FaultHook h = g_hooks[i].load(std::memory_order_acquire);
        if (h && h(sig, info, uctx)) {
            --fault_handler_depth;
            errno = saved_errno;
            return;
        }
    }
    // (The program's handler may jump away: it runs outside the count.)
    --fault_handler_depth;
    chain_fault(sig, info, uctx);
    errno = saved_errno;
}

}  // namespace

int install_fault_handler(int sig, bool on_alt_stack) {
    if (sig <= 0 || sig >= NSIG) return -EINVAL;
    on_alt_stack |= kLeavesAltStack;
    std::lock_guard<std::mutex> lock(g_install_mu);
    ChainTarget &t = g_chain[sig];
    bool owned = t.owned.load(std::memory_order_acquire);
    if (owned && (t.alt_stack || !on_alt_stack)) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | (on_alt_stack ? SA_ONSTACK : 0);
    // While the handler runs (and holds the runtime's locks), no
    // asynchronous signal may interrupt it: a handler of the program's that
    // touched shared memory would fault and wait for those locks.  Faults
    // stay open, the handler's own included.
    sa.sa_mask = async_signals();
    // Re-installing (to add the alternate stack) keeps the chain target.
    struct sigaction displaced;
    if (real_sigaction(sig, &sa, &displaced) != 0) return -errno;
    if (!owned) {
        t.slot[0] = displaced;
        t.current.store(0, std::memory_order_release);
        t.owned.store(true, std::memory_order_release);
    }
    t.alt_stack = on_alt_stack;
    // A program started with the signal blocked (exec keeps the mask) would
    // be ended by the kernel at the first fault the runtime owns.  (Preloaded,
    // the program's later masks leave SIGSEGV open too.)
    sigset_t fault;
    sigemptyset(&fault);
    sigaddset(&fault, sig);
    pthread_sigmask(SIG_UNBLOCK, &fault, nullptr);
    return 0;
}

bool add_fault_hook(FaultHook hook) {
    std::lock_guard<std::mutex> lock(g_install_mu);
    int n = g_nhooks.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i)
        if (g_hooks[i].load(std::memory_order_relaxed) == hook) return true;
    if (n == kMaxHooks) return false;
    g_hooks[n].store(hook, std::memory_order_release);
    g_nhooks.store(n + 1, std::memory_order_release);
    return true;
}

bool app_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (sig <= 0 || sig >= NSIG) return false;
    ChainTarget &t = g_chain[sig];
    if (!t.owned.load(std::memory_order_acquire)) return false;
    FutexGuard g(g_chain_lock);
    int cur = t.current.load(std::memory_order_relaxed);
    if (old) *old = t.slot[cur];
    if (act) {
        t.slot[1 - cur] = *act;
        t.current.store(1 - cur, std::memory_order_release);
    }
    return true;
}

bool run_program_handler(const struct sigaction &act, int sig, siginfo_t *info, void *uctx) {
    if (act.sa_flags & SA_SIGINFO) {
        if (!act.sa_sigaction) return false;
        act.sa_sigaction(sig, info, uctx);
        return true;
    }
    if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN || !act.sa_handler) return false;
    act.sa_handler(sig);
    return true;
}

// Gives sig back its default action; with raise_now, takes it at once.
static void take_default_action(int sig, bool raise_now) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    real_sigaction(sig, &dfl, nullptr);
    g_chain[sig].owned.store(false, std::memory_order_release);
    if (!raise_now) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
}

// The program's handler for sig run as the kernel would have run it: its
// action given back first if it asked for that (SA_RESETHAND), and with
// the mask the kernel would have given it (the mask where the fault was,
// its sa_mask, and sig itself unless SA_NODEFER), which is also the mask it
// keeps if it jumps away instead of returning.  False (and nothing done)
// where the program has no handler.
static bool run_chained(int sig, const struct sigaction &act, siginfo_t *info, void *uctx) {
    const bool handles = (act.sa_flags & SA_SIGINFO) ? act.sa_sigaction != nullptr
                                                     : act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN;
    if (!handles) return false;
    ChainTarget &t = g_chain[sig];
    if (act.sa_flags & SA_RESETHAND) {
        FutexGuard g(g_chain_lock);
        const int next = 1 - t.current.load(std::memory_order_relaxed);
        memset(&t.slot[next], 0, sizeof t.slot[next]);
        t.slot[next].sa_handler = SIG_DFL;
        t.current.store(next, std::memory_order_release);
    }
    sigset_t mask, ours;
    if (uctx) mask = static_cast<ucontext_t *>(uctx)->uc_sigmask;
    else raw_syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &mask, _NSIG / 8);
    sigorset(&mask, &mask, &act.sa_mask);
    if (!(act.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, &ours, _NSIG / 8);
    run_program_handler(act, sig, info, uctx);
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &ours, nullptr, _NSIG / 8);
    return true;
}

void chain_fault(int sig, siginfo_t *info, void *uctx) {
    ChainTarget &t = g_chain[sig];
    const struct sigaction act = t.slot[t.current.load(std::memory_order_acquire)];
    if (run_chained(sig, act, info, uctx)) return;
    // A fault raised by the hardware repeats when the instruction restarts;
    // one sent by kill() must be raised again, unless the program ignores
    // it (as the kernel would have; a hardware fault cannot be ignored).
    const bool sent = info == nullptr || info->si_code <= 0;
    if (sent && !(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_IGN) return;
    take_default_action(sig, sent);
}

void deliver_bus_error(void *addr, void *uctx) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGBUS;
    info.si_code = BUS_ADRERR;
    info.si_addr = addr;
    struct sigaction act;
    ChainTarget &t = g_chain[SIGBUS];
    if (t.owned.load(std::memory_order_acquire)) act = t.slot[t.current.load(std::memory_order_acquire)];
    else if (real_sigaction(SIGBUS, nullptr, &act) != 0) act.sa_handler = SIG_DFL, act.sa_flags = 0;
    // The program's handler may jump away: it runs as if outside ours.
    const int depth = fault_handler_depth;
    fault_handler_depth = 0;
    bool returned = t.owned.load(std::memory_order_acquire) ? run_chained(SIGBUS, act, &info, uctx)
                                                            : run_program_handler(act, SIGBUS, &info, uctx);
    fault_handler_depth = depth;
    if (returned) return;
    // Ignoring a bus error would retry the access forever: the default
    // action, as the kernel gives a hardware one.
    take_default_action(SIGBUS, true);
}

}  // namespace adsm::os
