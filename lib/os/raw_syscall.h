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
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    long r = x0;
#else
    return syscall(nr, a, b, c, d, e, f);
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    if (static_cast<unsigned long>(r) > -4096UL) {
        errno = static_cast<int>(-r);
        return -1;
    }
    return r;
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
