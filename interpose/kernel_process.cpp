// The process's signals, scheduling and identities, whose structures the
// kernel fills or reads (kernel_structs.h): signals pending and waited for
// (sigpending, sigtimedwait, sigwaitinfo, sigwait, signalfd's mask), CPU
// masks and scheduling parameters, the CPU a thread runs on, groups and
// the real, effective and saved ids, and capabilities.  A structure in
// shared memory whose block was closed made each fail with EFAULT.
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "interpose/interceptor.h"
#include "interpose/kernel_structs.h"
#include "interpose/staged_buffer.h"
#include "interpose/staged_calls.h"

extern "C" {
[[noreturn]] void __chk_fail(void);
// (The C library exports them; only libcap declares them.)
int capget(cap_user_header_t header, cap_user_data_t data);
int capset(cap_user_header_t header, const cap_user_data_t data);
}

using adsm::interpose::filled;
using adsm::interpose::filled_or_undone;
using adsm::interpose::Local;
using adsm::interpose::one;

// ---------------------------------------------------------------- signals pending and waited for

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
    return capabilities(header, data, false,
                        [&](cap_user_header_t h, cap_user_data_t d) { return REAL(capset)(h, d); });
}
