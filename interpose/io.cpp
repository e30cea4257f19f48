// The read and write families, sockets and stdio included, with their
// _FORTIFY_SOURCE (__*_chk) and 64-bit-offset twins.  A call whose buffers
// do not touch shared memory goes to the C library as it is; one that does
// goes through staging (staging.h), which keeps its result and errno those
// of one real call.
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/kernel_in_place.h"
#include "interpose/kernel_structs.h"
#include "interpose/staged_calls.h"
#include "interpose/staging.h"

extern "C" [[noreturn]] void __chk_fail(void);

// The vectored calls that the plain ones stage through.
DECLARE_REAL(readv)
DECLARE_REAL(preadv)
DECLARE_REAL(preadv64)
DECLARE_REAL(writev)
DECLARE_REAL(pwritev)
DECLARE_REAL(pwritev64)
DECLARE_REAL(recvmsg)
DECLARE_REAL(sendmsg)

namespace {

using adsm::interpose::Address;
using adsm::interpose::filled;
using adsm::interpose::Local;
using adsm::interpose::open_in_place;
using adsm::interpose::Staged;
using adsm::interpose::staged_in;
using adsm::interpose::staged_out;
using adsm::interpose::stages;

struct iovec one(const void *buf, size_t n) { return {const_cast<void *>(buf), n}; }

// recvmsg and sendmsg with the program's iovecs replaced; the fields the
// kernel fills go back into the program's msghdr.
ssize_t recvmsg_staged(int fd, struct msghdr *msg, int flags) {
    bool rounds = (flags & MSG_WAITALL) != 0;
    // With several rounds (MSG_WAITALL) the address and control data come
    // with the first: later rounds get no room for them, so they cannot
    // overwrite it, and the flags of every round are kept.
    const struct msghdr asked = *msg;
    int flags_seen = 0;
    return staged_in(msg->msg_iov, static_cast<int>(msg->msg_iovlen), rounds,
                     [&](const struct iovec *iov, int cnt, size_t done) {
                         struct msghdr m = asked;
                         m.msg_iov = const_cast<struct iovec *>(iov);
                         m.msg_iovlen = static_cast<size_t>(cnt);
                         if (done > 0) {
                             m.msg_name = nullptr;
                             m.msg_namelen = 0;
                             m.msg_control = nullptr;
                             m.msg_controllen = 0;
                         }
                         ssize_t r = REAL(recvmsg)(fd, &m, flags);
                         if (r < 0) return r;
                         if (done == 0) {
                             msg->msg_namelen = m.msg_namelen;
                             msg->msg_controllen = m.msg_controllen;
                         }
                         flags_seen |= m.msg_flags;
                         msg->msg_flags = flags_seen;
                         return r;
                     });
}

ssize_t sendmsg_staged(int fd, const struct msghdr *msg, int flags) {
    return staged_out(msg->msg_iov, static_cast<int>(msg->msg_iovlen), [&](const struct iovec *iov, int cnt, size_t) {
        struct msghdr m = *msg;
        m.msg_iov = const_cast<struct iovec *>(iov);
        m.msg_iovlen = static_cast<size_t>(cnt);
        return REAL(sendmsg)(fd, &m, flags);
    });
}

bool iov_staged(const struct msghdr *msg) {
    return static_cast<int>(msg->msg_iovlen) <= IOV_MAX && stages(msg->msg_iov, static_cast<int>(msg->msg_iovlen));
}

// A message's own parts: its header, its address and its control data (the
// descriptors and credentials passed with it).  The kernel reads them, and
// on a receive writes them, itself: where any is shared memory the call
// gets copies of them (kernel_structs.h), stored back after a receive;
// control data larger than a copy takes is opened in place
// (kernel_in_place.h).
bool parts_shared(const struct msghdr *msg) {
    return stages(msg, sizeof *msg) || (msg->msg_name && stages(msg->msg_name, msg->msg_namelen)) ||
           (msg->msg_control && stages(msg->msg_control, msg->msg_controllen));
}

template <class Call>
ssize_t with_parts(struct msghdr *msg, bool receiving, Call &&call) {
    Local hdr(msg, sizeof *msg, receiving);
    if (!hdr.loaded()) {
        errno = EFAULT;
        return -1;
    }
    struct msghdr m = *hdr.get<struct msghdr>();
    Local name(m.msg_name, m.msg_namelen, receiving), control(m.msg_control, m.msg_controllen, receiving);
    // Control data too large for a copy (many descriptors) is opened where it is.
    if (m.msg_control && !control.copied()) open_in_place(m.msg_control, m.msg_controllen, receiving);
    m.msg_name = name.get<void>();
    m.msg_control = control.get<void>();
    ssize_t r = filled<ssize_t>([&] { return call(&m); }, name, control);
    if (r < 0 || !receiving) return r;
    struct msghdr *theirs = hdr.get<struct msghdr>();
    theirs->msg_namelen = m.msg_namelen;
    theirs->msg_controllen = m.msg_controllen;
    theirs->msg_flags = m.msg_flags;
    if (hdr.store()) return r;
    errno = EFAULT;
    return -1;
}

// Whether several messages need their calls one by one: some buffer or
// part is shared memory (a vector in shared memory has its headers there).
bool any_staged(const struct mmsghdr *vec, unsigned int vlen) {
    if (!vec) return false;
    for (unsigned int i = 0; i < vlen; ++i)
        if (iov_staged(&vec[i].msg_hdr) || parts_shared(&vec[i].msg_hdr)) return true;
    return false;
}

}  // namespace

// ---------------------------------------------------------------- read family

INTERCEPTOR(ssize_t, read, int fd, void *buf, size_t n) {
    if (!stages(buf, n)) return REAL(read)(fd, buf, n);
    struct iovec v = one(buf, n);
    return staged_in(&v, 1, adsm::interpose::is_regular(fd),
                     [&](const struct iovec *iov, int cnt, size_t) { return REAL(readv)(fd, iov, cnt); });
}

INTERCEPTOR(ssize_t, pread, int fd, void *buf, size_t n, off_t off) {
    if (!stages(buf, n)) return REAL(pread)(fd, buf, n, off);
    struct iovec v = one(buf, n);
    return staged_in(&v, 1, adsm::interpose::is_regular(fd), [&](const struct iovec *iov, int cnt, size_t done) {
        return REAL(preadv)(fd, iov, cnt, off + static_cast<off_t>(done));
    });
}

INTERCEPTOR(ssize_t, pread64, int fd, void *buf, size_t n, off64_t off) {
    if (!stages(buf, n)) return REAL(pread64)(fd, buf, n, off);
    struct iovec v = one(buf, n);
    return staged_in(&v, 1, adsm::interpose::is_regular(fd), [&](const struct iovec *iov, int cnt, size_t done) {
        return REAL(preadv64)(fd, iov, cnt, off + static_cast<off64_t>(done));
    });
}

INTERCEPTOR(ssize_t, readv, int fd, const struct iovec *iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(readv)(fd, iov, iovcnt);
    return staged_in(iov, iovcnt, adsm::interpose::is_regular(fd),
                     [&](const struct iovec *v, int cnt, size_t) { return REAL(readv)(fd, v, cnt); });
}

INTERCEPTOR(ssize_t, preadv, int fd, const struct iovec *iov, int iovcnt, off_t off) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(preadv)(fd, iov, iovcnt, off);
    return staged_in(iov, iovcnt, adsm::interpose::is_regular(fd), [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(preadv)(fd, v, cnt, off + static_cast<off_t>(done));
    });
}

INTERCEPTOR(ssize_t, preadv64, int fd, const struct iovec *iov, int iovcnt, off64_t off) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(preadv64)(fd, iov, iovcnt, off);
    return staged_in(iov, iovcnt, adsm::interpose::is_regular(fd), [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(preadv64)(fd, v, cnt, off + static_cast<off64_t>(done));
    });
}

INTERCEPTOR(ssize_t, preadv2, int fd, const struct iovec *iov, int iovcnt, off_t off, int flags) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(preadv2)(fd, iov, iovcnt, off, flags);
    // Offset -1 reads at the file position: each round moves it on.
    return staged_in(iov, iovcnt, adsm::interpose::is_regular(fd), [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(preadv2)(fd, v, cnt, off == -1 ? -1 : off + static_cast<off_t>(done), flags);
    });
}

// What preadv2 binds to in a program built with -D_FILE_OFFSET_BITS=64.
INTERCEPTOR(ssize_t, preadv64v2, int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(preadv64v2)(fd, iov, iovcnt, off, flags);
    return staged_in(iov, iovcnt, adsm::interpose::is_regular(fd), [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(preadv64v2)(fd, v, cnt, off == -1 ? -1 : off + static_cast<off64_t>(done), flags);
    });
}

// ---------------------------------------------------------------- write family

INTERCEPTOR(ssize_t, write, int fd, const void *buf, size_t n) {
    if (!stages(buf, n)) return REAL(write)(fd, buf, n);
    struct iovec v = one(buf, n);
    return staged_out(&v, 1, [&](const struct iovec *iov, int cnt, size_t) { return REAL(writev)(fd, iov, cnt); });
}

INTERCEPTOR(ssize_t, pwrite, int fd, const void *buf, size_t n, off_t off) {
    if (!stages(buf, n)) return REAL(pwrite)(fd, buf, n, off);
    struct iovec v = one(buf, n);
    return staged_out(&v, 1, [&](const struct iovec *iov, int cnt, size_t done) {
        return REAL(pwritev)(fd, iov, cnt, off + static_cast<off_t>(done));
    });
}

INTERCEPTOR(ssize_t, pwrite64, int fd, const void *buf, size_t n, off64_t off) {
    if (!stages(buf, n)) return REAL(pwrite64)(fd, buf, n, off);
    struct iovec v = one(buf, n);
    return staged_out(&v, 1, [&](const struct iovec *iov, int cnt, size_t done) {
        return REAL(pwritev64)(fd, iov, cnt, off + static_cast<off64_t>(done));
    });
}

INTERCEPTOR(ssize_t, writev, int fd, const struct iovec *iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(writev)(fd, iov, iovcnt);
    return staged_out(iov, iovcnt, [&](const struct iovec *v, int cnt, size_t) { return REAL(writev)(fd, v, cnt); });
}

INTERCEPTOR(ssize_t, pwritev, int fd, const struct iovec *iov, int iovcnt, off_t off) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(pwritev)(fd, iov, iovcnt, off);
    return staged_out(iov, iovcnt, [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(pwritev)(fd, v, cnt, off + static_cast<off_t>(done));
    });
}

INTERCEPTOR(ssize_t, pwritev64, int fd, const struct iovec *iov, int iovcnt, off64_t off) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(pwritev64)(fd, iov, iovcnt, off);
    return staged_out(iov, iovcnt, [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(pwritev64)(fd, v, cnt, off + static_cast<off64_t>(done));
    });
}

INTERCEPTOR(ssize_t, pwritev2, int fd, const struct iovec *iov, int iovcnt, off_t off, int flags) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt)) return REAL(pwritev2)(fd, iov, iovcnt, off, flags);
    return staged_out(iov, iovcnt, [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(pwritev2)(fd, v, cnt, off == -1 ? -1 : off + static_cast<off_t>(done), flags);
    });
}

INTERCEPTOR(ssize_t, pwritev64v2, int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags) {
    if (iovcnt < 0 || iovcnt > IOV_MAX || !stages(iov, iovcnt))
        return REAL(pwritev64v2)(fd, iov, iovcnt, off, flags);
    return staged_out(iov, iovcnt, [&](const struct iovec *v, int cnt, size_t done) {
        return REAL(pwritev64v2)(fd, v, cnt, off == -1 ? -1 : off + static_cast<off64_t>(done), flags);
    });
}

// ---------------------------------------------------------------- sockets

INTERCEPTOR(ssize_t, recv, int fd, void *buf, size_t n, int flags) {
    if (!stages(buf, n)) return REAL(recv)(fd, buf, n, flags);
    struct iovec v = one(buf, n);
    struct msghdr m = {};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    return recvmsg_staged(fd, &m, flags);
}

INTERCEPTOR(ssize_t, recvfrom, int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *addrlen) {
    Address a(addr, addrlen);
    return filled<ssize_t>(
        [&]() -> ssize_t {
            struct sockaddr *from = a.addr.get<struct sockaddr>();
            socklen_t *len = a.len.get<socklen_t>();
            if (!stages(buf, n)) return REAL(recvfrom)(fd, buf, n, flags, from, len);
            struct iovec v = one(buf, n);
            struct msghdr m = {};
            m.msg_iov = &v;
            m.msg_iovlen = 1;
            m.msg_name = from;
            m.msg_namelen = from && len ? *len : 0;
            ssize_t r = recvmsg_staged(fd, &m, flags);
            if (r >= 0 && from && len) *len = m.msg_namelen;
            return r;
        },
        a.len, a.addr);
}

INTERCEPTOR(ssize_t, recvmsg, int fd, struct msghdr *msg, int flags) {
    if (!msg) return REAL(recvmsg)(fd, msg, flags);
    if (parts_shared(msg))
        return with_parts(msg, true, [&](struct msghdr *m) {
            return iov_staged(m) ? recvmsg_staged(fd, m, flags) : REAL(recvmsg)(fd, m, flags);
        });
    if (!iov_staged(msg)) return REAL(recvmsg)(fd, msg, flags);
    return recvmsg_staged(fd, msg, flags);
}

INTERCEPTOR(ssize_t, send, int fd, const void *buf, size_t n, int flags) {
    if (!stages(buf, n)) return REAL(send)(fd, buf, n, flags);
    struct iovec v = one(buf, n);
    struct msghdr m = {};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    return sendmsg_staged(fd, &m, flags);
}

INTERCEPTOR(ssize_t, sendto, int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
            socklen_t addrlen) {
    Local a(addr, addrlen, false);
    return filled<ssize_t>(
        [&]() -> ssize_t {
            const struct sockaddr *to = a.get<const struct sockaddr>();
            if (!stages(buf, n)) return REAL(sendto)(fd, buf, n, flags, to, addrlen);
            struct iovec v = one(buf, n);
            struct msghdr m = {};
            m.msg_iov = &v;
            m.msg_iovlen = 1;
            m.msg_name = const_cast<struct sockaddr *>(to);
            m.msg_namelen = addrlen;
            return sendmsg_staged(fd, &m, flags);
        },
        a);
}

INTERCEPTOR(ssize_t, sendmsg, int fd, const struct msghdr *msg, int flags) {
    if (!msg) return REAL(sendmsg)(fd, msg, flags);
    if (parts_shared(msg))
        return with_parts(const_cast<struct msghdr *>(msg), false, [&](struct msghdr *m) {
            return iov_staged(m) ? sendmsg_staged(fd, m, flags) : REAL(sendmsg)(fd, m, flags);
        });
    if (!iov_staged(msg)) return REAL(sendmsg)(fd, msg, flags);
    return sendmsg_staged(fd, msg, flags);
}

// Several messages in one call, as the kernel would take them one by one:
// sendmmsg stops at the first message that fails (reporting the ones sent,
// or the error when it was the first), as the system call does.
INTERCEPTOR(int, sendmmsg, int fd, struct mmsghdr *vec, unsigned int vlen, int flags) {
    if (!any_staged(vec, vlen)) return REAL(sendmmsg)(fd, vec, vlen, flags);
    for (unsigned int i = 0; i < vlen; ++i) {
        ssize_t r = sendmsg(fd, &vec[i].msg_hdr, flags);
        if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
        vec[i].msg_len = static_cast<unsigned int>(r);
    }
    return static_cast<int>(vlen);
}

// recvmmsg likewise: MSG_WAITFORONE makes every message after the first
// non-blocking, an error after the first message ends the call with the
// messages received (the socket reports it again on the next call), and the
// timeout is checked after each message, as the kernel does.
INTERCEPTOR(int, recvmmsg, int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *timeout) {
    if (!any_staged(vec, vlen)) return REAL(recvmmsg)(fd, vec, vlen, flags, timeout);
    struct timespec start = {};
    if (timeout) clock_gettime(CLOCK_MONOTONIC, &start);
    int f = flags & ~MSG_WAITFORONE;
    for (unsigned int i = 0; i < vlen; ++i) {
        ssize_t r = recvmsg(fd, &vec[i].msg_hdr, f);
        if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
        vec[i].msg_len = static_cast<unsigned int>(r);
        if (flags & MSG_WAITFORONE) f |= MSG_DONTWAIT;
        if (timeout) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long long spent = (now.tv_sec - start.tv_sec) * 1000000000ll + (now.tv_nsec - start.tv_nsec);
            if (spent >= timeout->tv_sec * 1000000000ll + timeout->tv_nsec) return static_cast<int>(i + 1);
        }
    }
    return static_cast<int>(vlen);
}

// The C library's other names for the same calls, which some programs and
// libraries call directly.
INTERCEPTOR(ssize_t, __read, int fd, void *buf, size_t n) { return read(fd, buf, n); }
INTERCEPTOR(ssize_t, __write, int fd, const void *buf, size_t n) { return write(fd, buf, n); }
INTERCEPTOR(ssize_t, __pread64, int fd, void *buf, size_t n, off64_t off) { return pread64(fd, buf, n, off); }
INTERCEPTOR(ssize_t, __pwrite64, int fd, const void *buf, size_t n, off64_t off) { return pwrite64(fd, buf, n, off); }
INTERCEPTOR(ssize_t, __recv, int fd, void *buf, size_t n, int flags) { return recv(fd, buf, n, flags); }
INTERCEPTOR(ssize_t, __send, int fd, const void *buf, size_t n, int flags) { return send(fd, buf, n, flags); }
INTERCEPTOR(int, __sendmmsg, int fd, struct mmsghdr *vec, unsigned int vlen, int flags) {
    return sendmmsg(fd, vec, vlen, flags);
}

// ---------------------------------------------------------------- stdio

namespace {

// A transfer smaller than the stream's buffer goes through that buffer: the
// C library copies it in user space, where a protected page faults into the
// runtime like any access of the program.  (glibc has the system call use
// the program's memory only for a transfer at least the buffer's size, or
// when the buffer is under 128 bytes, as an unbuffered stream's is.)
bool via_stream_buffer(FILE *stream, size_t n) {
    size_t buffer = stream ? __fbufsize(stream) : 0;
    return buffer >= 128 && n < buffer;
}

bool stdio_direct(const void *ptr, size_t size, size_t nmemb, FILE *stream) {
    return size == 0 || nmemb == 0 || nmemb > SIZE_MAX / size || !stages(ptr, size * nmemb) ||
           via_stream_buffer(stream, size * nmemb);
}

// fread and fwrite, piece by piece: ordinary pieces go to the C library
// directly (so an unmapped byte gives the error it would give), shared ones
// through staging.  Returns bytes moved.
template <class Real>
size_t stdio_pieces(void *ptr, size_t bytes, FILE *stream, bool in, Real &&real) {
    adsm::preload::Piece pieces[64];
    size_t done = 0;
    while (done < bytes) {
        size_t np = adsm::preload::split(static_cast<uint8_t *>(ptr) + done, bytes - done, pieces, 64);
        for (size_t k = 0; k < np; ++k) {
            const adsm::preload::Piece &pc = pieces[k];
            if (!pc.shared) {
                size_t got = real(pc.p, pc.n, stream);
                done += got;
                if (got < pc.n) return done;
                continue;
            }
            for (size_t at = 0; at < pc.n;) {
                struct iovec v = one(pc.p + at, pc.n - at);
                Staged st;
                st.layout(&v, 1, 0, 0);
                if (st.requested() == 0) {
                    if (st.out_of_staging()) errno = ENOMEM;
                    return done;
                }
                size_t len = st.requested();
                void *stage = st.iov()[0].iov_base;
                if (!in && !st.gather()) return done;
                size_t got = real(stage, len, stream);
                bool failed = false;
                if (in) st.scatter(got, false, &failed);
                if (failed) return done;  // read from the stream, but not into the program's memory
                done += got;
                at += got;
                if (got < len) return done;
            }
        }
    }
    return done;
}

template <class Real>
size_t stdio_staged(void *ptr, size_t bytes, FILE *stream, bool in, Real &&real) {
    adsm::interpose::chaos_tick();
    adsm::interpose::StagingCall bracket(in, bytes);
    size_t done = stdio_pieces(ptr, bytes, stream, in, real);
    bracket.set_result(done);
    return done;
}

}  // namespace

INTERCEPTOR(size_t, fread, void *ptr, size_t size, size_t nmemb, FILE *stream) {
    if (stdio_direct(ptr, size, nmemb, stream)) return REAL(fread)(ptr, size, nmemb, stream);
    return stdio_staged(ptr, size * nmemb, stream, true,
                        [](void *p, size_t n, FILE *f) { return REAL(fread)(p, 1, n, f); }) /
           size;
}

INTERCEPTOR(size_t, fread_unlocked, void *ptr, size_t size, size_t nmemb, FILE *stream) {
    if (stdio_direct(ptr, size, nmemb, stream)) return REAL(fread_unlocked)(ptr, size, nmemb, stream);
    return stdio_staged(ptr, size * nmemb, stream, true,
                        [](void *p, size_t n, FILE *f) { return REAL(fread_unlocked)(p, 1, n, f); }) /
           size;
}

INTERCEPTOR(size_t, fwrite, const void *ptr, size_t size, size_t nmemb, FILE *stream) {
    if (stdio_direct(ptr, size, nmemb, stream)) return REAL(fwrite)(ptr, size, nmemb, stream);
    return stdio_staged(const_cast<void *>(ptr), size * nmemb, stream, false,
                        [](void *p, size_t n, FILE *f) { return REAL(fwrite)(p, 1, n, f); }) /
           size;
}

INTERCEPTOR(size_t, fwrite_unlocked, const void *ptr, size_t size, size_t nmemb, FILE *stream) {
    if (stdio_direct(ptr, size, nmemb, stream)) return REAL(fwrite_unlocked)(ptr, size, nmemb, stream);
    return stdio_staged(const_cast<void *>(ptr), size * nmemb, stream, false,
                        [](void *p, size_t n, FILE *f) { return REAL(fwrite_unlocked)(p, 1, n, f); }) /
           size;
}

// ---------------------------------------------------------------- _FORTIFY_SOURCE

INTERCEPTOR(ssize_t, __read_chk, int fd, void *buf, size_t n, size_t buflen) {
    if (n > buflen) __chk_fail();
    return read(fd, buf, n);
}

INTERCEPTOR(ssize_t, __pread_chk, int fd, void *buf, size_t n, off_t off, size_t buflen) {
    if (n > buflen) __chk_fail();
    return pread(fd, buf, n, off);
}

INTERCEPTOR(ssize_t, __pread64_chk, int fd, void *buf, size_t n, off64_t off, size_t buflen) {
    if (n > buflen) __chk_fail();
    return pread64(fd, buf, n, off);
}

INTERCEPTOR(ssize_t, __recv_chk, int fd, void *buf, size_t n, size_t buflen, int flags) {
    if (n > buflen) __chk_fail();
    return recv(fd, buf, n, flags);
}

INTERCEPTOR(ssize_t, __recvfrom_chk, int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
            socklen_t *addrlen) {
    if (n > buflen) __chk_fail();
    return recvfrom(fd, buf, n, flags, addr, addrlen);
}

INTERCEPTOR(size_t, __fread_chk, void *ptr, size_t ptrlen, size_t size, size_t nmemb, FILE *stream) {
    if (size && nmemb > SIZE_MAX / size) __chk_fail();
    if (size * nmemb > ptrlen) __chk_fail();
    return fread(ptr, size, nmemb, stream);
}

INTERCEPTOR(size_t, __fread_unlocked_chk, void *ptr, size_t ptrlen, size_t size, size_t nmemb, FILE *stream) {
    if (size && nmemb > SIZE_MAX / size) __chk_fail();
    if (size * nmemb > ptrlen) __chk_fail();
    return fread_unlocked(ptr, size, nmemb, stream);
}
