/* The system call instruction itself, for code whose calls must not reach
 * a syscall() another library interposes: the runtime's own (raw_syscall.h)
 * and the GPU driver doubles' (tests/gpu/doubles), which stand for a
 * driver, not the program.  Returns the kernel's answer, a negative errno
 * on failure.  C and C++; on x86-64 and AArch64 only
 * (ADSM_HAVE_SYSCALL_INSTRUCTION). */
#pragma once

#if defined(__x86_64__) || defined(__aarch64__)
#define ADSM_HAVE_SYSCALL_INSTRUCTION 1

static inline long adsm_syscall_instruction(long nr, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
#else
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
#endif
}
#endif
