// Single structures the kernel fills or reads (kernel_structs.h) in calls
// outside the I/O families: file and file system status (the stat
// families), descriptor pairs (pipe, socketpair), a child's status and
// usage (the wait family), readiness sets (select, pselect) and
// epoll_ctl's event, socket addresses and options (accept, getsockname,
// getpeername, getsockopt, connect, bind, setsockopt), the process's facts
// and settings (getrusage, the limits, the interval timers, uname,
// sysinfo, times), sleeps (nanosleep, clock_nanosleep), and the offsets
// the kernel reads and moves (sendfile, splice, copy_file_range).  Paths
// these calls take go as kernel_paths.h says; clocks and timers are in
// kernel_clocks.cpp, the process's signals, scheduling and identities in
// kernel_process.cpp.
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/signal_masks.h"
#include "interpose/kernel_paths.h"
#include "interpose/kernel_structs.h"
#include "interpose/staged_calls.h"


using adsm::interpose::Address;
using adsm::interpose::filled;
using adsm::interpose::filled_or_undone;
using adsm::interpose::Local;
using adsm::interpose::one;
using adsm::interpose::stages;
using adsm::interpose::with_path;

// ---------------------------------------------------------------- file status

INTERCEPTOR(int, stat, const char *path, struct stat *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(stat)(p, c); });
    });
}
INTERCEPTOR(int, lstat, const char *path, struct stat *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(lstat)(p, c); });
    });
}
INTERCEPTOR(int, fstat, int fd, struct stat *st) {
    return one(st, [&](struct stat *c) { return REAL(fstat)(fd, c); });
}
INTERCEPTOR(int, fstatat, int dirfd, const char *path, struct stat *st, int flags) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(fstatat)(dirfd, p, c, flags); });
    });
}
// (On 64-bit Linux the 64 names take the same structure.)
INTERCEPTOR(int, stat64, const char *path, struct stat64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(stat64)(p, c); });
    });
}
INTERCEPTOR(int, lstat64, const char *path, struct stat64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(lstat64)(p, c); });
    });
}
INTERCEPTOR(int, fstat64, int fd, struct stat64 *st) {
    return one(st, [&](struct stat64 *c) { return REAL(fstat64)(fd, c); });
}
INTERCEPTOR(int, fstatat64, int dirfd, const char *path, struct stat64 *st, int flags) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(fstatat64)(dirfd, p, c, flags); });
    });
}
INTERCEPTOR(int, statx, int dirfd, const char *path, int flags, unsigned int mask, struct statx *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct statx *c) { return REAL(statx)(dirfd, p, flags, mask, c); });
    });
}
INTERCEPTOR(int, statfs, const char *path, struct statfs *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct statfs *c) { return REAL(statfs)(p, c); });
    });
}
INTERCEPTOR(int, fstatfs, int fd, struct statfs *st) {
    return one(st, [&](struct statfs *c) { return REAL(fstatfs)(fd, c); });
}
INTERCEPTOR(int, statfs64, const char *path, struct statfs64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct statfs64 *c) { return REAL(statfs64)(p, c); });
    });
}
INTERCEPTOR(int, fstatfs64, int fd, struct statfs64 *st) {
    return one(st, [&](struct statfs64 *c) { return REAL(fstatfs64)(fd, c); });
}

INTERCEPTOR(int, statvfs, const char *path, struct statvfs *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct statvfs *c) { return REAL(statvfs)(p, c); });
    });
}
INTERCEPTOR(int, fstatvfs, int fd, struct statvfs *st) {
    return one(st, [&](struct statvfs *c) { return REAL(fstatvfs)(fd, c); });
}
INTERCEPTOR(int, statvfs64, const char *path, struct statvfs64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct statvfs64 *c) { return REAL(statvfs64)(p, c); });
    });
}
INTERCEPTOR(int, fstatvfs64, int fd, struct statvfs64 *st) {
    return one(st, [&](struct statvfs64 *c) { return REAL(fstatvfs64)(fd, c); });
}
// The C library's second name.
INTERCEPTOR(int, __statfs, const char *path, struct statfs *st) { return statfs(path, st); }

// Programs built against a C library older than 2.33 reach the stat family
// through these (the first argument the structure's version).
extern "C" {
int __xstat(int ver, const char *path, struct stat *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
}
INTERCEPTOR(int, __xstat, int ver, const char *path, struct stat *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(__xstat)(ver, p, c); });
    });
}
INTERCEPTOR(int, __lxstat, int ver, const char *path, struct stat *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(__lxstat)(ver, p, c); });
    });
}
INTERCEPTOR(int, __fxstat, int ver, int fd, struct stat *st) {
    return one(st, [&](struct stat *c) { return REAL(__fxstat)(ver, fd, c); });
}
INTERCEPTOR(int, __fxstatat, int ver, int dirfd, const char *path, struct stat *st, int flags) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat *c) { return REAL(__fxstatat)(ver, dirfd, p, c, flags); });
    });
}
INTERCEPTOR(int, __xstat64, int ver, const char *path, struct stat64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(__xstat64)(ver, p, c); });
    });
}
INTERCEPTOR(int, __lxstat64, int ver, const char *path, struct stat64 *st) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(__lxstat64)(ver, p, c); });
    });
}
INTERCEPTOR(int, __fxstat64, int ver, int fd, struct stat64 *st) {
    return one(st, [&](struct stat64 *c) { return REAL(__fxstat64)(ver, fd, c); });
}
INTERCEPTOR(int, __fxstatat64, int ver, int dirfd, const char *path, struct stat64 *st, int flags) {
    return with_path(path, [&](const char *p) {
        return one(st, [&](struct stat64 *c) { return REAL(__fxstatat64)(ver, dirfd, p, c, flags); });
    });
}

// ---------------------------------------------------------------- descriptor pairs

namespace {
// call(pair) makes a pair of descriptors into the copy of fds.
template <class Call>
int pair(int fds[2], Call &&call) {
    Local f(fds, 2 * sizeof(int));
    int *made = f.get<int>();
    return filled_or_undone<int>([&] { return call(made); }, [&](int) { close(made[0]), close(made[1]); }, f);
}
}  // namespace

INTERCEPTOR(int, pipe, int fds[2]) {
    return pair(fds, [](int *c) { return REAL(pipe)(c); });
}
INTERCEPTOR(int, pipe2, int fds[2], int flags) {
    return pair(fds, [&](int *c) { return REAL(pipe2)(c, flags); });
}
INTERCEPTOR(int, __pipe, int fds[2]) { return pipe(fds); }
INTERCEPTOR(int, socketpair, int domain, int type, int protocol, int fds[2]) {
    return pair(fds, [&](int *c) { return REAL(socketpair)(domain, type, protocol, c); });
}

// ---------------------------------------------------------------- children

INTERCEPTOR(pid_t, wait, int *status) {
    return one<pid_t>(status, [&](int *c) { return REAL(wait)(c); });
}
INTERCEPTOR(pid_t, waitpid, pid_t pid, int *status, int options) {
    return one<pid_t>(status, [&](int *c) { return REAL(waitpid)(pid, c, options); });
}
INTERCEPTOR(pid_t, wait3, int *status, int options, struct rusage *usage) {
    Local s(status, sizeof *status), u(usage, sizeof *usage);
    return filled<pid_t>([&] { return REAL(wait3)(s.get<int>(), options, u.get<struct rusage>()); }, s, u);
}
INTERCEPTOR(pid_t, wait4, pid_t pid, int *status, int options, struct rusage *usage) {
    Local s(status, sizeof *status), u(usage, sizeof *usage);
    return filled<pid_t>([&] { return REAL(wait4)(pid, s.get<int>(), options, u.get<struct rusage>()); }, s, u);
}
// The C library's second names.
INTERCEPTOR(pid_t, __wait, int *status) { return wait(status); }
INTERCEPTOR(pid_t, __waitpid, pid_t pid, int *status, int options) { return waitpid(pid, status, options); }
INTERCEPTOR(int, waitid, idtype_t idtype, id_t id, siginfo_t *info, int options) {
    return one(info, [&](siginfo_t *c) { return REAL(waitid)(idtype, id, c, options); });
}

// ---------------------------------------------------------------- the process's facts

INTERCEPTOR(int, getrusage, __rusage_who_t who, struct rusage *usage) {
    return one(usage, [&](struct rusage *c) { return REAL(getrusage)(who, c); });
}
INTERCEPTOR(int, uname, struct utsname *name) {
    return one(name, [&](struct utsname *c) { return REAL(uname)(c); });
}
INTERCEPTOR(int, sysinfo, struct sysinfo *info) {
    return one(info, [&](struct sysinfo *c) { return REAL(sysinfo)(c); });
}
INTERCEPTOR(clock_t, times, struct tms *t) {
    return one<clock_t>(t, [&](struct tms *c) { return REAL(times)(c); });
}

INTERCEPTOR(int, getrlimit, __rlimit_resource_t resource, struct rlimit *limit) {
    return one(limit, [&](struct rlimit *c) { return REAL(getrlimit)(resource, c); });
}
INTERCEPTOR(int, getrlimit64, __rlimit_resource_t resource, struct rlimit64 *limit) {
    return one(limit, [&](struct rlimit64 *c) { return REAL(getrlimit64)(resource, c); });
}
INTERCEPTOR(int, __getrlimit, __rlimit_resource_t resource, struct rlimit *limit) { return getrlimit(resource, limit); }
INTERCEPTOR(int, setrlimit, __rlimit_resource_t resource, const struct rlimit *limit) {
    Local l(limit, sizeof *limit, false);
    return filled<int>([&] { return REAL(setrlimit)(resource, l.get<const struct rlimit>()); }, l);
}
INTERCEPTOR(int, setrlimit64, __rlimit_resource_t resource, const struct rlimit64 *limit) {
    Local l(limit, sizeof *limit, false);
    return filled<int>([&] { return REAL(setrlimit64)(resource, l.get<const struct rlimit64>()); }, l);
}
INTERCEPTOR(int, getitimer, __itimer_which_t which, struct itimerval *value) {
    return one(value, [&](struct itimerval *c) { return REAL(getitimer)(which, c); });
}
INTERCEPTOR(int, setitimer, __itimer_which_t which, const struct itimerval *value, struct itimerval *old) {
    Local v(value, sizeof *value, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(setitimer)(which, v.get<const struct itimerval>(), o.get<struct itimerval>()); }, v, o);
}
INTERCEPTOR(int, prlimit, pid_t pid, enum __rlimit_resource resource, const struct rlimit *limit, struct rlimit *old) {
    Local l(limit, sizeof *limit, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(prlimit)(pid, resource, l.get<const struct rlimit>(), o.get<struct rlimit>()); }, l, o);
}
INTERCEPTOR(int, prlimit64, pid_t pid, enum __rlimit_resource resource, const struct rlimit64 *limit,
            struct rlimit64 *old) {
    Local l(limit, sizeof *limit, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(prlimit64)(pid, resource, l.get<const struct rlimit64>(), o.get<struct rlimit64>()); }, l,
        o);
}

// ---------------------------------------------------------------- readiness sets

namespace {
// The bytes of a descriptor set the kernel reads and writes for nfds: whole
// longs, as few as hold nfds bits (a program may allocate no more).
size_t set_bytes(int nfds) {
    const size_t bits = 8 * sizeof(long);
    return nfds <= 0 ? 0 : (static_cast<size_t>(nfds) + bits - 1) / bits * sizeof(long);
}
}  // namespace

INTERCEPTOR(int, select, int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout) {
    const size_t n = set_bytes(nfds);
    Local lr(r, n), lw(w, n), le(e, n), lt(timeout, sizeof *timeout);
    return filled<int>(
        [&] {
            return REAL(select)(nfds, lr.get<fd_set>(), lw.get<fd_set>(), le.get<fd_set>(), lt.get<struct timeval>());
        },
        lr, lw, le, lt);
}
INTERCEPTOR(int, __select, int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout) {
    return select(nfds, r, w, e, timeout);
}
INTERCEPTOR(int, pselect, int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
            const sigset_t *mask) {
    const size_t n = set_bytes(nfds);
    Local lr(r, n), lw(w, n), le(e, n), lt(timeout, sizeof *timeout, false), lm(mask, sizeof *mask, false);
    return filled<int>(
        [&] {
            sigset_t open;
            return REAL(pselect)(nfds, lr.get<fd_set>(), lw.get<fd_set>(), le.get<fd_set>(),
                                 lt.get<const struct timespec>(),
                                 adsm::interpose::fault_signal_open(lm.get<const sigset_t>(), &open));
        },
        lr, lw, le, lt, lm);
}
INTERCEPTOR(int, epoll_ctl, int epfd, int op, int fd, struct epoll_event *event) {
    Local ev(event, sizeof *event, false);
    return filled<int>([&] { return REAL(epoll_ctl)(epfd, op, fd, ev.get<struct epoll_event>()); }, ev);
}

// ---------------------------------------------------------------- socket addresses and options

INTERCEPTOR(int, accept, int fd, struct sockaddr *addr, socklen_t *addrlen) {
    Address a(addr, addrlen);
    return filled_or_undone<int>(
        [&] { return REAL(accept)(fd, a.addr.get<struct sockaddr>(), a.len.get<socklen_t>()); },
        [](int made) { close(made); }, a.len, a.addr);
}
INTERCEPTOR(int, accept4, int fd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    Address a(addr, addrlen);
    return filled_or_undone<int>(
        [&] { return REAL(accept4)(fd, a.addr.get<struct sockaddr>(), a.len.get<socklen_t>(), flags); },
        [](int made) { close(made); }, a.len, a.addr);
}
INTERCEPTOR(int, getsockname, int fd, struct sockaddr *addr, socklen_t *addrlen) {
    Address a(addr, addrlen);
    return filled<int>([&] { return REAL(getsockname)(fd, a.addr.get<struct sockaddr>(), a.len.get<socklen_t>()); },
                       a.len, a.addr);
}
INTERCEPTOR(int, getpeername, int fd, struct sockaddr *addr, socklen_t *addrlen) {
    Address a(addr, addrlen);
    return filled<int>([&] { return REAL(getpeername)(fd, a.addr.get<struct sockaddr>(), a.len.get<socklen_t>()); },
                       a.len, a.addr);
}
// Addresses and options the call only reads.
INTERCEPTOR(int, connect, int fd, const struct sockaddr *addr, socklen_t len) {
    Local a(addr, len, false);
    return filled<int>([&] { return REAL(connect)(fd, a.get<const struct sockaddr>(), len); }, a);
}
INTERCEPTOR(int, __connect, int fd, const struct sockaddr *addr, socklen_t len) { return connect(fd, addr, len); }
INTERCEPTOR(int, bind, int fd, const struct sockaddr *addr, socklen_t len) {
    Local a(addr, len, false);
    return filled<int>([&] { return REAL(bind)(fd, a.get<const struct sockaddr>(), len); }, a);
}
INTERCEPTOR(int, setsockopt, int fd, int level, int name, const void *value, socklen_t len) {
    Local v(value, len, false);
    return filled<int>([&] { return REAL(setsockopt)(fd, level, name, v.get<const void>(), len); }, v);
}
INTERCEPTOR(int, getsockopt, int fd, int level, int name, void *value, socklen_t *len) {
    Address a(value, len);
    return filled<int>(
        [&] { return REAL(getsockopt)(fd, level, name, a.addr.get<void>(), a.len.get<socklen_t>()); }, a.len, a.addr);
}

// ---------------------------------------------------------------- sleeps

// The remainder is written when a signal cuts the sleep short: a call that
// fails (nanosleep) or returns EINTR (clock_nanosleep, which returns its
// error rather than setting errno).
INTERCEPTOR(int, nanosleep, const struct timespec *req, struct timespec *rem) {
    Local q(req, sizeof *req, false), r(rem, sizeof *rem);
    if (!q.loaded() || !r.loaded()) {
        errno = EFAULT;
        return -1;
    }
    int ret = REAL(nanosleep)(q.get<const struct timespec>(), r.get<struct timespec>());
    if (ret == -1 && errno == EINTR && !r.store()) errno = EFAULT;
    return ret;
}
INTERCEPTOR(int, __nanosleep, const struct timespec *req, struct timespec *rem) { return nanosleep(req, rem); }
INTERCEPTOR(int, clock_nanosleep, clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
    Local q(req, sizeof *req, false), r(rem, sizeof *rem);
    if (!q.loaded() || !r.loaded()) return EFAULT;
    int ret = REAL(clock_nanosleep)(clock, flags, q.get<const struct timespec>(), r.get<struct timespec>());
    if (ret == EINTR && !(flags & TIMER_ABSTIME) && !r.store()) return EFAULT;
    return ret;
}

// ---------------------------------------------------------------- offsets the kernel reads and moves

INTERCEPTOR(ssize_t, sendfile, int out, int in, off_t *offset, size_t n) {
    return one<ssize_t>(offset, [&](off_t *c) { return REAL(sendfile)(out, in, c, n); });
}
INTERCEPTOR(ssize_t, sendfile64, int out, int in, off64_t *offset, size_t n) {
    return one<ssize_t>(offset, [&](off64_t *c) { return REAL(sendfile64)(out, in, c, n); });
}
INTERCEPTOR(ssize_t, splice, int in, loff_t *in_at, int out, loff_t *out_at, size_t n, unsigned flags) {
    Local i(in_at, sizeof *in_at), o(out_at, sizeof *out_at);
    return filled<ssize_t>([&] { return REAL(splice)(in, i.get<loff_t>(), out, o.get<loff_t>(), n, flags); }, i, o);
}
INTERCEPTOR(ssize_t, copy_file_range, int in, off64_t *in_at, int out, off64_t *out_at, size_t n, unsigned flags) {
    Local i(in_at, sizeof *in_at), o(out_at, sizeof *out_at);
    return filled<ssize_t>(
        [&] { return REAL(copy_file_range)(in, i.get<off64_t>(), out, o.get<off64_t>(), n, flags); }, i, o);
}
