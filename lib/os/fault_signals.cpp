#include "os/fault_signals.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace adsm::os {
namespace {

constexpr int kMaxHooks = 4;
std::atomic<FaultHook> g_hooks[kMaxHooks];
std::atomic<int> g_nhooks{0};

struct Previous {
    struct sigaction action;
    std::atomic<bool> installed{false};
};
Previous g_prev[NSIG];
std::mutex g_install_mu;

void handler(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    int n = g_nhooks.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        FaultHook h = g_hooks[i].load(std::memory_order_acquire);
        if (h && h(sig, info, uctx)) {
            errno = saved_errno;
            return;
        }
    }
    chain_fault(sig, info, uctx);
    errno = saved_errno;
}

}  // namespace

int install_fault_handler(int sig) {
    if (sig <= 0 || sig >= NSIG) return -EINVAL;
    std::lock_guard<std::mutex> lock(g_install_mu);
    if (g_prev[sig].installed.load(std::memory_order_acquire)) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &g_prev[sig].action) != 0) return -errno;
    g_prev[sig].installed.store(true, std::memory_order_release);
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

void chain_fault(int sig, siginfo_t *info, void *uctx) {
    const struct sigaction &prev = g_prev[sig].action;
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction) {
            prev.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
        prev.sa_handler(sig);
        return;
    }
    // Default action.  A fault raised by the hardware repeats when the
    // instruction restarts; one sent by kill() must be raised again.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    if (info == nullptr || info->si_code <= 0) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
        raise(sig);
    }
}

void ensure_alt_stack() {
    stack_t cur;
    if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return;
    const size_t size = 64 * 1024;
    void *mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    stack_t ss;
    ss.ss_sp = mem;
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, nullptr) != 0) munmap(mem, size);
    // The stack lives as long as the thread; threads that get one run kernels
    // and live as long as the device.
}

}  // namespace adsm::os
