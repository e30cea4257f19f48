// Linux's native asynchronous I/O (io_submit and io_getevents, which
// libaio makes through syscall(): raw_syscalls.cpp hands them here).  The
// kernel reads or fills a request's buffer on its own, and cannot take the
// runtime's fault: into or out of a closed block of shared memory the
// request ended with -EFAULT.  As for POSIX's (async_io.cpp), a read or
// write whose buffer is one shared allocation runs on a private bounce
// buffer (filled at submission for a write); the kernel copies the iocb
// when it takes it, so the program's iocb names its own buffer again once
// io_submit returns.  A read's bytes reach the program's buffer in the
// io_getevents (or io_cancel) that hands its completion to the program,
// before that call returns; one whose bytes cannot reach shared memory
// ends in -EIO.  A vector request (IOCB_CMD_PREADV, PWRITEV) with a piece
// in shared memory runs on one bounce buffer of its whole length, as a
// vector of one piece (the kernel copies the vector at submission too);
// its pieces are kept, since the program may reuse its vector as soon as
// io_submit returns.
#include "interpose/linux_aio.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <new>

#include "api/preload.h"
#include "interpose/bounce_buffers.h"
#include "interpose/interceptor.h"
#include "os/futex_lock.h"
#include "os/vm.h"

DECLARE_REAL(syscall)

namespace {

using adsm::preload::Scope;

// A request on a bounce buffer, from its submission until its completion
// reaches the program.  (An iocb is the program's again only then, so a
// context and an iocb name one request at a time.)
struct Bounced {
    long ctx;
    const struct iocb *cb;
    uint64_t program;
    void *bounce;
    size_t mapped;
    bool read;
    bool queued;  // the kernel took it: its completion may be harvested
    struct iovec *pieces;  // a vector request's, as submitted (else nullptr)
    uint64_t count;        // (their number, the iocb's aio_nbytes)
    struct iovec whole;    // the vector the kernel gets: the bounce buffer
    Bounced *next;
    ~Bounced() { delete[] pieces; }
};
adsm::interpose::BounceRecords<Bounced> g_records;

bool is_vector(const struct iocb *cb) {
    return cb->aio_lio_opcode == IOCB_CMD_PREADV || cb->aio_lio_opcode == IOCB_CMD_PWRITEV;
}

// A vector request's pieces, copied as the kernel copies them: false where
// they cannot be (the kernel's to refuse).
bool copy_pieces(const struct iocb *cb, struct iovec *out) {
    const size_t n = cb->aio_nbytes * sizeof *out;
    const void *from = reinterpret_cast<const void *>(cb->aio_buf);
    if (adsm::preload::touches_window(from, n)) return adsm::preload::read_shared(from, out, n) == adsmSuccess;
    return adsm::os::copy_checked_from(out, from, n);
}

// Whether a vector's pieces go through a bounce buffer (*total: their
// length): some piece is shared memory, and each that touches it is one
// shared allocation, whole.
bool pieces_bounce(const struct iovec *v, uint64_t count, size_t *total) {
    bool shared = false;
    size_t t = 0;
    for (uint64_t i = 0; i < count; ++i) {
        if (v[i].iov_len > SSIZE_MAX - t) return false;
        t += v[i].iov_len;
        if (!adsm::preload::touches_window(v[i].iov_base, v[i].iov_len)) continue;
        if (!adsm::interpose::bounces(v[i].iov_base, v[i].iov_len)) return false;
        shared = true;
    }
    *total = t;
    return shared;
}

// Moves bytes between a vector's pieces and the bounce buffer: the first n
// of the buffer into the pieces (a read), or the pieces into the buffer.
bool move_pieces(const struct iovec *v, uint64_t count, uint8_t *buf, size_t n, bool into_pieces) {
    for (uint64_t i = 0; i < count && n > 0; ++i) {
        const size_t len = v[i].iov_len < n ? v[i].iov_len : n;
        void *piece = v[i].iov_base;
        if (adsm::preload::touches_window(piece, len)) {
            adsmError e = into_pieces ? adsm::preload::write_shared(piece, buf, len)
                                      : adsm::preload::read_shared(piece, buf, len);
            if (e != adsmSuccess) return false;
        } else if (into_pieces) {
            memcpy(piece, buf, len);
        } else {
            memcpy(buf, piece, len);
        }
        buf += len;
        n -= len;
    }
    return true;
}

// (Out of line: only a vector's check takes a vector's room of stack.)
__attribute__((noinline)) bool vector_needs_bounce(const struct iocb *cb) {
    struct iovec v[IOV_MAX];
    size_t total;
    return copy_pieces(cb, v) && pieces_bounce(v, cb->aio_nbytes, &total);
}

bool needs_bounce(const struct iocb *cb) {
    if (cb->aio_lio_opcode == IOCB_CMD_PREAD || cb->aio_lio_opcode == IOCB_CMD_PWRITE)
        return adsm::interpose::bounces(reinterpret_cast<const void *>(cb->aio_buf), cb->aio_nbytes);
    return is_vector(cb) && cb->aio_nbytes > 0 && cb->aio_nbytes <= IOV_MAX &&
           adsm::preload::g_window_size.load(std::memory_order_relaxed) != 0 && !adsm::preload::inside() &&
           vector_needs_bounce(cb);
}

// A record for cb on a bounce buffer, linked (not yet queued), its iocb
// naming the bounce buffer; nullptr where none could be made.
Bounced *bounce(long ctx, struct iocb *cb) {
    const bool read = cb->aio_lio_opcode == IOCB_CMD_PREAD || cb->aio_lio_opcode == IOCB_CMD_PREADV;
    struct iovec *pieces = nullptr;
    size_t n = cb->aio_nbytes;
    if (is_vector(cb)) {
        {
            Scope inside;
            pieces = new (std::nothrow) struct iovec[cb->aio_nbytes];
        }
        if (!pieces || !copy_pieces(cb, pieces) || !pieces_bounce(pieces, cb->aio_nbytes, &n)) {
            Scope inside;
            delete[] pieces;
            return nullptr;
        }
    }
    size_t mapped = 0;
    const void *from = read || pieces ? nullptr : reinterpret_cast<const void *>(cb->aio_buf);
    void *buf = adsm::interpose::make_bounce(n, from, &mapped);
    if (buf && pieces && !read && !move_pieces(pieces, cb->aio_nbytes, static_cast<uint8_t *>(buf), n, false)) {
        adsm::os::unmap(buf, mapped);
        buf = nullptr;
    }
    Bounced *b = nullptr;
    {
        Scope inside;
        if (buf) b = new (std::nothrow) Bounced{ctx, cb, cb->aio_buf, buf, mapped, read, false, pieces, cb->aio_nbytes,
                                                {buf, n}, nullptr};
        if (!b) delete[] pieces;
    }
    if (!b) {
        if (buf) adsm::os::unmap(buf, mapped);
        return nullptr;
    }
    g_records.link(b);
    if (pieces) {
        cb->aio_buf = reinterpret_cast<uint64_t>(&b->whole);
        cb->aio_nbytes = 1;
    } else {
        cb->aio_buf = reinterpret_cast<uint64_t>(buf);
    }
    return b;
}

// A read's bytes into the program's buffer or pieces.
bool deliver(const Bounced *b, size_t n) {
    if (b->pieces) return move_pieces(b->pieces, b->count, static_cast<uint8_t *>(b->bounce), n, true);
    return adsm::preload::write_shared(reinterpret_cast<void *>(b->program), b->bounce, n) == adsmSuccess;
}

// The record of ctx's request cb, waiting while its submitter has not yet
// said whether the kernel took it; nullptr where there is none.
Bounced *take(long ctx, uint64_t cb) {
    for (;;) {
        bool wait = false;
        {
            std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
            for (Bounced *at = g_records.head; at; at = at->next) {
                if (at->ctx != ctx || reinterpret_cast<uint64_t>(at->cb) != cb) continue;
                if (!at->queued) {
                    wait = true;
                    break;
                }
                return at;
            }
        }
        if (!wait) return nullptr;
        sched_yield();  // its io_submit is returning
    }
}

}  // namespace

namespace adsm::interpose {

long linux_aio_submit(long ctx, long nr, struct iocb **iocbs) {
    auto real = REAL(syscall);
    if (nr <= 0 || !iocbs || adsm::preload::inside()) return real(SYS_io_submit, ctx, nr, iocbs);
    long bounced = 0, first_bounced = -1;
    for (long i = 0; i < nr && first_bounced < 0; ++i)
        if (iocbs[i] && needs_bounce(iocbs[i])) first_bounced = i;
    if (first_bounced < 0) return real(SYS_io_submit, ctx, nr, iocbs);
    // Records first (a completion may be harvested before io_submit
    // returns); a request that gets none ends the batch before it, as the
    // kernel ends one at a request it cannot take.
    Bounced *mine[64];
    long upto = nr;
    for (long i = first_bounced; i < nr; ++i) {
        if (!iocbs[i] || !needs_bounce(iocbs[i])) continue;
        Bounced *b = bounced < 64 ? bounce(ctx, iocbs[i]) : nullptr;
        if (!b) {
            upto = i;
            break;
        }
        mine[bounced++] = b;
    }
    long r = upto > 0 ? real(SYS_io_submit, ctx, upto, iocbs) : (errno = EAGAIN, -1);
    int e = errno;
    // The kernel took the first r: they are queued; the rest are not.
    long taken = r > 0 ? r : 0;
    for (long k = 0; k < bounced; ++k) {
        Bounced *b = mine[k];
        auto *cb = const_cast<struct iocb *>(b->cb);
        cb->aio_buf = b->program;
        if (b->pieces) cb->aio_nbytes = b->count;
        long index = 0;
        while (iocbs[index] != b->cb) ++index;
        if (index < taken) {
            std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
            b->queued = true;
        } else {
            g_records.forget(b);
        }
    }
    errno = e;
    return r;
}

void linux_aio_harvested(long ctx, struct io_event *events, long count) {
    if (!g_records.any() || !events) return;
    int e = errno;
    for (long i = 0; i < count; ++i) {
        Bounced *b = take(ctx, events[i].obj);
        if (!b) continue;
        if (b->read && events[i].res > 0 && !deliver(b, static_cast<size_t>(events[i].res))) events[i].res = -EIO;
        g_records.forget(b);
    }
    errno = e;
}

void linux_aio_destroyed(long ctx) {
    if (!g_records.any()) return;
    for (;;) {
        Bounced *b = nullptr;
        {
            std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
            for (Bounced *at = g_records.head; at && !b; at = at->next)
                if (at->ctx == ctx) b = at;
        }
        if (!b) return;
        g_records.forget(b);
    }
}

}  // namespace adsm::interpose
