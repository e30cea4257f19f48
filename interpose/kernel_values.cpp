// Buffers of a size the program gives that the kernel fills or reads, in
// calls outside the I/O families (staged_buffer.h): extended attributes'
// names, values and lists; directory entries (getdents64); the messages of
// System V and POSIX queues, with the queues' control structures and
// semaphore operations; the local side of another process's memory
// (process_vm_readv, process_vm_writev); the kernel's log (klogctl); and
// which pages are resident (mincore).  Without these, each failed with
// EFAULT on shared memory whose block was closed (its data on the device).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/limits.h>
#include <mqueue.h>
#include <stdarg.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstddef>

#include "interpose/interceptor.h"
#include "interpose/kernel_paths.h"
#include "interpose/kernel_structs.h"
#include "interpose/staged_buffer.h"
#include "interpose/staged_calls.h"
#include "interpose/staging.h"

using adsm::interpose::failure;
using adsm::interpose::filled;
using adsm::interpose::filled_buffer;
using adsm::interpose::Local;
using adsm::interpose::one;
using adsm::interpose::read_buffer;
using adsm::interpose::stages;
using adsm::interpose::with_path;

namespace {

// What a count of bytes wrote.
size_t bytes(ssize_t r) { return static_cast<size_t>(r); }

// A buffer the call fills with a count of bytes.  `lost`: the errno when
// they cannot reach shared memory (EIO where the call took what it cannot
// give again: a message off its queue, a directory's entries).
template <class Call>
ssize_t bytes_out(void *buf, size_t n, int lost, Call &&call) {
    return filled_buffer<ssize_t>(buf, n, lost, call, bytes);
}

// An attribute's name, a string the kernel reads: ERANGE past
// XATTR_NAME_MAX, as its own answer.
template <class Call>
auto with_name(const char *name, Call &&call) -> decltype(call(name)) {
    if (!name || !stages(name, 1)) return call(name);
    char copy[XATTR_NAME_MAX + 1];
    const int entry = errno;
    if (!adsm::interpose::read_string(name, copy, sizeof copy, ERANGE)) return failure<decltype(call(name))>();
    errno = entry;
    return call(static_cast<const char *>(copy));
}

}  // namespace

// ---------------------------------------------------------------- extended attributes

// A value or a list of names that cannot be stored fails as the kernel's
// own copy would: reading it again gives the same.
INTERCEPTOR(ssize_t, getxattr, const char *path, const char *name, void *value, size_t n) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) {
            return bytes_out(value, n, EFAULT, [&](void *v) { return REAL(getxattr)(p, nm, v, n); });
        });
    });
}
INTERCEPTOR(ssize_t, lgetxattr, const char *path, const char *name, void *value, size_t n) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) {
            return bytes_out(value, n, EFAULT, [&](void *v) { return REAL(lgetxattr)(p, nm, v, n); });
        });
    });
}
INTERCEPTOR(ssize_t, fgetxattr, int fd, const char *name, void *value, size_t n) {
    return with_name(name, [&](const char *nm) {
        return bytes_out(value, n, EFAULT, [&](void *v) { return REAL(fgetxattr)(fd, nm, v, n); });
    });
}
INTERCEPTOR(int, setxattr, const char *path, const char *name, const void *value, size_t n, int flags) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) {
            return read_buffer<int>(value, n, [&](const void *v) { return REAL(setxattr)(p, nm, v, n, flags); });
        });
    });
}
INTERCEPTOR(int, lsetxattr, const char *path, const char *name, const void *value, size_t n, int flags) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) {
            return read_buffer<int>(value, n, [&](const void *v) { return REAL(lsetxattr)(p, nm, v, n, flags); });
        });
    });
}
INTERCEPTOR(int, fsetxattr, int fd, const char *name, const void *value, size_t n, int flags) {
    return with_name(name, [&](const char *nm) {
        return read_buffer<int>(value, n, [&](const void *v) { return REAL(fsetxattr)(fd, nm, v, n, flags); });
    });
}
INTERCEPTOR(ssize_t, listxattr, const char *path, char *list, size_t n) {
    return with_path(path, [&](const char *p) {
        return bytes_out(list, n, EFAULT, [&](void *l) { return REAL(listxattr)(p, static_cast<char *>(l), n); });
    });
}
INTERCEPTOR(ssize_t, llistxattr, const char *path, char *list, size_t n) {
    return with_path(path, [&](const char *p) {
        return bytes_out(list, n, EFAULT, [&](void *l) { return REAL(llistxattr)(p, static_cast<char *>(l), n); });
    });
}
INTERCEPTOR(ssize_t, flistxattr, int fd, char *list, size_t n) {
    return bytes_out(list, n, EFAULT, [&](void *l) { return REAL(flistxattr)(fd, static_cast<char *>(l), n); });
}
INTERCEPTOR(int, removexattr, const char *path, const char *name) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) { return REAL(removexattr)(p, nm); });
    });
}
INTERCEPTOR(int, lremovexattr, const char *path, const char *name) {
    return with_path(path, [&](const char *p) {
        return with_name(name, [&](const char *nm) { return REAL(lremovexattr)(p, nm); });
    });
}
INTERCEPTOR(int, fremovexattr, int fd, const char *name) {
    return with_name(name, [&](const char *nm) { return REAL(fremovexattr)(fd, nm); });
}

// ---------------------------------------------------------------- directory entries

// A buffer larger than a staging round gets one round's worth: fewer
// entries than would fit is getdents's own answer, and the next call goes
// on from there.
INTERCEPTOR(ssize_t, getdents64, int fd, void *buf, size_t n) {
    const size_t m = n > adsm::interpose::kStageBytes && stages(buf, n) ? adsm::interpose::kStageBytes : n;
    return bytes_out(buf, m, EIO, [&](void *b) { return REAL(getdents64)(fd, b, m); });
}

// ---------------------------------------------------------------- System V queues, semaphores and segments

// A message is its type (a long) and then its text.
INTERCEPTOR(ssize_t, msgrcv, int id, void *msg, size_t n, long type, int flags) {
    if (n > SSIZE_MAX - sizeof(long)) return REAL(msgrcv)(id, msg, n, type, flags);
    return filled_buffer<ssize_t>(
        msg, sizeof(long) + n, EIO, [&](void *m) { return REAL(msgrcv)(id, m, n, type, flags); },
        [](ssize_t r) { return sizeof(long) + static_cast<size_t>(r); });
}
INTERCEPTOR(int, msgsnd, int id, const void *msg, size_t n, int flags) {
    if (n > SSIZE_MAX - sizeof(long)) return REAL(msgsnd)(id, msg, n, flags);
    return read_buffer<int>(msg, sizeof(long) + n, [&](const void *m) { return REAL(msgsnd)(id, m, n, flags); });
}

namespace {
// What each control command does with its structure: its size, and
// whether the kernel reads it (IPC_SET) or writes it.  0: no structure.
struct Control {
    size_t n;
    bool out;
};
Control msg_control(int cmd) {
    switch (cmd) {
    case IPC_RMID: return {0, false};
    case IPC_SET: return {sizeof(struct msqid_ds), false};
    case IPC_INFO:
    case MSG_INFO: return {sizeof(struct msginfo), true};
    default: return {sizeof(struct msqid_ds), true};  // IPC_STAT, MSG_STAT, MSG_STAT_ANY
    }
}
Control shm_control(int cmd) {
    switch (cmd) {
    case IPC_RMID:
    case SHM_LOCK:
    case SHM_UNLOCK: return {0, false};
    case IPC_SET: return {sizeof(struct shmid_ds), false};
    case IPC_INFO: return {sizeof(struct shminfo), true};
    case SHM_INFO: return {sizeof(struct shm_info), true};
    default: return {sizeof(struct shmid_ds), true};  // IPC_STAT, SHM_STAT, SHM_STAT_ANY
    }
}
}  // namespace

INTERCEPTOR(int, msgctl, int id, int cmd, struct msqid_ds *buf) {
    const Control c = msg_control(cmd);
    if (c.n == 0) return REAL(msgctl)(id, cmd, buf);
    Local b(buf, c.n, c.out);
    return filled<int>([&] { return REAL(msgctl)(id, cmd, b.get<struct msqid_ds>()); }, b);
}
INTERCEPTOR(int, shmctl, int id, int cmd, struct shmid_ds *buf) {
    const Control c = shm_control(cmd);
    if (c.n == 0) return REAL(shmctl)(id, cmd, buf);
    Local b(buf, c.n, c.out);
    return filled<int>([&] { return REAL(shmctl)(id, cmd, b.get<struct shmid_ds>()); }, b);
}

INTERCEPTOR(int, semop, int id, struct sembuf *ops, size_t n) {
    if (n > SIZE_MAX / sizeof *ops) return REAL(semop)(id, ops, n);
    return read_buffer<int>(ops, n * sizeof *ops, [&](const void *o) {
        return REAL(semop)(id, static_cast<struct sembuf *>(const_cast<void *>(o)), n);
    });
}
INTERCEPTOR(int, semtimedop, int id, struct sembuf *ops, size_t n, const struct timespec *timeout) {
    if (n > SIZE_MAX / sizeof *ops) return REAL(semtimedop)(id, ops, n, timeout);
    Local t(timeout, sizeof *timeout, false);
    return filled<int>(
        [&] {
            return read_buffer<int>(ops, n * sizeof *ops, [&](const void *o) {
                return REAL(semtimedop)(id, static_cast<struct sembuf *>(const_cast<void *>(o)), n,
                                        t.get<const struct timespec>());
            });
        },
        t);
}

namespace {
// semctl's fourth argument, as the C library takes it.
union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
    struct seminfo *info;
};
}  // namespace

// The argument is a union whose member the command names; GETALL's and
// SETALL's array holds one value per semaphore of the set, which IPC_STAT
// tells.
INTERCEPTOR(int, semctl, int id, int num, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    union semun arg = {};
    switch (cmd) {
    case IPC_STAT: case SEM_STAT: case SEM_STAT_ANY: case IPC_SET: case IPC_INFO: case SEM_INFO: case GETALL:
    case SETALL: case SETVAL: arg = va_arg(ap, union semun); break;
    default: break;
    }
    va_end(ap);
    auto real = [&](union semun a) { return REAL(semctl)(id, num, cmd, a); };
    switch (cmd) {
    case IPC_STAT: case SEM_STAT: case SEM_STAT_ANY: case IPC_SET: {
        Local b(arg.buf, sizeof *arg.buf, cmd != IPC_SET);
        return filled<int>([&] { return real(semun{.buf = b.get<struct semid_ds>()}); }, b);
    }
    case IPC_INFO: case SEM_INFO: {
        Local b(arg.info, sizeof *arg.info);
        return filled<int>([&] { return real(semun{.info = b.get<struct seminfo>()}); }, b);
    }
    case GETALL: case SETALL: {
        struct semid_ds ds;
        if (!stages(arg.array, 1) || REAL(semctl)(id, 0, IPC_STAT, semun{.buf = &ds}) < 0) return real(arg);
        const size_t n = ds.sem_nsems * sizeof *arg.array;
        if (cmd == SETALL)
            return read_buffer<int>(arg.array, n, [&](const void *a) {
                return real(semun{.array = static_cast<unsigned short *>(const_cast<void *>(a))});
            });
        return filled_buffer<int>(
            arg.array, n, EFAULT, [&](void *a) { return real(semun{.array = static_cast<unsigned short *>(a)}); },
            [&](int) { return n; });
    }
    default: return real(arg);
    }
}

// ---------------------------------------------------------------- POSIX queues

// A queue's name is a path the kernel reads (after its leading slash).
INTERCEPTOR(mqd_t, mq_open, const char *name, int flags, ...) {
    mode_t mode = 0;
    struct mq_attr *attr = nullptr;
    if (flags & O_CREAT) {
        va_list ap;
        va_start(ap, flags);
        mode = static_cast<mode_t>(va_arg(ap, unsigned));
        attr = va_arg(ap, struct mq_attr *);
        va_end(ap);
    }
    return with_path(name, [&](const char *nm) -> mqd_t {
        Local a(attr, sizeof *attr, false);
        return filled<mqd_t>([&] { return REAL(mq_open)(nm, flags, mode, a.get<struct mq_attr>()); }, a);
    });
}
extern "C" mqd_t __mq_open_2(const char *name, int flags);
INTERCEPTOR(mqd_t, __mq_open_2, const char *name, int flags) {
    return with_path(name, [&](const char *nm) { return REAL(__mq_open_2)(nm, flags); });
}
INTERCEPTOR(int, mq_unlink, const char *name) {
    return with_path(name, [&](const char *nm) { return REAL(mq_unlink)(nm); });
}
INTERCEPTOR(ssize_t, mq_receive, mqd_t q, char *msg, size_t n, unsigned *prio) {
    Local p(prio, sizeof *prio);
    return filled<ssize_t>(
        [&] {
            return bytes_out(msg, n, EIO, [&](void *m) {
                return REAL(mq_receive)(q, static_cast<char *>(m), n, p.get<unsigned>());
            });
        },
        p);
}
INTERCEPTOR(ssize_t, mq_timedreceive, mqd_t q, char *msg, size_t n, unsigned *prio, const struct timespec *at) {
    Local p(prio, sizeof *prio), t(at, sizeof *at, false);
    return filled<ssize_t>(
        [&] {
            return bytes_out(msg, n, EIO, [&](void *m) {
                return REAL(mq_timedreceive)(q, static_cast<char *>(m), n, p.get<unsigned>(),
                                             t.get<const struct timespec>());
            });
        },
        p, t);
}
INTERCEPTOR(int, mq_send, mqd_t q, const char *msg, size_t n, unsigned prio) {
    return read_buffer<int>(msg, n,
                            [&](const void *m) { return REAL(mq_send)(q, static_cast<const char *>(m), n, prio); });
}
INTERCEPTOR(int, mq_timedsend, mqd_t q, const char *msg, size_t n, unsigned prio, const struct timespec *at) {
    Local t(at, sizeof *at, false);
    return filled<int>(
        [&] {
            return read_buffer<int>(msg, n, [&](const void *m) {
                return REAL(mq_timedsend)(q, static_cast<const char *>(m), n, prio, t.get<const struct timespec>());
            });
        },
        t);
}
INTERCEPTOR(int, mq_getattr, mqd_t q, struct mq_attr *attr) {
    return one(attr, [&](struct mq_attr *c) { return REAL(mq_getattr)(q, c); });
}
INTERCEPTOR(int, mq_setattr, mqd_t q, const struct mq_attr *attr, struct mq_attr *old) {
    Local a(attr, sizeof *attr, false), o(old, sizeof *old);
    return filled<int>(
        [&] { return REAL(mq_setattr)(q, a.get<const struct mq_attr>(), o.get<struct mq_attr>()); }, a, o);
}
INTERCEPTOR(int, mq_notify, mqd_t q, const struct sigevent *event) {
    Local e(event, sizeof *event, false);
    return filled<int>([&] { return REAL(mq_notify)(q, e.get<const struct sigevent>()); }, e);
}

// ---------------------------------------------------------------- another process's memory

namespace {
// The other process's ranges from byte `skip` on, for one round: the
// kernel takes IOV_MAX of them at most.
struct Remote {
    struct iovec v[IOV_MAX];
    unsigned long n = 0;
    Remote(const struct iovec *r, unsigned long cnt, size_t skip) {
        for (unsigned long i = 0; i < cnt; ++i) {
            if (skip >= r[i].iov_len) {
                skip -= r[i].iov_len;
                continue;
            }
            v[n].iov_base = static_cast<char *>(r[i].iov_base) + skip;
            v[n++].iov_len = r[i].iov_len - skip;
            skip = 0;
        }
    }
};
}  // namespace

// The local side in shared memory goes through staging in rounds, the
// other side's ranges taken up where the last round ended, as one big call
// moves them; a short round ends it, as the kernel's short count would.
INTERCEPTOR(ssize_t, process_vm_readv, pid_t pid, const struct iovec *local, unsigned long lcnt,
            const struct iovec *remote, unsigned long rcnt, unsigned long flags) {
    if (lcnt > IOV_MAX || rcnt > IOV_MAX || !remote || !adsm::interpose::stages(local, static_cast<int>(lcnt)))
        return REAL(process_vm_readv)(pid, local, lcnt, remote, rcnt, flags);
    return adsm::interpose::staged_in(local, static_cast<int>(lcnt), true,
                                      [&](const struct iovec *iov, int cnt, size_t done) -> ssize_t {
                                          Remote r(remote, rcnt, done);
                                          return REAL(process_vm_readv)(pid, iov, cnt, r.v, r.n, flags);
                                      });
}
INTERCEPTOR(ssize_t, process_vm_writev, pid_t pid, const struct iovec *local, unsigned long lcnt,
            const struct iovec *remote, unsigned long rcnt, unsigned long flags) {
    if (lcnt > IOV_MAX || rcnt > IOV_MAX || !remote || !adsm::interpose::stages(local, static_cast<int>(lcnt)))
        return REAL(process_vm_writev)(pid, local, lcnt, remote, rcnt, flags);
    return adsm::interpose::staged_out(local, static_cast<int>(lcnt),
                                       [&](const struct iovec *iov, int cnt, size_t done) -> ssize_t {
                                           Remote r(remote, rcnt, done);
                                           return REAL(process_vm_writev)(pid, iov, cnt, r.v, r.n, flags);
                                       });
}

// ---------------------------------------------------------------- the kernel's log, resident pages

INTERCEPTOR(int, klogctl, int type, char *buf, int n) {
    // Reading (2) and reading-and-clearing (4) take what they read; reading
    // all (3) can be done again.
    if ((type != 2 && type != 3 && type != 4) || n <= 0) return REAL(klogctl)(type, buf, n);
    return filled_buffer<int>(
        buf, static_cast<size_t>(n), type == 3 ? EFAULT : EIO,
        [&](void *b) { return REAL(klogctl)(type, static_cast<char *>(b), n); },
        [](int r) { return static_cast<size_t>(r); });
}

INTERCEPTOR(int, mincore, void *addr, size_t n, unsigned char *vec) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (n > SIZE_MAX - page) return REAL(mincore)(addr, n, vec);
    const size_t pages = (n + page - 1) / page;
    return filled_buffer<int>(
        vec, pages, EFAULT, [&](void *v) { return REAL(mincore)(addr, n, static_cast<unsigned char *>(v)); },
        [&](int) { return pages; });
}
