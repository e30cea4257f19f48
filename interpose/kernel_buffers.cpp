// System calls outside the I/O families whose buffers the kernel fills or
// reads: random bytes (getrandom, getentropy) and readiness arrays (poll,
// ppoll, epoll_wait, epoll_pwait, epoll_pwait2, with their fortified and
// second names).  As for read (staging.h), the kernel cannot take the
// runtime's fault: a buffer of shared memory whose block is closed made
// these calls fail with EFAULT (Python's os.urandom of a shared buffer did,
// under every protocol that closes blocks).  A buffer that touches shared
// memory goes through the thread's staging buffer for one real call, whose
// result and errno are the program's.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/uio.h>

#include <climits>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/signal_masks.h"
#include "interpose/staged_buffer.h"
#include "interpose/staged_calls.h"
#include "interpose/staging.h"

extern "C" [[noreturn]] void __chk_fail(void);

namespace {

using adsm::interpose::OnStaging;
using adsm::interpose::Staged;
using adsm::interpose::StagingCall;
using adsm::interpose::staged_in;
using adsm::interpose::stages;

// How the kernel uses a readiness array: poll's it reads, then writes
// whole; epoll's it only writes, one entry per event it returns.
enum class Use { read_then_written, entry_per_result };

// call(array) makes the real call on `array`: the staged copy, or the
// program's own when it does not touch shared memory, cannot be staged in
// one piece, or has a count the kernel refuses (EINVAL: its answer then).
template <class Call>
int staged_array(void *array, size_t entries, size_t entry, Use use, Call &&call) {
    if (entries == 0 || entries > INT_MAX / entry || !stages(array, entries * entry)) return call(array);
    const size_t bytes = entries * entry;
    const int entry_errno = errno;  // what a call that succeeds leaves, whatever the runtime did
    OnStaging on(array, bytes);
    void *staged = on.whole();
    errno = entry_errno;
    if (!staged) return call(array);
    if (use == Use::read_then_written && !on.gather()) {
        errno = EFAULT;  // the array's bytes could not be read
        return -1;
    }
    errno = entry_errno;
    int r = call(staged);
    if (r < 0) return r;  // (the kernel wrote nothing back)
    int saved = errno;
    bool stored = on.scatter(use == Use::read_then_written ? bytes : static_cast<size_t>(r) * entry);
    errno = saved;
    if (!stored) {
        errno = EFAULT;  // what the kernel wrote could not be stored
        return -1;
    }
    return r;
}

}  // namespace

// ---------------------------------------------------------------- random bytes

INTERCEPTOR(ssize_t, getrandom, void *buf, size_t n, unsigned int flags) {
    if (!stages(buf, n)) return REAL(getrandom)(buf, n, flags);
    // One staging round at most (4 MiB): a shorter count than asked is
    // getrandom's own behaviour for large requests.
    struct iovec whole = {buf, n};
    return staged_in(&whole, 1, false, [&](const struct iovec *iov, int cnt, size_t) -> ssize_t {
        size_t got = 0;
        for (int i = 0; i < cnt; ++i) {
            ssize_t r = REAL(getrandom)(iov[i].iov_base, iov[i].iov_len, flags);
            if (r < 0) return got ? static_cast<ssize_t>(got) : r;
            got += static_cast<size_t>(r);
            if (static_cast<size_t>(r) < iov[i].iov_len) break;
        }
        return static_cast<ssize_t>(got);
    });
}

INTERCEPTOR(int, getentropy, void *buf, size_t n) {
    // (More than 256 bytes is refused before anything is written.)
    if (n > 256 || !stages(buf, n)) return REAL(getentropy)(buf, n);
    const int entry = errno;
    OnStaging on(buf, n);
    const Staged &st = on.staged();
    errno = entry;
    if (st.requested() != n) return REAL(getentropy)(buf, n);
    for (int i = 0; i < st.iovcnt(); ++i)
        if (REAL(getentropy)(st.iov()[i].iov_base, st.iov()[i].iov_len) != 0) return -1;
    if (!on.scatter(n)) {
        errno = EIO;
        return -1;
    }
    errno = entry;
    return 0;
}

// ---------------------------------------------------------------- readiness arrays

INTERCEPTOR(int, poll, struct pollfd *fds, nfds_t nfds, int timeout) {
    return staged_array(fds, nfds, sizeof *fds, Use::read_then_written,
                        [&](void *a) { return REAL(poll)(static_cast<struct pollfd *>(a), nfds, timeout); });
}

INTERCEPTOR(int, ppoll, struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask) {
    sigset_t open;
    mask = adsm::interpose::fault_signal_open(mask, &open);
    return staged_array(fds, nfds, sizeof *fds, Use::read_then_written,
                        [&](void *a) { return REAL(ppoll)(static_cast<struct pollfd *>(a), nfds, timeout, mask); });
}

INTERCEPTOR(int, epoll_wait, int epfd, struct epoll_event *events, int maxevents, int timeout) {
    return staged_array(events, static_cast<size_t>(maxevents), sizeof *events, Use::entry_per_result, [&](void *a) {
        return REAL(epoll_wait)(epfd, static_cast<struct epoll_event *>(a), maxevents, timeout);
    });
}

INTERCEPTOR(int, epoll_pwait, int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *mask) {
    sigset_t open;
    mask = adsm::interpose::fault_signal_open(mask, &open);
    return staged_array(events, static_cast<size_t>(maxevents), sizeof *events, Use::entry_per_result, [&](void *a) {
        return REAL(epoll_pwait)(epfd, static_cast<struct epoll_event *>(a), maxevents, timeout, mask);
    });
}

INTERCEPTOR(int, epoll_pwait2, int epfd, struct epoll_event *events, int maxevents, const struct timespec *timeout,
            const sigset_t *mask) {
    sigset_t open;
    mask = adsm::interpose::fault_signal_open(mask, &open);
    return staged_array(events, static_cast<size_t>(maxevents), sizeof *events, Use::entry_per_result, [&](void *a) {
        return REAL(epoll_pwait2)(epfd, static_cast<struct epoll_event *>(a), maxevents, timeout, mask);
    });
}

// The C library's second name and the _FORTIFY_SOURCE forms, which check
// the array's size as the C library's do.
INTERCEPTOR(int, __poll, struct pollfd *fds, nfds_t nfds, int timeout) { return poll(fds, nfds, timeout); }
INTERCEPTOR(int, __poll_chk, struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen) {
    if (fdslen / sizeof *fds < nfds) __chk_fail();
    return poll(fds, nfds, timeout);
}
INTERCEPTOR(int, __ppoll_chk, struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *mask,
            size_t fdslen) {
    if (fdslen / sizeof *fds < nfds) __chk_fail();
    return ppoll(fds, nfds, timeout, mask);
}
