// Holds back asynchronous signals for a scope, so that a handler the
// program installed cannot run while this thread is inside the C library's
// allocator on the runtime's behalf: a handler that allocates would wait
// forever for the allocator's lock.  Signals that report a fault of this
// thread (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) stay open: the runtime
// relies on them, and blocking them would kill the process.  What was held
// back is delivered when the scope ends.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <initializer_list>

namespace adsm::os {

// Every signal but those that report a fault of the thread itself.
inline sigset_t async_signals() {
    sigset_t set;
    sigfillset(&set);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&set, s);
    return set;
}

class DeferredSignals {
public:
    DeferredSignals() {
        sigset_t async = async_signals();
        pthread_sigmask(SIG_BLOCK, &async, &old_);
    }
    ~DeferredSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
    DeferredSignals(const DeferredSignals &) = delete;
    DeferredSignals &operator=(const DeferredSignals &) = delete;

private:
    sigset_t old_;
};

}  // namespace adsm::os
