// The calls that close descriptors or put a file at a number the program
// chooses, kept off the runtime's own (os/held_fds.h): a program that
// closes every descriptor at its start (closefrom, close_range, close in a
// loop) left the runtime without its memory's files, and a fork child found
// its objects gone; dup2 onto one replaced the host mirror with the
// program's file.  The runtime's are refused as the kernel refuses a
// descriptor that is not open (EBADF); a range closes around them.  The
// program's stderr, closed on its way out, is copied first where the
// runtime has a report to make at exit (os/kept_stderr.h).
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "api/preload.h"
#include "interpose/descriptors.h"
#include "interpose/interceptor.h"
#include "os/held_fds.h"
#include "support/log.h"

using adsm::os::is_held;

namespace {

int refuse(int fd, const char *call) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        adsm::log(adsm::LogLevel::warn,
                  "%s onto descriptor %d: adsm holds it for the shared memory; refused with EBADF (the program "
                  "never opened it)",
                  call, fd);
    errno = EBADF;
    return -1;
}

}  // namespace

DECLARE_REAL(close_range)

namespace adsm::interpose {

int close_range_around_held(unsigned first, unsigned last, int flags) {
    if (first <= STDERR_FILENO && STDERR_FILENO <= last && !(flags & CLOSE_RANGE_CLOEXEC))
        adsm::preload::before_stderr_closes();
    int held[64];
    const int n = adsm::os::held_in(first, last, held, 64);
    if (n == 0) return REAL(close_range)(first, last, flags);
    if (first > last) {
        errno = EINVAL;
        return -1;
    }
    // The table unshared once, as the call would, even where the range holds
    // nothing but the runtime's.
    if ((flags & CLOSE_RANGE_UNSHARE) && unshare(CLONE_FILES) != 0) return -1;
    const int rest = flags & ~CLOSE_RANGE_UNSHARE;
    unsigned from = first;
    for (int i = 0; i < n; ++i) {
        const auto h = static_cast<unsigned>(held[i]);  // an int: h + 1 does not wrap
        if (from < h && REAL(close_range)(from, h - 1, rest) != 0) return -1;
        from = h + 1;
    }
    if (from <= last && REAL(close_range)(from, last, rest) != 0) return -1;
    return 0;
}

}  // namespace adsm::interpose

INTERCEPTOR(int, close, int fd) {
    if (is_held(fd)) {
        errno = EBADF;
        return -1;
    }
    if (fd == STDERR_FILENO) adsm::preload::before_stderr_closes();
    return REAL(close)(fd);
}

INTERCEPTOR(int, close_range, unsigned first, unsigned last, int flags) {
    return adsm::interpose::close_range_around_held(first, last, flags);
}

// The C library's closefrom calls close_range itself, past the interposer
// above.
INTERCEPTOR(void, closefrom, int lowfd) {
    if (lowfd < 0) lowfd = 0;
    if (adsm::interpose::close_range_around_held(static_cast<unsigned>(lowfd), UINT_MAX, 0) == 0) return;
    // A kernel without close_range: every descriptor from lowfd up.
    const long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lowfd; fd < max; ++fd)
        if (!is_held(static_cast<int>(fd))) REAL(close)(static_cast<int>(fd));
}

INTERCEPTOR(int, dup2, int old, int fd) {
    if (is_held(fd) && old != fd) return refuse(fd, "dup2");
    return REAL(dup2)(old, fd);
}

INTERCEPTOR(int, dup3, int old, int fd, int flags) {
    if (is_held(fd) && old != fd) return refuse(fd, "dup3");
    return REAL(dup3)(old, fd, flags);
}

extern "C" int __close(int);

INTERCEPTOR(int, __close, int fd) {
    if (is_held(fd)) {
        errno = EBADF;
        return -1;
    }
    if (fd == STDERR_FILENO) adsm::preload::before_stderr_closes();
    return REAL(__close)(fd);
}
