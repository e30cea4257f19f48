#include "os/deferred_signals.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/fault_signals.h"
#include "os/futex_lock.h"
#include "os/raw_syscall.h"
#include "os/real_libc.h"

namespace adsm::os {

__thread DeferralState tls_deferral __attribute__((tls_model("initial-exec"))) = {0, 0};

namespace {

// The program's action for a signal whose handler runs through the
// trampoline: two copies and an index, so the trampoline always reads a
// complete one.
struct ProgramAction {
    struct sigaction slot[2] = {};
    std::atomic<int> current{0};
    std::atomic<bool> wrapped{false};
};
constinit ProgramAction g_actions[NSIG];  // (as g_chain in fault_signals.cpp: no code at load)
FutexLock g_actions_lock;  // writers only, with signals held back

uint64_t bit(int sig) { return uint64_t{1} << (sig - 1); }

bool has_handler(const struct sigaction &sa) {
    if (sa.sa_flags & SA_SIGINFO) return sa.sa_sigaction != nullptr;
    return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN && sa.sa_handler != nullptr;
}

void trampoline(int sig, siginfo_t *info, void *uctx);

// With g_actions_lock held: what the program asked for becomes what the
// kernel does, through the trampoline when it is a handler.
int install(int sig, const struct sigaction &act, struct sigaction *displaced) {
    ProgramAction &a = g_actions[sig];
    if (!has_handler(act)) {
        if (real_sigaction(sig, &act, displaced) != 0) return -1;
        a.wrapped.store(false, std::memory_order_release);
        return 0;
    }
    struct sigaction real = act;
    real.sa_sigaction = trampoline;
    // The trampoline resets the action itself when it runs the handler: the
    // kernel resetting it at a delivery the trampoline holds back would
    // leave the signal to the default action when it comes again.
    real.sa_flags = (act.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    // The action is in place before the kernel can run the trampoline for it.
    int was = a.current.load(std::memory_order_relaxed);
    a.slot[1 - was] = act;
    a.current.store(1 - was, std::memory_order_release);
    if (real_sigaction(sig, &real, displaced) != 0) {
        int e = errno;
        a.current.store(was, std::memory_order_release);
        errno = e;
        return -1;
    }
    a.wrapped.store(true, std::memory_order_release);
    return 0;
}

void trampoline(int sig, siginfo_t *info, void *uctx) {
    if (tls_deferral.depth > 0) {
        int saved_errno = errno;
        // Blocked for the rest of the critical section: now (a handler with
        // SA_NODEFER would take it again at once) and in the context this
        // handler returns to.  Then queued again as it came.
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_BLOCK, &one, nullptr);
        sigaddset(&static_cast<ucontext_t *>(uctx)->uc_sigmask, sig);
        tls_deferral.held |= bit(sig);
        raw_syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, info);
        errno = saved_errno;
        return;
    }
    ProgramAction &a = g_actions[sig];
    struct sigaction act = a.slot[a.current.load(std::memory_order_acquire)];
    if (act.sa_flags & SA_RESETHAND) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        DeferredSignals hold;
        FutexGuard g(g_actions_lock);
        install(sig, dfl, nullptr);
    }
    run_program_handler(act, sig, info, uctx);
}

// A fork's child has only the forking thread: the program's actions must
// be whole there and their lock free, whatever other threads were doing
// (a child that asked for an action before its exec waited for ever).  The
// lock is held across the fork with the trampoline holding signals back,
// as everywhere else it is held.
void actions_before_fork() {
    ++tls_deferral.depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_actions_lock.lock();
}
void actions_after_fork() {
    g_actions_lock.unlock();
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (--tls_deferral.depth == 0 && tls_deferral.held) release_held_signals();
}

// Handlers installed before the runtime was loaded (by another library's
// constructor) go through the trampoline as well.
__attribute__((constructor(102))) void wrap_installed_handlers() {
    pthread_atfork(actions_before_fork, actions_after_fork, actions_after_fork);
    for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction cur;
        if (!deferrable(sig) || real_sigaction(sig, nullptr, &cur) != 0 || !has_handler(cur)) continue;
        int result;
        deferring_sigaction(sig, &cur, nullptr, &result);
    }
}

}  // namespace

bool deferrable(int sig) {
    if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP) return false;
    // The C library's own signals (thread cancellation, set*id) lie
    // between the standard and the real-time ones; it refuses them.
    if (sig > SIGSYS && sig < SIGRTMIN) return false;
    sigset_t async = async_signals();
    return sigismember(&async, sig) == 1;
}

bool deferring_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *result) {
    if (!deferrable(sig)) return false;
    DeferredSignals hold;
    FutexGuard g(g_actions_lock);
    ProgramAction &a = g_actions[sig];
    bool wrapped = a.wrapped.load(std::memory_order_relaxed);
    if (!act && !wrapped) return false;  // a query of an action the runtime never replaced
    struct sigaction before = a.slot[a.current.load(std::memory_order_relaxed)];
    struct sigaction displaced;
    *result = 0;
    if (act) *result = install(sig, *act, &displaced);
    if (*result == 0 && old) *old = wrapped ? before : displaced;
    return true;
}

void release_held_signals() {
    sigset_t set;
    sigemptyset(&set);
    uint64_t held = tls_deferral.held;
    tls_deferral.held = 0;
    for (int sig = 1; sig < NSIG && held; ++sig)
        if (held & bit(sig)) {
            sigaddset(&set, sig);
            held &= ~bit(sig);
        }
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace adsm::os
