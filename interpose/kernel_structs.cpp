// Single structures the kernel fills or reads (kernel_structs.h) in calls
// outside the I/O families: file and file system status (the stat
// families), descriptor pairs (pipe, socketpair), a child's status and
// usage (the wait family), readiness sets (select, pselect) and
// epoll_ctl's event, socket addresses and options (accept, getsockname,
// getpeername, getsockopt, connect, bind, setsockopt), the process's facts
// and settings (getrusage, the limits, the interval timers, uname,
// sysinfo, times), and sleeps (nanosleep, clock_nanosleep).  Paths these
// calls take go as kernel_paths.h says.
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>
#include <sys/timex.h>
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
#include "interpose/staged_buffer.h"
#include "interpose/staged_calls.h"

extern "C" {
[[noreturn]] void __chk_fail(void);
// (The C library exports them; only libcap declares them.)
int capget(cap_user_header_t header, cap_user_data_t data);
int capset(cap_user_header_t header, const cap_user_data_t data);
}

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

// ---------------------------------------------------------------- signals waited for

INTERCEPTOR(int, sigtimedwait, const sigset_t *set, siginfo_t *info, const struct timespec *timeout) {
    Local s(set, sizeof *set, false), i(info, sizeof *info), t(timeout, sizeof *timeout, false);
    return filled<int>(
        [&] { return REAL(sigtimedwait)(s.get<const sigset_t>(), i.get<siginfo_t>(), t.get<const struct timespec>()); },
        s, i, t);
}
INTERCEPTOR(int, sigwaitinfo, const sigset_t *set, siginfo_t *info) {
    Local s(set, sizeof *set, false), i(info, sizeof *info);
    return filled<int>([&] { return REAL(sigwaitinfo)(s.get<const sigset_t>(), i.get<siginfo_t>()); }, s, i);
}
// (Its error is its result; the C library stores the signal itself.)
INTERCEPTOR(int, sigwait, const sigset_t *set, int *sig) {
    Local s(set, sizeof *set, false);
    if (!s.loaded()) return EFAULT;
    return REAL(sigwait)(s.get<const sigset_t>(), sig);
}
INTERCEPTOR(int, sigpending, sigset_t *set) {
    return one(set, [&](sigset_t *c) { return REAL(sigpending)(c); });
}
INTERCEPTOR(int, signalfd, int fd, const sigset_t *mask, int flags) {
    Local m(mask, sizeof *mask, false);
    return filled_or_undone<int>([&] { return REAL(signalfd)(fd, m.get<const sigset_t>(), flags); },
                                 [&](int made) {
                                     if (made != fd) close(made);
                                 },
                                 m);
}

// ---------------------------------------------------------------- clocks and timers

// Most clocks are read in the vDSO, in user mode, where the runtime's fault
// is taken; the CPU-time clocks are read by the kernel.  The runtime reads
// its own clock here too, so the first test is the cheapest.
INTERCEPTOR(int, clock_gettime, clockid_t clock, struct timespec *ts) {
    if (!stages(ts, sizeof *ts)) return REAL(clock_gettime)(clock, ts);
    return one(ts, [&](struct timespec *c) { return REAL(clock_gettime)(clock, c); });
}
INTERCEPTOR(int, clock_getres, clockid_t clock, struct timespec *res) {
    return one(res, [&](struct timespec *c) { return REAL(clock_getres)(clock, c); });
}
INTERCEPTOR(int, clock_settime, clockid_t clock, const struct timespec *ts) {
    Local t(ts, sizeof *ts, false);
    return filled<int>([&] { return REAL(clock_settime)(clock, t.get<const struct timespec>()); }, t);
}
INTERCEPTOR(int, settimeofday, const struct timeval *tv, const struct timezone *tz) {
    Local v(tv, sizeof *tv, false), z(tz, sizeof *tz, false);
    return filled<int>(
        [&] { return REAL(settimeofday)(v.get<const struct timeval>(), z.get<const struct timezone>()); }, v, z);
}
// A timex is read and written: the kernel applies the modes it names and
// reports the clock's state.
INTERCEPTOR(int, clock_adjtime, clockid_t clock, struct timex *t) {
    return one(t, [&](struct timex *c) { return REAL(clock_adjtime)(clock, c); });
}
INTERCEPTOR(int, adjtimex, struct timex *t) {
    return one(t, [&](struct timex *c) { return REAL(adjtimex)(c); });
}
INTERCEPTOR(int, __adjtimex, struct timex *t) { return adjtimex(t); }
INTERCEPTOR(int, ntp_adjtime, struct timex *t) { return adjtimex(t); }

INTERCEPTOR(int, timer_create, clockid_t clock, struct sigevent *event, timer_t *id) {
    Local e(event, sizeof *event, false), i(id, sizeof *id);
    return filled_or_undone<int>([&] { return REAL(timer_create)(clock, e.get<struct sigevent>(), i.get<timer_t>()); },
                                 [&](int) { timer_delete(*i.get<timer_t>()); }, e, i);
}
INTERCEPTOR(int, timer_settime, timer_t id, int flags, const struct itimerspec *value, struct itimerspec *old) {
    Local v(value, sizeof *value, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(timer_settime)(id, flags, v.get<const struct itimerspec>(), o.get<struct itimerspec>()); },
        v, o);
}
INTERCEPTOR(int, timer_gettime, timer_t id, struct itimerspec *value) {
    return one(value, [&](struct itimerspec *c) { return REAL(timer_gettime)(id, c); });
}
INTERCEPTOR(int, timerfd_settime, int fd, int flags, const struct itimerspec *value, struct itimerspec *old) {
    Local v(value, sizeof *value, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(timerfd_settime)(fd, flags, v.get<const struct itimerspec>(), o.get<struct itimerspec>()); },
        v, o);
}
INTERCEPTOR(int, timerfd_gettime, int fd, struct itimerspec *value) {
    return one(value, [&](struct itimerspec *c) { return REAL(timerfd_gettime)(fd, c); });
}

// ---------------------------------------------------------------- scheduling

// A CPU mask's size is the program's (CPU_ALLOC_SIZE): the C library
// clears what the kernel does not fill, so the whole mask is written.
INTERCEPTOR(int, sched_getaffinity, pid_t pid, size_t n, cpu_set_t *mask) {
    return adsm::interpose::filled_buffer<int>(
        mask, n, EFAULT, [&](void *m) { return REAL(sched_getaffinity)(pid, n, static_cast<cpu_set_t *>(m)); },
        [&](int) { return n; });
}
INTERCEPTOR(int, sched_setaffinity, pid_t pid, size_t n, const cpu_set_t *mask) {
    return adsm::interpose::read_buffer<int>(
        mask, n, [&](const void *m) { return REAL(sched_setaffinity)(pid, n, static_cast<const cpu_set_t *>(m)); });
}
INTERCEPTOR(int, sched_getparam, pid_t pid, struct sched_param *param) {
    return one(param, [&](struct sched_param *c) { return REAL(sched_getparam)(pid, c); });
}
INTERCEPTOR(int, sched_setparam, pid_t pid, const struct sched_param *param) {
    Local p(param, sizeof *param, false);
    return filled<int>([&] { return REAL(sched_setparam)(pid, p.get<const struct sched_param>()); }, p);
}
INTERCEPTOR(int, sched_setscheduler, pid_t pid, int policy, const struct sched_param *param) {
    Local p(param, sizeof *param, false);
    return filled<int>([&] { return REAL(sched_setscheduler)(pid, policy, p.get<const struct sched_param>()); }, p);
}
extern "C" {
int __sched_getparam(pid_t pid, struct sched_param *param);
int __sched_setscheduler(pid_t pid, int policy, const struct sched_param *param);
}
INTERCEPTOR(int, __sched_getparam, pid_t pid, struct sched_param *param) { return sched_getparam(pid, param); }
INTERCEPTOR(int, __sched_setscheduler, pid_t pid, int policy, const struct sched_param *param) {
    return sched_setscheduler(pid, policy, param);
}
INTERCEPTOR(int, sched_rr_get_interval, pid_t pid, struct timespec *t) {
    return one(t, [&](struct timespec *c) { return REAL(sched_rr_get_interval)(pid, c); });
}
INTERCEPTOR(int, getcpu, unsigned *cpu, unsigned *node) {
    Local c(cpu, sizeof *cpu), n(node, sizeof *node);
    return filled<int>([&] { return REAL(getcpu)(c.get<unsigned>(), n.get<unsigned>()); }, c, n);
}

// ---------------------------------------------------------------- identities

INTERCEPTOR(int, getgroups, int n, gid_t *list) {
    // (0 asks only how many.)
    if (n <= 0) return REAL(getgroups)(n, list);
    return adsm::interpose::filled_buffer<int>(
        list, static_cast<size_t>(n) * sizeof *list, EFAULT,
        [&](void *l) { return REAL(getgroups)(n, static_cast<gid_t *>(l)); },
        [](int r) { return static_cast<size_t>(r) * sizeof(gid_t); });
}
extern "C" int __getgroups_chk(int n, gid_t *list, size_t listlen);
INTERCEPTOR(int, __getgroups_chk, int n, gid_t *list, size_t listlen) {
    if (n > 0 && static_cast<size_t>(n) * sizeof *list > listlen) __chk_fail();
    return getgroups(n, list);
}
INTERCEPTOR(int, setgroups, size_t n, const gid_t *list) {
    if (n > SIZE_MAX / sizeof *list) return REAL(setgroups)(n, list);
    return adsm::interpose::read_buffer<int>(
        list, n * sizeof *list, [&](const void *l) { return REAL(setgroups)(n, static_cast<const gid_t *>(l)); });
}
INTERCEPTOR(int, getresuid, uid_t *r, uid_t *e, uid_t *s) {
    Local lr(r, sizeof *r), le(e, sizeof *e), ls(s, sizeof *s);
    return filled<int>([&] { return REAL(getresuid)(lr.get<uid_t>(), le.get<uid_t>(), ls.get<uid_t>()); }, lr, le, ls);
}
INTERCEPTOR(int, getresgid, gid_t *r, gid_t *e, gid_t *s) {
    Local lr(r, sizeof *r), le(e, sizeof *e), ls(s, sizeof *s);
    return filled<int>([&] { return REAL(getresgid)(lr.get<gid_t>(), le.get<gid_t>(), ls.get<gid_t>()); }, lr, le, ls);
}

namespace {
// A capability call's data holds one set of 32 bits per word its header's
// version names.  The kernel writes the version it knows into the header
// when it refuses the program's (EINVAL), so the header is stored back
// then too.
template <class Call>
int capabilities(cap_user_header_t header, const void *data, bool data_out, Call &&call) {
    Local h(header, sizeof *header);
    if (!h.loaded()) {
        errno = EFAULT;
        return -1;
    }
    const auto *hv = h.get<struct __user_cap_header_struct>();
    const size_t words = hv->version == _LINUX_CAPABILITY_VERSION_1 ? 1 : 2;
    Local d(data, words * sizeof(struct __user_cap_data_struct), data_out);
    if (!d.loaded()) {
        errno = EFAULT;
        return -1;
    }
    int r = call(h.get<struct __user_cap_header_struct>(), d.get<struct __user_cap_data_struct>());
    const int saved = errno;
    if ((r == 0 || saved == EINVAL) && !h.store()) {
        errno = EFAULT;
        return -1;
    }
    if (r == 0 && !d.store()) {
        errno = EFAULT;
        return -1;
    }
    errno = saved;
    return r;
}
}  // namespace

INTERCEPTOR(int, capget, cap_user_header_t header, cap_user_data_t data) {
    return capabilities(header, data, true, [&](cap_user_header_t h, cap_user_data_t d) { return REAL(capget)(h, d); });
}
INTERCEPTOR(int, capset, cap_user_header_t header, const cap_user_data_t data) {
    return capabilities(header, data, false, [&](cap_user_header_t h, cap_user_data_t d) { return REAL(capset)(h, d); });
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
