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
// A signal's action, the mask and the alternate stack set by number go
// through the runtime's sigaction, mask and stack as the C library's
// names do (signals.cpp, alt_stacks.cpp): a SIGSEGV handler installed so
// replaced the runtime's in the kernel, and the next fault on shared
// memory went to the program's.  A fork or clone by number that makes a
// process of its own (a copy of the caller's memory, on the caller's stack)
// runs between the runtime's fork handlers, as _Fork does (forks.h):
// without them the child wrote into its parent's objects.  Closing and
// duplicating onto descriptors keeps off the runtime's own
// (descriptors.cpp).  Every other call goes straight on.  The runtime
// makes its own system calls without this function (os/raw_syscall.h).
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "interpose/descriptors.h"
#include "interpose/forks.h"
#include "interpose/interceptor.h"
#include "interpose/linux_aio.h"
#include "interpose/staged_calls.h"
#include "os/vm.h"

using adsm::interpose::stages;

DECLARE_REAL(syscall)

namespace {

// The vector calls' offset comes in two halves; on a 64-bit machine the
// first holds all of it.
off_t offset_of(long low, long) { return static_cast<off_t>(low); }

const struct iovec *vec(long a) { return reinterpret_cast<const struct iovec *>(a); }
void *buf(long a) { return reinterpret_cast<void *>(a); }
const char *str(long a) { return reinterpret_cast<const char *>(a); }

// The program's structures, copied as the kernel copies them: a bad
// pointer is EFAULT, not a fault here.
bool copy_in(void *to, const void *p, size_t n) { return adsm::os::copy_checked_from(to, p, n); }
bool copy_out(void *p, const void *from, size_t n) { return adsm::os::copy_checked_to(p, from, n); }
long efault() {
    errno = EFAULT;
    return -1;
}

#if defined(__x86_64__) || defined(__aarch64__)
#define ADSM_KERNEL_SIGACTION 1
// The kernel's own sigaction, which a call by number passes: the handler,
// the flags, the restorer (the C library supplies its own), and the mask
// as one word.
struct KernelSigaction {
    void *handler;
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
constexpr unsigned long kRestorer = 0x04000000;  // SA_RESTORER

long kernel_sigaction(int sig, const void *act, void *old) {
    struct sigaction a = {}, o = {};
    if (act) {
        KernelSigaction k;
        if (!copy_in(&k, act, sizeof k)) return efault();
        a.sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t *, void *)>(k.handler);
        a.sa_flags = static_cast<int>(k.flags & ~kRestorer);
        sigemptyset(&a.sa_mask);
        memcpy(&a.sa_mask, &k.mask, sizeof k.mask);
    }
    if (sigaction(sig, act ? &a : nullptr, old ? &o : nullptr) != 0) return -1;
    if (old) {
        KernelSigaction k = {};
        k.handler = reinterpret_cast<void *>(o.sa_sigaction);
        k.flags = static_cast<unsigned int>(o.sa_flags) | (o.sa_restorer ? kRestorer : 0);
        k.restorer = o.sa_restorer;
        memcpy(&k.mask, &o.sa_mask, sizeof k.mask);
        if (!copy_out(old, &k, sizeof k)) return efault();
    }
    return 0;
}
#endif

// A mask set by number loses SIGSEGV, as one set through the C library
// does (signal_masks.h).
long kernel_sigprocmask(long nr, long how, const void *set, long old, long size) {
    uint64_t copy;
    if (how == SIG_UNBLOCK || !set || size != sizeof copy || !copy_in(&copy, set, sizeof copy))
        return REAL(syscall)(nr, how, set, old, size);
    copy &= ~(uint64_t{1} << (SIGSEGV - 1));
    return REAL(syscall)(nr, how, &copy, old, size);
}

long kernel_sigaltstack(const void *ss, void *old) {
    stack_t s, o;
    if (ss && !copy_in(&s, ss, sizeof s)) return efault();
    if (sigaltstack(ss ? &s : nullptr, old ? &o : nullptr) != 0) return -1;
    if (old && !copy_out(old, &o, sizeof o)) return efault();
    return 0;
}

// A clone that shares no memory and keeps the caller's stack returns in
// the child as fork does; any other (a thread, a vfork, a child on a stack
// of its own) is the program's business.
constexpr unsigned long kCloneVm = 0x00000100;  // CLONE_VM
bool makes_a_copy(unsigned long flags, long stack) { return !(flags & kCloneVm) && stack == 0; }

// clone3's arguments start with the flags and, five words on, the stack.
bool clone3_makes_a_copy(const void *args, long size) {
    uint64_t head[6];
    if (!args || size < static_cast<long>(sizeof head) || !copy_in(head, args, sizeof head)) return false;
    return makes_a_copy(head[0], static_cast<long>(head[5]));
}

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
    case SYS_getdents64:
        if (stages(buf(b), static_cast<size_t>(c))) return getdents64(fd, buf(b), static_cast<size_t>(c));
        break;
    case SYS_msgrcv:
        if (stages(buf(b), static_cast<size_t>(c) + sizeof(long)))
            return msgrcv(fd, buf(b), static_cast<size_t>(c), d, static_cast<int>(e));
        break;
    case SYS_msgsnd:
        if (stages(buf(b), static_cast<size_t>(c) + sizeof(long)))
            return msgsnd(fd, buf(b), static_cast<size_t>(c), static_cast<int>(d));
        break;
    case SYS_process_vm_readv:
        return process_vm_readv(static_cast<pid_t>(a), vec(b), static_cast<unsigned long>(c), vec(d),
                                static_cast<unsigned long>(e), static_cast<unsigned long>(f));
    case SYS_process_vm_writev:
        return process_vm_writev(static_cast<pid_t>(a), vec(b), static_cast<unsigned long>(c), vec(d),
                                 static_cast<unsigned long>(e), static_cast<unsigned long>(f));
    case SYS_getxattr:
        return getxattr(str(a), str(b), buf(c), static_cast<size_t>(d));
    case SYS_lgetxattr:
        return lgetxattr(str(a), str(b), buf(c), static_cast<size_t>(d));
    case SYS_fgetxattr:
        return fgetxattr(fd, str(b), buf(c), static_cast<size_t>(d));
    case SYS_setxattr:
        return setxattr(str(a), str(b), buf(c), static_cast<size_t>(d), static_cast<int>(e));
    case SYS_lsetxattr:
        return lsetxattr(str(a), str(b), buf(c), static_cast<size_t>(d), static_cast<int>(e));
    case SYS_fsetxattr:
        return fsetxattr(fd, str(b), buf(c), static_cast<size_t>(d), static_cast<int>(e));
#ifdef ADSM_KERNEL_SIGACTION
    case SYS_rt_sigaction:
        if (d == sizeof(uint64_t)) return kernel_sigaction(static_cast<int>(a), buf(b), buf(c));
        break;
#endif
    case SYS_rt_sigprocmask:
        return kernel_sigprocmask(nr, a, buf(b), c, d);
    case SYS_sigaltstack:
        return kernel_sigaltstack(buf(a), buf(b));
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
    case SYS_close:
        return close(fd);
    case SYS_close_range:
        return adsm::interpose::close_range_around_held(static_cast<unsigned>(a), static_cast<unsigned>(b),
                                                        static_cast<int>(c));
#ifdef SYS_dup2
    case SYS_dup2:
        return dup2(fd, static_cast<int>(b));
#endif
    case SYS_dup3:
        return dup3(fd, static_cast<int>(b), static_cast<int>(c));
#ifdef SYS_fork
    case SYS_fork:
#endif
    case SYS_clone:
    case SYS_clone3:
        if (nr == SYS_clone ? makes_a_copy(static_cast<unsigned long>(a), b)
            : nr == SYS_clone3 ? clone3_makes_a_copy(buf(a), b)
                               : true)
            return adsm::interpose::with_fork_handlers([&] { return REAL(syscall)(nr, a, b, c, d, e, f); });
        break;
    default:
        break;
    }
    return REAL(syscall)(nr, a, b, c, d, e, f);
}
