// The C library's syscall(): system calls a program makes by number,
// past the C library's functions (a library that reads random bytes with
// syscall(SYS_getrandom, ...), one that reads a file with SYS_read).  The
// kernel cannot take the runtime's fault, so such a call into or out of a
// closed block of shared memory failed with EFAULT.  The calls that move a
// program buffer go, when that buffer touches shared memory, to the
// interposer of the C library function that makes the same call (with its
// staging), and return what syscall() returns: the result, or -1 with errno
// set.  Linux's native asynchronous I/O (libaio's io_submit and
// io_getevents come this way) is bounced as POSIX's is (linux_aio.cpp).
// Every other call goes straight on.  The runtime makes its own system
// calls without this function (os/raw_syscall.h).
#include <limits.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "interpose/interceptor.h"
#include "interpose/linux_aio.h"
#include "interpose/staged_calls.h"

using adsm::interpose::stages;

namespace {

// The vector calls' offset comes in two halves; on a 64-bit machine the
// first holds all of it.
off_t offset_of(long low, long) { return static_cast<off_t>(low); }

const struct iovec *vec(long a) { return reinterpret_cast<const struct iovec *>(a); }
void *buf(long a) { return reinterpret_cast<void *>(a); }

}  // namespace

INTERCEPTOR(long, syscall, long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    const int fd = static_cast<int>(a);
    const int cnt = static_cast<int>(c);
    switch (nr) {
    case SYS_read:
        if (stages(buf(b), static_cast<size_t>(c))) return read(fd, buf(b), static_cast<size_t>(c));
        break;
    case SYS_write:
        if (stages(buf(b), static_cast<size_t>(c))) return write(fd, buf(b), static_cast<size_t>(c));
        break;
    case SYS_pread64:
        if (stages(buf(b), static_cast<size_t>(c))) return pread(fd, buf(b), static_cast<size_t>(c), d);
        break;
    case SYS_pwrite64:
        if (stages(buf(b), static_cast<size_t>(c))) return pwrite(fd, buf(b), static_cast<size_t>(c), d);
        break;
    case SYS_readv:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt)) return readv(fd, vec(b), cnt);
        break;
    case SYS_writev:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt)) return writev(fd, vec(b), cnt);
        break;
    case SYS_preadv:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt)) return preadv(fd, vec(b), cnt, offset_of(d, e));
        break;
    case SYS_pwritev:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt)) return pwritev(fd, vec(b), cnt, offset_of(d, e));
        break;
    case SYS_preadv2:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt))
            return preadv2(fd, vec(b), cnt, offset_of(d, e), static_cast<int>(f));
        break;
    case SYS_pwritev2:
        if (cnt >= 0 && cnt <= IOV_MAX && stages(vec(b), cnt))
            return pwritev2(fd, vec(b), cnt, offset_of(d, e), static_cast<int>(f));
        break;
    case SYS_recvfrom:
        if (stages(buf(b), static_cast<size_t>(c)))
            return recvfrom(fd, buf(b), static_cast<size_t>(c), static_cast<int>(d),
                            reinterpret_cast<struct sockaddr *>(e), reinterpret_cast<socklen_t *>(f));
        break;
    case SYS_sendto:
        if (stages(buf(b), static_cast<size_t>(c)))
            return sendto(fd, buf(b), static_cast<size_t>(c), static_cast<int>(d),
                          reinterpret_cast<const struct sockaddr *>(e), static_cast<socklen_t>(f));
        break;
    case SYS_getrandom:
        if (stages(buf(a), static_cast<size_t>(b)))
            return getrandom(buf(a), static_cast<size_t>(b), static_cast<unsigned>(c));
        break;
    case SYS_io_submit:
        return adsm::interpose::linux_aio_submit(a, b, reinterpret_cast<struct iocb **>(c));
    case SYS_io_getevents:
    case SYS_io_pgetevents: {
        long r = REAL(syscall)(nr, a, b, c, d, e, f);
        if (r > 0) adsm::interpose::linux_aio_harvested(a, reinterpret_cast<struct io_event *>(d), r);
        return r;
    }
    case SYS_io_cancel: {
        long r = REAL(syscall)(nr, a, b, c, d, e, f);
        if (r == 0) adsm::interpose::linux_aio_harvested(a, reinterpret_cast<struct io_event *>(c), 1);
        return r;
    }
    case SYS_io_destroy: {
        long r = REAL(syscall)(nr, a, b, c, d, e, f);
        adsm::interpose::linux_aio_destroyed(a);
        return r;
    }
    default:
        break;
    }
    return REAL(syscall)(nr, a, b, c, d, e, f);
}
