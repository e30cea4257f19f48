// POSIX asynchronous I/O (aio_read, aio_write, lio_listio) on shared
// memory.  The C library's helper threads make the read or write system
// call themselves, inside it where no interposer sees them, and the kernel
// cannot take the runtime's fault: into or out of a closed block the
// request failed with EFAULT.  A request whose buffer is one shared
// allocation therefore runs on a private bounce buffer of its own (filled
// from the program's at submission, for a write), and a read's bytes reach
// the program's buffer before the program can learn that the request is
// over: when it asks (aio_error, aio_return), waits (aio_suspend, a
// lio_listio that waits) or cancels, and before the notification it asked
// for (a thread, or a signal sent as the C library sends it) runs.  The
// aiocb then names the program's buffer and notification again.
//
// A buffer that is not one shared allocation (one that runs off its end,
// into memory of another kind) goes to the C library as it is, and the
// kernel says what it says about it.  A program that looks at the aiocb's
// own fields while a request runs sees the bounce buffer there.
#include <aio.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <new>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/bounce_buffers.h"
#include "os/futex_lock.h"
#include "os/raw_syscall.h"
#include "os/vm.h"

DECLARE_REAL(aio_error)
DECLARE_REAL(aio_return)

namespace {

using adsm::preload::Scope;

// A request on a bounce buffer, from its submission until it is settled.
// An aiocb is often reused (one on the stack, in a loop), so a request is
// known by its serial: a notification that comes late must not settle the
// aiocb's next request.
struct Bounced {
    struct aiocb *cb;
    uint64_t serial;
    volatile void *program;  // the program's buffer
    struct sigevent event;   // the program's notification
    void *bounce;
    size_t mapped;
    bool read;
    // Until the C library has queued it, the aiocb's status is its last
    // request's: it cannot say whether this one is over.
    bool queued;
    bool settling;  // a thread has claimed it: it checks whether it is over, or settles it
    int status;     // lio_listio: the aiocb's status before the C library queued it
    Bounced *next;
};
adsm::interpose::BounceRecords<Bounced> g_records;
uint64_t g_serial = 0;  // (under g_records.lock)

// The record of cb's latest request on a bounce buffer, if it has one.
Bounced *find(const struct aiocb *cb) {
    std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
    for (Bounced *at = g_records.head; at; at = at->next)
        if (at->cb == cb) return at;
    return nullptr;
}

// Once the request is over: its bytes into the program's buffer (a read),
// and the aiocb as the program made it.  A read whose bytes could not all
// reach shared memory is an EIO, as a read's is.
void finish(Bounced *b) {
    struct aiocb *cb = b->cb;
    int err = REAL(aio_error)(cb);
    ssize_t got = REAL(aio_return)(cb);
    bool lost = false;
    if (b->read && err == 0 && got > 0)
        lost = adsm::preload::write_shared(const_cast<void *>(b->program), b->bounce, static_cast<size_t>(got)) !=
               adsmSuccess;
    cb->aio_buf = b->program;
    cb->aio_sigevent = b->event;
    if (lost) {
        cb->__return_value = -1;
        cb->__error_code = EIO;
    }
    g_records.forget(b);
}

// Settles the request `cb` (its latest) or `serial` names, if it is over;
// waits while another thread settles it.  A notification (by serial) also
// waits for its request to be queued: it may come before its submitter
// has marked it so.  The request is claimed before its aiocb is read:
// while it is, no other thread settles it and its program cannot learn
// that it is over (every way to learn it settles first), so the aiocb is
// still the program's, not a stack since left or a next request's.
void settle(const struct aiocb *cb, uint64_t serial = 0) {
    if (!g_records.any()) return;
    for (;;) {
        Bounced *mine = nullptr;
        {
            std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
            Bounced *b = g_records.head;
            while (b && !(serial ? b->serial == serial : b->cb == cb)) b = b->next;
            if (!b || (!b->queued && !serial)) return;
            if (!b->settling && b->queued) {
                b->settling = true;
                mine = b;
            }
        }
        if (!mine) {
            sched_yield();  // moments: another thread's check or copy, or the submitter's next step
            continue;
        }
        if (REAL(aio_error)(mine->cb) != EINPROGRESS) return finish(mine);
        std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
        mine->settling = false;
        return;
    }
}

void mark_queued(Bounced *b) {
    std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
    b->queued = true;
}

// ------------------------------------------------------------ notification

// What a notification the runtime asked for in the program's place must
// deliver, once the requests it follows are settled.  Owned by the
// notification (the C library sends each at most once).
struct Notice {
    struct sigevent event;
    int count;
    uint64_t serials[1];  // [count]: a request's own, or a list's (0: a request not bounced)
};

// As the C library delivers it: a thread with the program's attributes runs
// its function (the runtime's thread, made with them), or a signal queued
// to the process with SI_ASYNCIO.
void deliver(const struct sigevent &e) {
    if (e.sigev_notify == SIGEV_THREAD) {
        e.sigev_notify_function(e.sigev_value);
    } else if (e.sigev_notify == SIGEV_SIGNAL) {
        siginfo_t info = {};
        info.si_signo = e.sigev_signo;
        info.si_code = SI_ASYNCIO;
        info.si_pid = getpid();
        info.si_uid = getuid();
        info.si_value = e.sigev_value;
        adsm::os::raw_syscall(SYS_rt_sigqueueinfo, getpid(), e.sigev_signo, &info);
    }
}

void notified(union sigval v) {
    auto *n = static_cast<Notice *>(v.sival_ptr);
    for (int i = 0; i < n->count; ++i)
        if (n->serials[i]) settle(nullptr, n->serials[i]);
    struct sigevent e = n->event;
    {
        Scope inside;
        ::operator delete(n);
    }
    deliver(e);
}

Notice *make_notice(const struct sigevent &e, int count) {
    Scope inside;
    size_t bytes = sizeof(Notice) + (count > 1 ? static_cast<size_t>(count - 1) * sizeof(uint64_t) : 0);
    auto *n = static_cast<Notice *>(::operator new(bytes, std::nothrow));
    if (!n) return nullptr;
    n->event = e;
    n->count = count;
    return n;
}

// Puts the runtime's notification in the place of `e`: a thread (with the
// program's attributes, where it asked for a thread) that settles n's
// requests first.
void wrap(struct sigevent *e, Notice *n) {
    struct sigevent mine = {};
    mine.sigev_notify = SIGEV_THREAD;
    mine.sigev_value.sival_ptr = n;
    mine.sigev_notify_function = &notified;
    mine.sigev_notify_attributes = e->sigev_notify == SIGEV_THREAD ? e->sigev_notify_attributes : nullptr;
    *e = mine;
}

bool notifies(const struct sigevent &e) { return e.sigev_notify == SIGEV_THREAD || e.sigev_notify == SIGEV_SIGNAL; }

// ------------------------------------------------------------ submission

// Puts cb's request on a bounce buffer, and its notification in the
// runtime's hands, before it goes to the C library (which the caller then
// marks with mark_queued, or undoes with unbounce).  nullptr: it goes as it
// is; *failed: it must not go at all (errno set).
Bounced *bounce(struct aiocb *cb, bool read, bool *failed) {
    *failed = false;
    if (!adsm::interpose::bounces(const_cast<const void *>(cb->aio_buf), cb->aio_nbytes)) return nullptr;
    settle(cb);  // an earlier request on this aiocb that nobody asked about
    size_t mapped = 0;
    void *buf = adsm::interpose::make_bounce(cb->aio_nbytes, read ? nullptr : const_cast<const void *>(cb->aio_buf),
                                             &mapped);
    if (!buf) {
        *failed = true;
        return nullptr;
    }
    const bool notify = notifies(cb->aio_sigevent);
    Notice *n = notify ? make_notice(cb->aio_sigevent, 1) : nullptr;
    Bounced *b = nullptr;
    if (n || !notify) {
        Scope inside;
        b = new (std::nothrow)
            Bounced{cb, 0, cb->aio_buf, cb->aio_sigevent, buf, mapped, read, false, false, 0, nullptr};
    }
    if (!b) {
        Scope inside;
        ::operator delete(n);
        adsm::os::unmap(buf, mapped);
        *failed = true;
        errno = EAGAIN;
        return nullptr;
    }
    {
        std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
        b->serial = ++g_serial;
    }
    g_records.link(b);
    cb->aio_buf = buf;
    if (n) {
        n->serials[0] = b->serial;
        wrap(&cb->aio_sigevent, n);
    }
    return b;
}

// A request the C library refused: the aiocb as the program made it.
void unbounce(Bounced *b) {
    if (!b) return;
    if (b->cb->aio_sigevent.sigev_notify_function == &notified) {
        Scope inside;
        ::operator delete(b->cb->aio_sigevent.sigev_value.sival_ptr);
    }
    b->cb->aio_buf = b->program;
    b->cb->aio_sigevent = b->event;
    g_records.forget(b);
}

template <class Real>
int submit(struct aiocb *cb, bool read, Real real) {
    bool failed = false;
    Bounced *b = bounce(cb, read, &failed);
    if (failed) return -1;
    int r = real(cb);
    if (!b) return r;
    int e = errno;
    if (r == 0) mark_queued(b);
    else unbounce(b);
    errno = e;
    return r;
}

// What an aiocb's status holds until the C library queues its request:
// no error it would set.
constexpr int kNotQueued = -4097;

template <class Real>
int submit_list(int mode, struct aiocb *const list[], int nent, struct sigevent *sig, Real real) {
    if (nent <= 0 || !list) return real(mode, list, nent, sig);
    int bounced = 0;
    for (int i = 0; i < nent; ++i) {
        struct aiocb *cb = list[i];
        if (!cb || (cb->aio_lio_opcode != LIO_READ && cb->aio_lio_opcode != LIO_WRITE)) continue;
        bool failed = false;
        if (bounce(cb, cb->aio_lio_opcode == LIO_READ, &failed)) ++bounced;
        if (failed) {
            int e = errno;
            for (int k = 0; k < i; ++k)
                if (list[k]) unbounce(find(list[k]));
            errno = e;
            return -1;
        }
    }
    if (!bounced) return real(mode, list, nent, sig);
    // The list's own notification follows its requests: it settles them all.
    struct sigevent mine;
    if (mode == LIO_NOWAIT && sig && notifies(*sig)) {
        if (Notice *n = make_notice(*sig, nent)) {
            for (int i = 0; i < nent; ++i) {
                Bounced *b = list[i] ? find(list[i]) : nullptr;
                n->serials[i] = b ? b->serial : 0;
            }
            mine = *sig;
            wrap(&mine, n);
            sig = &mine;
        }
    }
    // (The C library sets a request's status when it queues it: one it did
    // not queue goes back to the program as it came.)
    for (int i = 0; i < nent; ++i)
        if (Bounced *b = list[i] ? find(list[i]) : nullptr) {
            b->status = list[i]->__error_code;
            list[i]->__error_code = kNotQueued;
        }
    int r = real(mode, list, nent, sig);
    int e = errno;
    for (int i = 0; i < nent; ++i) {
        Bounced *b = list[i] ? find(list[i]) : nullptr;
        if (!b || b->queued) continue;
        if (list[i]->__error_code != kNotQueued) {
            mark_queued(b);
            continue;
        }
        list[i]->__error_code = b->status;
        unbounce(b);
    }
    if (mode == LIO_WAIT)
        for (int i = 0; i < nent; ++i)
            if (list[i]) settle(list[i]);
    errno = e;
    return r;
}

}  // namespace

INTERCEPTOR(int, aio_read, struct aiocb *cb) { return submit(cb, true, REAL(aio_read)); }
INTERCEPTOR(int, aio_write, struct aiocb *cb) { return submit(cb, false, REAL(aio_write)); }
INTERCEPTOR(int, aio_read64, struct aiocb64 *cb) {
    return submit(reinterpret_cast<struct aiocb *>(cb), true,
                  [](struct aiocb *c) { return REAL(aio_read64)(reinterpret_cast<struct aiocb64 *>(c)); });
}
INTERCEPTOR(int, aio_write64, struct aiocb64 *cb) {
    return submit(reinterpret_cast<struct aiocb *>(cb), false,
                  [](struct aiocb *c) { return REAL(aio_write64)(reinterpret_cast<struct aiocb64 *>(c)); });
}

INTERCEPTOR(int, lio_listio, int mode, struct aiocb *const list[], int nent, struct sigevent *sig) {
    return submit_list(mode, list, nent, sig, REAL(lio_listio));
}
INTERCEPTOR(int, lio_listio64, int mode, struct aiocb64 *const list[], int nent, struct sigevent *sig) {
    return submit_list(mode, reinterpret_cast<struct aiocb *const *>(list), nent, sig,
                       [](int m, struct aiocb *const l[], int n, struct sigevent *s) {
                           return REAL(lio_listio64)(m, reinterpret_cast<struct aiocb64 *const *>(l), n, s);
                       });
}

INTERCEPTOR(int, aio_error, const struct aiocb *cb) {
    settle(cb);
    return REAL(aio_error)(cb);
}
INTERCEPTOR(int, aio_error64, const struct aiocb64 *cb) {
    settle(reinterpret_cast<const struct aiocb *>(cb));
    return REAL(aio_error64)(cb);
}
INTERCEPTOR(ssize_t, aio_return, struct aiocb *cb) {
    settle(cb);
    return REAL(aio_return)(cb);
}
INTERCEPTOR(ssize_t, aio_return64, struct aiocb64 *cb) {
    settle(reinterpret_cast<struct aiocb *>(cb));
    return REAL(aio_return64)(cb);
}

// The requests that are over when the wait returns are settled, so a
// program that knows which ended may read their buffers at once.
INTERCEPTOR(int, aio_suspend, const struct aiocb *const list[], int nent, const struct timespec *timeout) {
    int r = REAL(aio_suspend)(list, nent, timeout);
    if (g_records.any()) {
        int e = errno;
        for (int i = 0; i < nent; ++i)
            if (list[i]) settle(list[i]);
        errno = e;
    }
    return r;
}
INTERCEPTOR(int, aio_suspend64, const struct aiocb64 *const list[], int nent, const struct timespec *timeout) {
    return aio_suspend(reinterpret_cast<const struct aiocb *const *>(list), nent, timeout);
}

// A request cancelled is over: its aiocb is the program's again.
INTERCEPTOR(int, aio_cancel, int fd, struct aiocb *cb) {
    int r = REAL(aio_cancel)(fd, cb);
    if (!g_records.any()) return r;
    int e = errno;
    if (cb) {
        settle(cb);
    } else {
        // Every request on fd: those the runtime bounced that are over now.
        size_t n = 0;
        struct aiocb **on_fd = nullptr;
        {
            Scope inside;
            std::lock_guard<adsm::os::FutexLock> hold(g_records.lock);
            for (Bounced *at = g_records.head; at; at = at->next) n += at->cb->aio_fildes == fd;
            on_fd = new (std::nothrow) struct aiocb *[n];
            n = 0;
            for (Bounced *at = g_records.head; at && on_fd; at = at->next)
                if (at->cb->aio_fildes == fd) on_fd[n++] = at->cb;
        }
        for (size_t i = 0; i < n && on_fd; ++i) settle(on_fd[i]);
        Scope inside;
        delete[] on_fd;
    }
    errno = e;
    return r;
}
INTERCEPTOR(int, aio_cancel64, int fd, struct aiocb64 *cb) {
    return aio_cancel(fd, reinterpret_cast<struct aiocb *>(cb));
}
