// A library that interposes C library functions, as signal-chaining
// libraries, sanitizers, allocators and I/O tracers do, and counts calls to
// them where the runtime must make none:
//   - by any process other than the one that asked: a child that shares
//     our memory (os/spawn.cpp) updates the count we read, as each such call
//     would have updated the interposer's records of the host;
//   - allocations by a thread while it is watched: code that must run in a
//     signal handler, where the thread may have stopped inside the
//     allocator (os/call_stack.cpp naming a fault's site);
//   - allocations and blocking lock acquisitions (pthread mutexes and
//     read-write locks) by any thread while a condition the test gives holds
//     (the thread is in the runtime's fault handler), with the first one's
//     call stack.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static long g_host_pid;
static volatile int g_child_calls, g_clone_calls, g_watched_calls;
static volatile long g_watched_tid;
static int (*g_count_when)(int kind, void *caller);  // (atomic accesses)
enum { kStackDepth = 32 };
// Per kind of call counted while g_count_when() holds.
enum { kAllocation, kLock, kKinds };
static struct {
    int calls, depth;  // (atomic accesses; depth is stored once the stack is)
    void *stack[kStackDepth];
} g_conditional[kKinds];

enum {
    kSigaction, kSigprocmask, kOpen, kOpen64, kOpenat, kDup2, kDup3, kClose,
    kFcntl, kExecve, kExit, kClone, kMutexLock, kRdlock, kWrlock, kCount
};
static void *g_real[kCount];

static const char *const g_names[kCount] = {"sigaction", "sigprocmask", "open",  "open64", "openat", "dup2",
                                            "dup3",      "close",       "fcntl", "execve", "_exit",  "clone",
                                            "pthread_mutex_lock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock"};

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

// The rest now: a process cloned from a threaded one (a GPU double's kernel
// process) must not look one up, as the lookup's locks and allocations may
// be held by threads that do not exist there.
__attribute__((constructor)) static void spy_init(void) {
    for (int i = 0; i < kCount; ++i) real(i);
}

// (A system call per call once asked for: only the test of the children
// pays for it, not every suite that allocates.)
static void note(void) {
    long host = __atomic_load_n(&g_host_pid, __ATOMIC_RELAXED);
    if (host && syscall(SYS_getpid) != host) __atomic_add_fetch(&g_child_calls, 1, __ATOMIC_SEQ_CST);
}

static void note_conditional(int kind, void *caller) {
    int (*when)(int, void *) = __atomic_load_n(&g_count_when, __ATOMIC_ACQUIRE);
    if (when && when(kind, caller) && __atomic_add_fetch(&g_conditional[kind].calls, 1, __ATOMIC_SEQ_CST) == 1)
        __atomic_store_n(&g_conditional[kind].depth, backtrace(g_conditional[kind].stack, kStackDepth),
                         __ATOMIC_RELEASE);
}

static void note_allocation(void *caller) {
    note();
    long watched = __atomic_load_n(&g_watched_tid, __ATOMIC_SEQ_CST);
    if (watched && syscall(SYS_gettid) == watched) __atomic_add_fetch(&g_watched_calls, 1, __ATOMIC_SEQ_CST);
    note_conditional(kAllocation, caller);
}

// Counts allocations (kind 0) and lock acquisitions (kind 1) for which
// when(kind, the caller's return address) holds, from now on.  It must be
// async-signal-safe and allocate nothing.
void libc_spy_count_when(int (*when)(int kind, void *caller)) {
    void *warm[2];
    backtrace(warm, 2);  // loads the unwinder now: it allocates the first time
    __atomic_store_n(&g_count_when, when, __ATOMIC_RELEASE);
}
// The count of one kind (0: allocations, 1: lock acquisitions), and the
// first one's call stack (up to max return addresses).
int libc_spy_conditional_calls(int kind, void **stack, int max, int *depth) {
    int n = __atomic_load_n(&g_conditional[kind].depth, __ATOMIC_ACQUIRE);
    if (n > max) n = max;
    for (int i = 0; i < n; ++i) stack[i] = g_conditional[kind].stack[i];
    *depth = n;
    return __atomic_load_n(&g_conditional[kind].calls, __ATOMIC_SEQ_CST);
}

// Counts this thread's allocations from now on (the count so far is returned).
int libc_spy_watch_this_thread(void) {
    __atomic_store_n(&g_watched_tid, syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    return __atomic_load_n(&g_watched_calls, __ATOMIC_SEQ_CST);
}
// Stops watching; returns the count.
int libc_spy_stop_watching(void) {
    __atomic_store_n(&g_watched_tid, 0, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&g_watched_calls, __ATOMIC_SEQ_CST);
}

// Counts calls by processes other than this one from now on; returns the
// count so far.
int libc_spy_watch_children(void) {
    __atomic_store_n(&g_host_pid, syscall(SYS_getpid), __ATOMIC_SEQ_CST);
    return __atomic_load_n(&g_child_calls, __ATOMIC_SEQ_CST);
}
int libc_spy_child_calls(void) { return __atomic_load_n(&g_child_calls, __ATOMIC_SEQ_CST); }
// clone, by anyone: ThreadSanitizer's, for one, takes a child sharing
// memory for a fork and rewrites the host's records from the child.
int libc_spy_clone_calls(void) { return __atomic_load_n(&g_clone_calls, __ATOMIC_SEQ_CST); }

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    note();
    return ((int (*)(int, const struct sigaction *, struct sigaction *))real(kSigaction))(sig, act, old);
}
int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    note();
    return ((int (*)(int, const sigset_t *, sigset_t *))real(kSigprocmask))(how, set, old);
}
static int spied_open(int which, const char *path, int flags, va_list ap) {
    mode_t mode = va_arg(ap, mode_t);
    note();
    return ((int (*)(const char *, int, mode_t))real(which))(path, flags, mode);
}
int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int r = spied_open(kOpen, path, flags, ap);
    va_end(ap);
    return r;
}
int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int r = spied_open(kOpen64, path, flags, ap);
    va_end(ap);
    return r;
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
int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    void *parent_tid = va_arg(ap, void *), *tls = va_arg(ap, void *), *child_tid = va_arg(ap, void *);
    va_end(ap);
    __atomic_add_fetch(&g_clone_calls, 1, __ATOMIC_SEQ_CST);
    return ((int (*)(int (*)(void *), void *, int, void *, ...))real(kClone))(fn, stack, flags, arg, parent_tid, tls,
                                                                          child_tid);
}

// The allocator, through the C library's own entry points (no lookup, which
// could itself allocate), aligned allocations included.
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
void *malloc(size_t n) {
    note_allocation(__builtin_return_address(0));
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    note_allocation(__builtin_return_address(0));
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    note_allocation(__builtin_return_address(0));
    return __libc_realloc(p, n);
}
void free(void *p) {
    note_allocation(__builtin_return_address(0));
    __libc_free(p);
}
void *memalign(size_t align, size_t n) {
    note_allocation(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) {
    note_allocation(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
    note_allocation(__builtin_return_address(0));
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

// Blocking lock acquisitions.  (Try-locks cannot deadlock; a condition
// wait holds a mutex taken before.)
int pthread_mutex_lock(pthread_mutex_t *m) {
    note_conditional(kLock, __builtin_return_address(0));
    return ((int (*)(pthread_mutex_t *))real(kMutexLock))(m);
}
int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
    note_conditional(kLock, __builtin_return_address(0));
    return ((int (*)(pthread_rwlock_t *))real(kRdlock))(l);
}
int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
    note_conditional(kLock, __builtin_return_address(0));
    return ((int (*)(pthread_rwlock_t *))real(kWrlock))(l);
}
