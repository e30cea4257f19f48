#include "backend/exec/kernel_guard.h"

#include <signal.h>

#include <mutex>

#include "os/fault_signals.h"

namespace adsm::exec {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local GuardFrame *tls_frame = nullptr;

bool guard_hook(int sig, siginfo_t *info, void *) {
    GuardFrame *f = tls_frame;
    if (!f) return false;
    tls_frame = nullptr;
    f->signo = sig;
    f->addr = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
    // The jump leaves the handler without its return path: the thread would
    // count as inside it for ever after, and code asking (a GPU driver call,
    // page making) would take the handler's slow, restricted way.
    os::fault_handler_depth = f->handler_depth;
    siglongjmp(f->env, 1);
}

}  // namespace

void install_kernel_guard() {
    static std::once_flag once;
    std::call_once(once, [] {
        os::add_fault_hook(guard_hook);
        // Kernel threads have alternate stacks (GridRunner), so a kernel that
        // overflows its stack is still reported.
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) os::install_fault_handler(sig, true);
    });
}

void arm_guard(GuardFrame *frame) {
    frame->handler_depth = os::fault_handler_depth;
    tls_frame = frame;
}
void disarm_guard() { tls_frame = nullptr; }

}  // namespace adsm::exec
