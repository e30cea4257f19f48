// The sigaction family.  The runtime's fault handler must stay installed
// for SIGSEGV (protected shared pages) and the kernel guard's signals, yet
// programs that install their own handlers (language runtimes, crash
// reporters) must keep working.  So for a signal the runtime owns, the
// application's handler is recorded as the one the runtime chains to for
// faults that are not its own, and the application sees exactly what it
// installed.  Every other signal goes straight to the C library.
//
// No signal mask the program sets blocks SIGSEGV: a thread with it blocked
// cannot take the runtime's fault, and the kernel ends the process at the
// first closed page of shared memory it touches (xz -T2 died so under
// rolling: liblzma starts its worker threads with every signal blocked).
// Nothing else changes: a fault of the program's own with SIGSEGV blocked
// ends the process either way.  The masks it reads back lack SIGSEGV.
//
// The collector's stop signal is the exception: once the collector holds it,
// a change of its action is refused (EINVAL, SIG_ERR) with a warning, since
// the program's handler in place of the collector's would leave every
// collection waiting for threads that never stop.  Before that (a program
// that never collects) it is the program's like any other signal.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include "interpose/interceptor.h"
#include "interpose/signal_masks.h"
#include "os/deferred_signals.h"
#include "os/fault_signals.h"
#include "os/safe_line.h"
#include "os/stack_switches.h"
#include "os/stop_signal.h"

using adsm::interpose::fault_signal_open;

namespace {

// True (errno set) when the program asks to change the action of the stop
// signal while the collector holds it.
bool stop_signal_refused(int sig, bool changes) {
    if (sig != adsm::os::kStopSignal || !changes) return false;
    if (!adsm::os::stop_signal_taken.load(std::memory_order_acquire)) return false;
    adsm::os::SafeLine()
        .str("adsm warning: the program's new action for signal ")
        .dec(static_cast<uint64_t>(sig))
        .str(" (SIGPWR) is refused: the garbage collector stops threads with it")
        .write_stderr();
    errno = EINVAL;
    return true;
}

// signal() can only report a plain handler; an SA_SIGINFO one is returned as
// the same address, as the C library does (the field is a union).
sighandler_t handler_of(const struct sigaction &sa) {
    return (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<sighandler_t>(reinterpret_cast<void *>(sa.sa_sigaction))
                                      : sa.sa_handler;
}

// signal() in the flavour given by flags: BSD (restart, signal blocked in the
// handler) or System V (reset to default on delivery, not blocked).
bool app_signal(int sig, sighandler_t h, int flags, sighandler_t *old_handler) {
    if (stop_signal_refused(sig, true)) {
        *old_handler = SIG_ERR;
        return true;
    }
    struct sigaction sa = {}, old = {};
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    if (!(flags & SA_NODEFER)) sigaddset(&sa.sa_mask, sig);
    int result = 0;
    if (!adsm::os::app_sigaction(sig, &sa, &old) && !adsm::os::deferring_sigaction(sig, &sa, &old, &result))
        return false;
    *old_handler = result == 0 ? handler_of(old) : SIG_ERR;
    return true;
}

}  // namespace

INTERCEPTOR(int, sigaction, int sig, const struct sigaction *act, struct sigaction *old) {
    if (stop_signal_refused(sig, act != nullptr)) return -1;
    struct sigaction open;  // a handler's mask is a signal mask too
    if (act && sigismember(&act->sa_mask, SIGSEGV) == 1) {
        open = *act;
        sigdelset(&open.sa_mask, SIGSEGV);
        act = &open;
    }
    if (adsm::os::app_sigaction(sig, act, old)) return 0;
    if (int result; adsm::os::deferring_sigaction(sig, act, old, &result)) return result;
    return REAL(sigaction)(sig, act, old);
}

INTERCEPTOR(sighandler_t, signal, int sig, sighandler_t handler) {
    sighandler_t old;
    if (app_signal(sig, handler, SA_RESTART, &old)) return old;
    return REAL(signal)(sig, handler);
}

INTERCEPTOR(sighandler_t, bsd_signal, int sig, sighandler_t handler) {
    sighandler_t old;
    if (app_signal(sig, handler, SA_RESTART, &old)) return old;
    return REAL(bsd_signal)(sig, handler);
}

INTERCEPTOR(sighandler_t, sysv_signal, int sig, sighandler_t handler) {
    sighandler_t old;
    if (app_signal(sig, handler, SA_RESETHAND | SA_NODEFER, &old)) return old;
    return REAL(sysv_signal)(sig, handler);
}

// The C library's other names for these, each of which calls its own
// sigaction inside it, past this one: a program built in a strict standard
// mode (-std=c99) calls signal() as __sysv_signal, and zstd's crash handler
// so replaced the runtime's fault handler, ending it at its first fault on
// shared memory.
INTERCEPTOR(sighandler_t, __sysv_signal, int sig, sighandler_t handler) { return sysv_signal(sig, handler); }
INTERCEPTOR(int, __sigaction, int sig, const struct sigaction *act, struct sigaction *old) {
    return sigaction(sig, act, old);
}
INTERCEPTOR(sighandler_t, ssignal, int sig, sighandler_t handler) { return signal(sig, handler); }

// System V's: a handler (reset to nothing blocked in it) and the signal
// unblocked, or the signal blocked (SIG_HOLD); the disposition before, or
// SIG_HOLD where the signal was blocked.  Through the functions above and
// the masks' below.
INTERCEPTOR(sighandler_t, sigset, int sig, sighandler_t disp) {
    sigset_t one, before;
    struct sigaction old = {};
    if (sigemptyset(&one) < 0 || sigaddset(&one, sig) < 0) return SIG_ERR;
    if (disp == SIG_HOLD) {
        if (sigaction(sig, nullptr, &old) < 0 || sigprocmask(SIG_BLOCK, &one, &before) < 0) return SIG_ERR;
    } else {
        struct sigaction sa = {};
        sa.sa_handler = disp;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, &old) < 0 || sigprocmask(SIG_UNBLOCK, &one, &before) < 0) return SIG_ERR;
    }
    return sigismember(&before, sig) == 1 ? SIG_HOLD : handler_of(old);
}
INTERCEPTOR(int, sigignore, int sig) {
    struct sigaction sa = {};
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, nullptr);
}

// ---------------------------------------------------------------- signal masks

INTERCEPTOR(int, sigprocmask, int how, const sigset_t *set, sigset_t *old) {
    sigset_t copy;
    return REAL(sigprocmask)(how, how == SIG_UNBLOCK ? set : fault_signal_open(set, &copy), old);
}

INTERCEPTOR(int, pthread_sigmask, int how, const sigset_t *set, sigset_t *old) {
    sigset_t copy;
    return REAL(pthread_sigmask)(how, how == SIG_UNBLOCK ? set : fault_signal_open(set, &copy), old);
}

// The mask a context switch puts in place (set by the C library with a
// system call of its own), and a new thread's first one: coroutine
// libraries and thread pools may block every signal there.  The program's
// context loses SIGSEGV where it is, as a mask it reads back does.
// (Counted: os/stack_switches.h.)
INTERCEPTOR(int, setcontext, const ucontext_t *ucp) {
    if (ucp) sigdelset(const_cast<sigset_t *>(&ucp->uc_sigmask), SIGSEGV);
    adsm::os::note_stack_switch();
    return REAL(setcontext)(ucp);
}
INTERCEPTOR(int, swapcontext, ucontext_t *oucp, const ucontext_t *ucp) {
    if (ucp) sigdelset(const_cast<sigset_t *>(&ucp->uc_sigmask), SIGSEGV);
    adsm::os::note_stack_switch();
    return REAL(swapcontext)(oucp, ucp);
}
INTERCEPTOR(int, pthread_attr_setsigmask_np, pthread_attr_t *attr, const sigset_t *set) {
    sigset_t copy;
    return REAL(pthread_attr_setsigmask_np)(attr, fault_signal_open(set, &copy));
}

// The handlers that run while the thread waits run under this mask.
INTERCEPTOR(int, sigsuspend, const sigset_t *mask) {
    sigset_t copy;
    return REAL(sigsuspend)(fault_signal_open(mask, &copy));
}
INTERCEPTOR(int, __sigsuspend, const sigset_t *mask) { return sigsuspend(mask); }

// System V's and BSD's mask calls, which set the mask inside the C library.
INTERCEPTOR(int, sighold, int sig) {
    sigset_t one;
    if (sigemptyset(&one) < 0 || sigaddset(&one, sig) < 0) return -1;
    return sigprocmask(SIG_BLOCK, &one, nullptr);
}
// (A mask of the first 32 signals, one bit each.  Old names, deprecated
// in the headers, that programs still call.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr int kSigsegvBit = 1 << (SIGSEGV - 1);
INTERCEPTOR(int, sigblock, int mask) { return REAL(sigblock)(mask & ~kSigsegvBit); }
INTERCEPTOR(int, sigsetmask, int mask) { return REAL(sigsetmask)(mask & ~kSigsegvBit); }
// BSD's sigpause waits under a mask of these bits.  (C++'s sigpause is
// X/Open's, __xpg_sigpause, which takes one signal off the mask: the C
// library's sigpause is defined here by its symbol's name.)  The C
// library's own name takes either.
namespace adsm::interpose::real {
ADSM_REAL_FUNCTION(bsd_sigpause, "sigpause");
}
extern "C" __attribute__((visibility("default"))) int bsd_sigpause(int mask) __asm__("sigpause");
extern "C" int bsd_sigpause(int mask) {
    auto real = reinterpret_cast<int (*)(int)>(adsm::os::real(adsm::interpose::real::bsd_sigpause));
    return real(mask & ~kSigsegvBit);
}
INTERCEPTOR(int, __sigpause, int sig_or_mask, int is_sig) {
    return REAL(__sigpause)(is_sig ? sig_or_mask : sig_or_mask & ~kSigsegvBit, is_sig);
}
#pragma GCC diagnostic pop
