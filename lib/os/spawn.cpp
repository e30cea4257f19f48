#include "os/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "os/raw_syscall.h"


namespace adsm::os {
namespace {

constexpr size_t kStack = 64 * 1024;

struct SpawnArgs {
    const char *path;
    char *const *argv;
    char *const *envp;
    const int *keep;  // sorted
    int nkeep;
    char *exec_stack;
    volatile int err;
    volatile pid_t pid;
};

// Both children run on stacks of ours (ADSM_ON_BORROWED_STACK), and call
// the kernel directly: a C library function that another library interposes
// would update that library's records of the host (its table of signal
// handlers, of open descriptors, of threads) as if the host had made the
// call.

// clone(flags) starting fn(arg) on the stack that ends at `top`, which
// returns the child's pid or -1 and errno, as the C library's does.  On
// x86-64 it is the system call itself: ThreadSanitizer interposes clone and
// treats a child sharing memory as a fork, rewriting the host's records of
// its threads from the child.
ADSM_ON_BORROWED_STACK long start_child(int (*fn)(void *), char *top, unsigned long flags, void *arg) {
#if defined(__x86_64__)
    // The child starts with the registers of the call and the new stack: fn
    // and arg travel on that stack, and it exits with fn's result.
    auto **sp = reinterpret_cast<void **>(top);
    *--sp = arg;
    *--sp = reinterpret_cast<void *>(fn);
    long ret;
    register long child_tid __asm__("r10") = 0;
    register long tls __asm__("r8") = 0;
    __asm__ volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "xor %%ebp, %%ebp\n\t"
        "pop %%rax\n\t"
        "pop %%rdi\n\t"
        "call *%%rax\n\t"
        "mov %%eax, %%edi\n\t"
        "mov %[exit_group], %%eax\n\t"
        "syscall\n\t"
        "hlt\n\t"
        "1:"
        : "=a"(ret)
        : "a"(static_cast<long>(SYS_clone)), "D"(flags), "S"(sp), "d"(0L), "r"(child_tid), "r"(tls),
          [exit_group] "i"(SYS_exit_group)
        : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = static_cast<int>(-ret);
        return -1;
    }
    return ret;
#else
    return clone(fn, top, static_cast<int>(flags), arg);
#endif
}

// The kernel's record of a signal's action (not the C library's struct
// sigaction), as rt_sigaction takes it on x86-64 and AArch64.  Where it has
// no restorer field, the handler still comes first and the all-zero
// default below still reads as the default.
struct KernelSigaction {
    uintptr_t handler;
    unsigned long flags;
    uintptr_t restorer;
    uint64_t mask;  // 64 signals
};

ADSM_ON_BORROWED_STACK void close_between(int lo, int hi) {  // closes [lo, hi]
    if (lo > hi) return;
#ifdef SYS_close_range
    if (raw_syscall(SYS_close_range, lo, hi, 0) == 0) return;
#endif
    struct {
        uint64_t cur, max;
    } limit = {65536, 65536};
    raw_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&limit));
    for (uint64_t fd = static_cast<uint64_t>(lo); fd <= static_cast<uint64_t>(hi) && fd < limit.cur; ++fd)
        raw_syscall(SYS_close, static_cast<long>(fd));
}

[[noreturn]] ADSM_ON_BORROWED_STACK void exit_child(int code) {
    for (;;) raw_syscall(SYS_exit_group, code);
}

// The helper itself: only execve.  Shares memory with the intermediate
// (and through it with the host) until then.
ADSM_ON_BORROWED_STACK int exec_main(void *p) {
    auto *a = static_cast<SpawnArgs *>(p);
    long r = raw_syscall(SYS_execve, reinterpret_cast<long>(a->path), reinterpret_cast<long>(a->argv),
                         reinterpret_cast<long>(a->envp));
    a->err = r < 0 && errno ? errno : ENOEXEC;
    exit_child(127);
}

// The intermediate: prepares signals and descriptors, starts the helper and
// leaves at once, so the helper is reparented away from the host.  Runs on
// the host's memory (CLONE_VM|CLONE_VFORK): system calls only, no
// allocation, no locks.
ADSM_ON_BORROWED_STACK int intermediate_main(void *p) {
    auto *a = static_cast<SpawnArgs *>(p);
    // Every handler back to the default: what the kernel holds for this
    // process, whatever any library tells the program.
    const KernelSigaction dfl = {reinterpret_cast<uintptr_t>(SIG_DFL), 0, 0, 0};
    for (long s = 1; s <= 64; ++s) {
        KernelSigaction cur;
        if (raw_syscall(SYS_rt_sigaction, s, 0, reinterpret_cast<long>(&cur), sizeof cur.mask) != 0) continue;
        if (cur.handler != reinterpret_cast<uintptr_t>(SIG_DFL) && cur.handler != reinterpret_cast<uintptr_t>(SIG_IGN))
            raw_syscall(SYS_rt_sigaction, s, reinterpret_cast<long>(&dfl), 0, sizeof dfl.mask);
    }
    int prev = 2;
    for (int i = 0; i < a->nkeep; ++i) {
        int fd = a->keep[i];
        if (fd <= prev) continue;
        close_between(prev + 1, fd - 1);
        raw_syscall(SYS_fcntl, fd, F_SETFD, 0);
        prev = fd;
    }
    close_between(prev + 1, 0x7fffffff);
    long null = raw_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDONLY | O_CLOEXEC);
    if (null > 0) {
        raw_syscall(SYS_dup3, null, 0, 0);
        raw_syscall(SYS_close, null);
    }
    const uint64_t none = 0;
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0, sizeof none);
    long pid = start_child(exec_main, a->exec_stack + kStack, CLONE_VM | CLONE_VFORK, a);
    if (pid < 0) a->err = errno;
    else a->pid = static_cast<pid_t>(pid);
    exit_child(0);
}

}  // namespace

int spawn_detached(const char *path, char *const argv[], char *const envp[], const int *keep, int nkeep,
                   pid_t *pid) {
    int sorted[16];
    if (nkeep < 0 || nkeep > 16) return -EINVAL;
    std::copy(keep, keep + nkeep, sorted);
    std::sort(sorted, sorted + nkeep);

    void *stacks = mmap(nullptr, 2 * kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stacks == MAP_FAILED) return -errno;
    char *s = static_cast<char *>(stacks);
    SpawnArgs args{path, argv, envp, sorted, nkeep, s + kStack, 0, 0};

    // No handler of the application may run in a child while it shares our memory.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    // Exit signal 0 and no exec: the intermediate never signals the host,
    // and only waitpid(..., __WCLONE) reports it.
    long mid = start_child(intermediate_main, s + kStack, CLONE_VM | CLONE_VFORK, &args);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (mid > 0) {
        int st;
        while (waitpid(static_cast<pid_t>(mid), &st, __WCLONE) < 0 && errno == EINTR) {
        }
    }
    munmap(stacks, 2 * kStack);

    if (mid < 0) return -clone_errno;
    if (args.err != 0) return -args.err;
    *pid = args.pid;
    return 0;
}

int pidfd_of(pid_t pid) {
    long fd = raw_syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : static_cast<int>(fd);
}

int pidfd_kill(int pidfd, int sig) {
    return raw_syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0 ? 0 : -errno;
}

}  // namespace adsm::os
