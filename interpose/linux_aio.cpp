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
// ends in -EIO.  Vector requests (IOCB_CMD_PREADV, PWRITEV) go as they are.
#include "interpose/linux_aio.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>

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
    Bounced *next;
};
adsm::interpose::BounceRecords<Bounced> g_records;

bool needs_bounce(const struct iocb *cb) {
    return (cb->aio_lio_opcode == IOCB_CMD_PREAD || cb->aio_lio_opcode == IOCB_CMD_PWRITE) &&
           adsm::interpose::bounces(reinterpret_cast<const void *>(cb->aio_buf), cb->aio_nbytes);
}

// A record for cb on a bounce buffer, linked (not yet queued), its iocb
// naming the bounce buffer; nullptr where none could be made.
Bounced *bounce(long ctx, struct iocb *cb) {
    const bool read = cb->aio_lio_opcode == IOCB_CMD_PREAD;
    size_t mapped = 0;
    const void *from = read ? nullptr : reinterpret_cast<const void *>(cb->aio_buf);
    void *buf = adsm::interpose::make_bounce(cb->aio_nbytes, from, &mapped);
    if (!buf) return nullptr;
    Bounced *b;
    {
        Scope inside;
        b = new (std::nothrow) Bounced{ctx, cb, cb->aio_buf, buf, mapped, read, false, nullptr};
    }
    if (!b) {
        adsm::os::unmap(buf, mapped);
        return nullptr;
    }
    g_records.link(b);
    cb->aio_buf = reinterpret_cast<uint64_t>(buf);
    return b;
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
        const_cast<struct iocb *>(b->cb)->aio_buf = b->program;
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
        if (b->read && events[i].res > 0 &&
            adsm::preload::write_shared(reinterpret_cast<void *>(b->program), b->bounce,
                                        static_cast<size_t>(events[i].res)) != adsmSuccess)
            events[i].res = -EIO;
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
