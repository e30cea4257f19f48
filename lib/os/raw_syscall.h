// System calls made without a C library function that another library may
// interpose (a sanitizer, a signal-chaining library, a tracer): for code
// whose calls must not reach that library's records of the process, such as
// a helper process's start on the host's memory (os/spawn) or the fault
// handler naming a code address (os/safe_symbolize).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

// Code that runs on a stack it borrowed, with the host's memory and
// thread-local storage: a sanitizer's bookkeeping would take its frames for
// the host thread's (AddressSanitizer's stack of a thread that never
// returns, ThreadSanitizer's shadow stack and clock), so it is left
// uninstrumented.
#if defined(__SANITIZE_ADDRESS__)
#define ADSM_ON_BORROWED_STACK __attribute__((no_sanitize("address")))
#elif defined(__SANITIZE_THREAD__)
#define ADSM_ON_BORROWED_STACK __attribute__((no_sanitize("thread")))
#else
#define ADSM_ON_BORROWED_STACK
#endif

namespace adsm::os {

// (syscall(2) is not interposed by any sanitizer.)
ADSM_ON_BORROWED_STACK inline long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0) {
    return syscall(nr, a, b, c, d);
}

}  // namespace adsm::os
