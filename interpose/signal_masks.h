// No signal mask the program sets blocks SIGSEGV (signals.cpp): a thread
// with it blocked cannot take the runtime's fault, and the kernel ends the
// process at the first closed page of shared memory it touches.  The masks
// a call waits under (sigsuspend's, ppoll's, pselect's, the epoll waits')
// are masks too: a handler that runs while the thread waits runs under it.
#pragma once

#include <signal.h>

namespace adsm::interpose {

// `set` without SIGSEGV (in `copy` when it had it).
inline const sigset_t *fault_signal_open(const sigset_t *set, sigset_t *copy) {
    if (!set || sigismember(set, SIGSEGV) != 1) return set;
    *copy = *set;
    sigdelset(copy, SIGSEGV);
    return copy;
}

}  // namespace adsm::interpose
