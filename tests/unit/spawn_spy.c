// A library that interposes the C library functions a process-starting
// child could be tempted to call, as signal-chaining libraries, sanitizers
// and I/O tracers do, and counts the calls made by any process other than
// the one that loaded it.  A child that shares our memory updates the count
// we read: each such call would have updated the interposer's records of
// the host the same way.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static long g_host_pid;
static volatile int g_child_calls;

enum { kSigaction, kSigprocmask, kOpen, kOpen64, kOpenat, kDup2, kDup3, kClose, kFcntl, kExecve, kExit, kCount };
static void *g_real[kCount];

static const char *const g_names[kCount] = {"sigaction", "sigprocmask", "open",  "open64", "openat", "dup2",
                                            "dup3",      "close",       "fcntl", "execve", "_exit"};

__attribute__((constructor)) static void spy_init(void) { g_host_pid = syscall(SYS_getpid); }

// Resolved at the first call: other libraries' constructors, run before
// ours, may already call these.
static void *real(int i) {
    void *f = __atomic_load_n(&g_real[i], __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, g_names[i]);
        __atomic_store_n(&g_real[i], f, __ATOMIC_RELEASE);
    }
    return f;
}

static void note(void) {
    if (g_host_pid && syscall(SYS_getpid) != g_host_pid) __atomic_add_fetch(&g_child_calls, 1, __ATOMIC_SEQ_CST);
}

int spawn_spy_child_calls(void) { return __atomic_load_n(&g_child_calls, __ATOMIC_SEQ_CST); }

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    note();
    return ((int (*)(int, const struct sigaction *, struct sigaction *))real(kSigaction))(sig, act, old);
}
int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    note();
    return ((int (*)(int, const sigset_t *, sigset_t *))real(kSigprocmask))(how, set, old);
}
int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_arg(ap, mode_t);
    va_end(ap);
    note();
    return ((int (*)(const char *, int, mode_t))real(kOpen))(path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_arg(ap, mode_t);
    va_end(ap);
    note();
    return ((int (*)(const char *, int, mode_t))real(kOpen64))(path, flags, mode);
}
int openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_arg(ap, mode_t);
    va_end(ap);
    note();
    return ((int (*)(int, const char *, int, mode_t))real(kOpenat))(dir, path, flags, mode);
}
int dup2(int fd, int to) {
    note();
    return ((int (*)(int, int))real(kDup2))(fd, to);
}
int dup3(int fd, int to, int flags) {
    note();
    return ((int (*)(int, int, int))real(kDup3))(fd, to, flags);
}
int close(int fd) {
    note();
    return ((int (*)(int))real(kClose))(fd);
}
int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    note();
    return ((int (*)(int, int, long))real(kFcntl))(fd, cmd, arg);
}
int execve(const char *path, char *const argv[], char *const envp[]) {
    note();
    return ((int (*)(const char *, char *const[], char *const[]))real(kExecve))(path, argv, envp);
}
void _exit(int code) {
    note();
    ((void (*)(int))real(kExit))(code);
    __builtin_unreachable();
}
