#include "os/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "os/real_libc.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

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

void close_between(int lo, int hi) {  // closes [lo, hi]
    if (lo > hi) return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, static_cast<unsigned>(lo), static_cast<unsigned>(hi), 0) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lo; fd <= hi && fd < max; ++fd) close(static_cast<int>(fd));
}

// Both children run on stacks of ours, not ones AddressSanitizer knows:
// uninstrumented, so that its bookkeeping for a thread that never returns
// (_exit) does not take them for the host's stack.
#if defined(__SANITIZE_ADDRESS__)
#define ADSM_ON_BORROWED_STACK __attribute__((no_sanitize("address")))
#else
#define ADSM_ON_BORROWED_STACK
#endif

// The helper itself: only execve.  Shares memory with the intermediate
// (and through it with the host) until then.
ADSM_ON_BORROWED_STACK int exec_main(void *p) {
    auto *a = static_cast<SpawnArgs *>(p);
    execve(a->path, a->argv, a->envp);
    a->err = errno ? errno : ENOEXEC;
    _exit(127);
}

// The intermediate: prepares signals and descriptors, starts the helper and
// leaves at once, so the helper is reparented away from the host.  Runs on
// the host's memory (CLONE_VM|CLONE_VFORK): system calls only, no
// allocation, no locks.
ADSM_ON_BORROWED_STACK int intermediate_main(void *p) {
    auto *a = static_cast<SpawnArgs *>(p);
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) {
        struct sigaction cur;
        // The C library's own sigaction: the program's view of signals (the
        // interposed one) is not what the new program inherits.
        if (real_sigaction(s, nullptr, &cur) != 0) continue;
        if (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN) real_sigaction(s, &dfl, nullptr);
    }
    int prev = 2;
    for (int i = 0; i < a->nkeep; ++i) {
        int fd = a->keep[i];
        if (fd <= prev) continue;
        close_between(prev + 1, fd - 1);
        fcntl(fd, F_SETFD, 0);
        prev = fd;
    }
    close_between(prev + 1, 0x7fffffff);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0 && null != 0) {
        dup2(null, 0);
        close(null);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    pid_t pid = clone(exec_main, a->exec_stack + kStack, CLONE_VM | CLONE_VFORK, a);
    if (pid < 0) a->err = errno;
    else a->pid = pid;
    _exit(0);
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
    int mid = clone(intermediate_main, s + kStack, CLONE_VM | CLONE_VFORK, &args);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (mid > 0) {
        int st;
        while (waitpid(mid, &st, __WCLONE) < 0 && errno == EINTR) {
        }
    }
#if defined(__SANITIZE_ADDRESS__)
    // The children ran instrumented code on these stacks with our memory,
    // shadow included: the poison their frames left would otherwise stay
    // on whatever is mapped here next (a false report far from here).
    __asan_unpoison_memory_region(stacks, 2 * kStack);
#endif
    munmap(stacks, 2 * kStack);

    if (mid < 0) return -clone_errno;
    if (args.err != 0) return -args.err;
    *pid = args.pid;
    return 0;
}

}  // namespace adsm::os
