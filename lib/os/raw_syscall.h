// System calls made without a C library function that another library may
// interpose (a sanitizer, a signal-chaining library, a tracer): for code
// whose calls must not reach that library's records of the process, such as
// a helper process's start on the host's memory (os/spawn) or the fault
// handler naming a code address (os/safe_symbolize).
#pragma once

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <type_traits>

#include "os/syscall_instruction.h"

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

// Returns what syscall(2) returns: the result, or -1 with errno set.  On
// x86-64 and AArch64 the instruction itself, so that the runtime's own
// system calls never reach the syscall function the preload interposes for
// the program (interpose/raw_syscalls.cpp); elsewhere that function, whose
// interposer passes every call that touches no shared memory straight on.
ADSM_ON_BORROWED_STACK inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
#ifdef ADSM_HAVE_SYSCALL_INSTRUCTION
    const long r = adsm_syscall_instruction(nr, a, b, c, d, e, f);
    if (static_cast<unsigned long>(r) > -4096UL) {
        errno = static_cast<int>(-r);
        return -1;
    }
    return r;
#else
    return syscall(nr, a, b, c, d, e, f);
#endif
}

template <class T>
inline long syscall_arg(T v) {
    if constexpr (std::is_pointer_v<T>) return reinterpret_cast<long>(v);
    else if constexpr (std::is_null_pointer_v<T>) return 0;
    else return static_cast<long>(v);
}

// raw_syscall(SYS_x, args...): up to six arguments, pointers or integers.
template <class... Args>
ADSM_ON_BORROWED_STACK inline long raw_syscall(long nr, Args... args) {
    static_assert(sizeof...(Args) <= 6, "a system call takes at most six arguments");
    long a[6] = {syscall_arg(args)...};
    return raw_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

}  // namespace adsm::os
