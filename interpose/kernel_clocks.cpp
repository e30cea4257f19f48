// Clocks and timers whose structures the kernel fills or reads
// (kernel_structs.h): the clocks read and set, the kernel's adjustments
// (the timex calls), POSIX timers and timer descriptors.  A structure in
// shared memory whose block was closed made each fail with EFAULT.  The
// time of day and most clocks are answered in the vDSO, in user mode,
// where the runtime's fault is taken; the CPU-time clocks are not.
#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/timex.h>
#include <time.h>

#include "interpose/interceptor.h"
#include "interpose/kernel_structs.h"
#include "interpose/staged_calls.h"

using adsm::interpose::filled;
using adsm::interpose::filled_or_undone;
using adsm::interpose::Local;
using adsm::interpose::one;
using adsm::interpose::stages;

// The runtime reads its own clock through here too, and programs read
// theirs often: the first test is the cheapest.
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
