// The strings a new program starts from: its path, its arguments and its
// environment (the exec family, posix_spawn, system, popen).  The kernel
// reads them itself, during the exec, and cannot take the runtime's fault:
// one of them (or one of the two arrays) in shared memory whose block was
// closed made the exec fail with EFAULT, or the spawned child exit with
// 127.  Where any lies in the window, the call gets copies of those that
// do, with both arrays, in memory mapped for it and given back when it
// returns (an exec that succeeds leaves it behind with the old image).
//
// Only in the runtime's own process: a vfork child shares the program's
// memory under another pid (Python's subprocess execs so), and must not
// call into the runtime, whose locks and threads are the parent's.  Its
// strings are read in user mode first instead, where a closed block's
// fault is served as for any read of the program's (the handler runs on
// the thread's stack and tables, the parent's thread being suspended), and
// then go to the kernel as they are: without that, Python's subprocess
// failed with EFAULT for an argument in a block a release had closed.
#include <alloca.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/kernel_paths.h"

extern "C" char **environ;

namespace {

using adsm::interpose::read_string;
using adsm::interpose::stages;

// The kernel's bound on one argument or environment string (MAX_ARG_STRLEN).
constexpr size_t kMaxArgString = 32 * 4096;
// A vfork child's exec tries this often while its strings keep being closed
// between its reads and the kernel's (ProcessStrings::exec).
constexpr int kExecTries = 64;

class ProcessStrings {
public:
    // `first`: the path (or the command of system and popen), at most
    // first_max bytes with its zero; either array may be null.
    ProcessStrings(const char *first, size_t first_max, char *const *argv, char *const *envp)
        : first_(first), argv_(argv), envp_(envp) {
        if (!adsm::preload::runs_here()) {
            read_first_ = read_in_user_mode(first, argv, envp);
            return;
        }
        const bool first_shared = first && stages(first, 1);
        if (!first_shared && !in_window(argv) && !in_window(envp)) return;
        // Measured first, then copied into memory of exactly that size.
        size_t bytes = 0, nargv = 0, nenvp = 0;
        if (first_shared && !(ok_ = measure(first, first_max, ENAMETOOLONG, &bytes))) return;
        if (!(ok_ = measure_all(argv, &nargv, &bytes) && measure_all(envp, &nenvp, &bytes))) return;
        const size_t arrays = (argv ? nargv + 1 : 0) + (envp ? nenvp + 1 : 0);
        len_ = arrays * sizeof(char *) + bytes;
        void *m = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            ok_ = false;  // (errno: mmap's ENOMEM, as the exec's own would be)
            return;
        }
        mem_ = m;
        end_ = static_cast<char *>(m) + len_;
        char **slots = static_cast<char **>(m);
        char *text = reinterpret_cast<char *>(slots + arrays);
        if (first_shared) first_ = copy(first, first_max, ENAMETOOLONG, &text);
        if (argv) argv_ = copy_all(argv, nargv, slots, &text), slots += nargv + 1;
        if (envp) envp_ = copy_all(envp, nenvp, slots, &text);
        ok_ = (!first || first_) && (!argv || argv_) && (!envp || envp_);
    }
    ~ProcessStrings() {
        if (mem_) munmap(mem_, len_);
    }
    ProcessStrings(const ProcessStrings &) = delete;
    ProcessStrings &operator=(const ProcessStrings &) = delete;

    // False (errno set: EFAULT, E2BIG, ENAMETOOLONG, ENOMEM) when the
    // strings could not be read or copied: the call fails so, as the
    // kernel's exec would.
    bool ok() const { return ok_; }

    // call(first, argv, envp), an exec.  In a vfork child the strings were
    // opened by reading them, and another of the parent's threads may have
    // released them to a device again before the kernel read them: an exec
    // that fails so has changed nothing, and reads and tries again.
    template <class Exec>
    int exec(Exec &&call) {
        if (!ok_) return -1;
        for (int tries = 1;; ++tries) {
            int r = call(first_, argv_, envp_);
            if (r != -1 || errno != EFAULT || !read_first_ || tries == kExecTries) return r;
            read_in_user_mode(first_, argv_, envp_);
        }
    }
    const char *first() const { return first_; }
    char *const *argv() const { return argv_; }
    char *const *envp() const { return envp_; }

private:
    // Each reads what lies in the window, and says whether anything did.
    static bool read_in_user_mode(const char *s) {
        if (!s || !adsm::preload::in_window(s)) return false;
        size_t n = strlen(s);
        asm volatile("" : : "r"(n) : "memory");
        return true;
    }
    static bool read_in_user_mode(char *const *a) {
        bool any = a && adsm::preload::in_window(a);
        for (; a && *a; ++a) any |= read_in_user_mode(*a);  // (the array itself is read so too)
        return any;
    }
    static bool read_in_user_mode(const char *first, char *const *argv, char *const *envp) {
        bool any = read_in_user_mode(first);
        any |= read_in_user_mode(argv);
        return read_in_user_mode(envp) || any;
    }
    static bool in_window(char *const *a) {
        if (!a) return false;
        if (stages(a, sizeof *a)) return true;
        for (; *a; ++a)
            if (stages(*a, 1)) return true;
        return false;
    }
    static bool measure(const char *s, size_t max, int too_long, size_t *bytes) {
        size_t n = read_string(s, nullptr, max, too_long);
        *bytes += n;
        return n != 0;
    }
    static bool measure_all(char *const *a, size_t *count, size_t *bytes) {
        for (; a && a[*count]; ++*count)
            if (stages(a[*count], 1) && !measure(a[*count], kMaxArgString, E2BIG, bytes)) return false;
        return true;
    }
    // Null when the string cannot be read, or grew past the room measured
    // for it (another thread wrote it meanwhile).
    const char *copy(const char *s, size_t max, int too_long, char **text) const {
        char *at = *text;
        size_t n = read_string(s, at, std::min<size_t>(max, static_cast<size_t>(end_ - at)), too_long);
        *text += n;
        return n ? at : nullptr;
    }
    char *const *copy_all(char *const *a, size_t count, char **slots, char **text) const {
        for (size_t i = 0; i < count; ++i) {
            char *s = a[i];
            if (stages(s, 1) && !(s = const_cast<char *>(copy(s, kMaxArgString, E2BIG, text)))) return nullptr;
            slots[i] = s;
        }
        slots[count] = nullptr;
        return slots;
    }

    const char *first_;
    char *const *argv_;
    char *const *envp_;
    void *mem_ = nullptr;
    char *end_ = nullptr;
    size_t len_ = 0;
    bool ok_ = true;
    bool read_first_ = false;  // (in a vfork child: some read in user mode, not copied)
};

}  // namespace

// ---------------------------------------------------------------- exec

INTERCEPTOR(int, execve, const char *path, char *const argv[], char *const envp[]) {
    ProcessStrings s(path, PATH_MAX, argv, envp);
    return s.exec([](const char *f, char *const *a, char *const *e) { return REAL(execve)(f, a, e); });
}
INTERCEPTOR(int, execveat, int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    ProcessStrings s(path, PATH_MAX, argv, envp);
    return s.exec([&](const char *f, char *const *a, char *const *e) { return REAL(execveat)(dirfd, f, a, e, flags); });
}
INTERCEPTOR(int, fexecve, int fd, char *const argv[], char *const envp[]) {
    ProcessStrings s(nullptr, 0, argv, envp);
    return s.exec([&](const char *, char *const *a, char *const *e) { return REAL(fexecve)(fd, a, e); });
}
INTERCEPTOR(int, execvpe, const char *file, char *const argv[], char *const envp[]) {
    ProcessStrings s(file, PATH_MAX, argv, envp);
    return s.exec([](const char *f, char *const *a, char *const *e) { return REAL(execvpe)(f, a, e); });
}
// (The C library's execv and execvp pass its environment on through names
// of its own: they come here, with it, instead.)
INTERCEPTOR(int, execv, const char *path, char *const argv[]) { return execve(path, argv, environ); }
INTERCEPTOR(int, execvp, const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

// The list forms: their arguments gathered into an array on the stack, as
// the C library does, for call(args); the list is left after their
// terminating null (execle's environment follows).
namespace {
template <class Call>
int with_list_args(const char *first, va_list *ap, Call &&call) {
    va_list counting;
    va_copy(counting, *ap);
    size_t n = 1;
    while (va_arg(counting, char *)) ++n;
    va_end(counting);
    char **args = static_cast<char **>(alloca((n + 1) * sizeof(char *)));
    args[0] = const_cast<char *>(first);
    for (size_t i = 1; i <= n; ++i) args[i] = va_arg(*ap, char *);
    return call(args);
}
}  // namespace

INTERCEPTOR(int, execl, const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int r = with_list_args(arg, &ap, [&](char **args) { return execve(path, args, environ); });
    va_end(ap);
    return r;
}
INTERCEPTOR(int, execlp, const char *file, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int r = with_list_args(arg, &ap, [&](char **args) { return execvpe(file, args, environ); });
    va_end(ap);
    return r;
}
INTERCEPTOR(int, execle, const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int r = with_list_args(arg, &ap, [&](char **args) { return execve(path, args, va_arg(ap, char *const *)); });
    va_end(ap);
    return r;
}

// ---------------------------------------------------------------- spawning

INTERCEPTOR(int, posix_spawn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
            const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    ProcessStrings s(path, PATH_MAX, argv, envp);
    return s.ok() ? REAL(posix_spawn)(pid, s.first(), actions, attr, s.argv(), s.envp()) : errno;
}
INTERCEPTOR(int, posix_spawnp, pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
            const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    ProcessStrings s(file, PATH_MAX, argv, envp);
    return s.ok() ? REAL(posix_spawnp)(pid, s.first(), actions, attr, s.argv(), s.envp()) : errno;
}
namespace {
// The C library's system and popen pass `environ` to the shell: where a
// string there (put from shared memory with putenv) or the array lies in
// the window, environ points at the copies for the length of the call.
// (Another thread's setenv meanwhile would be undone, as setenv during a
// system call of another thread is not safe anyway.)
class EnvironFor {
public:
    explicit EnvironFor(char *const *copy) : saved_(environ) {
        if (copy != saved_) environ = const_cast<char **>(copy);
    }
    ~EnvironFor() {
        if (environ != saved_) environ = saved_;
    }
    EnvironFor(const EnvironFor &) = delete;
    EnvironFor &operator=(const EnvironFor &) = delete;

private:
    char **saved_;
};
}  // namespace

// The command goes to the shell as an argument (`sh -c command`).
INTERCEPTOR(int, system, const char *command) {
    ProcessStrings s(command, kMaxArgString, nullptr, environ);
    if (!s.ok()) return -1;
    EnvironFor env(s.envp());
    return REAL(system)(s.first());
}
INTERCEPTOR(FILE *, popen, const char *command, const char *mode) {
    ProcessStrings s(command, kMaxArgString, nullptr, environ);
    if (!s.ok()) return nullptr;
    EnvironFor env(s.envp());
    return REAL(popen)(s.first(), mode);
}
