// Calls that take path names (kernel_paths.h): opening (open, creat,
// fopen, freopen, opendir), asking (access, readlink, pathconf),
// changing the file tree (mkdir, rmdir, unlink, remove, rename, link,
// symlink, mknod, mkfifo), a file's owner, mode, size and times, the
// directory (chdir, chroot, getcwd's answer), file systems (mount, swapon,
// acct) and watches (inotify, fanotify), with the C library's fortified
// and second names.  The stat families are in kernel_structs.cpp, beside
// their structures; the extended attributes in kernel_values.cpp, beside
// their values.
//
// The exec family, posix_spawn, system and popen, whose paths come with
// argument and environment strings, are in process_strings.cpp.
#include "interpose/kernel_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <cstdint>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/stream_buffers.h"

extern "C" [[noreturn]] void __chk_fail(void);

namespace adsm::interpose {

namespace {
// Ordinary memory (or the window outside any allocation) read as the kernel
// would: bytes up to the first it may not read.
size_t read_plain(const void *p, void *out, size_t n) {
    struct iovec mine = {out, n}, theirs = {const_cast<void *>(p), n};
    ssize_t r = process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0);
    return r > 0 ? static_cast<size_t>(r) : 0;
}
}  // namespace

size_t read_string(const char *p, char *out, size_t max, int too_long) {
    // A page at a time (4 KiB bounds are page bounds for every page size):
    // bytes past the zero may belong to nothing readable.
    constexpr uintptr_t kChunk = 4096;
    char scratch[kChunk];
    size_t got = 0;
    while (got < max) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(p) + got;
        const size_t want = std::min<size_t>(max - got, kChunk - at % kChunk);
        preload::Piece pieces[4];
        const size_t count = preload::split(p + got, want, pieces, 4);
        char *to = out ? out + got : scratch;
        for (size_t i = 0; i < count; ++i) {
            const preload::Piece &piece = pieces[i];
            size_t n = piece.shared ? (preload::read_shared(piece.p, to, piece.n) == adsmSuccess ? piece.n : 0)
                                    : read_plain(piece.p, to, piece.n);
            if (const void *zero = memchr(to, 0, n)) return got + (static_cast<const char *>(zero) - to) + 1;
            got += n;
            to += n;
            if (n < piece.n) {
                errno = EFAULT;
                return 0;
            }
        }
    }
    errno = too_long;
    return 0;
}

}  // namespace adsm::interpose

using adsm::interpose::with_path;
using adsm::interpose::with_paths;

// ---------------------------------------------------------------- opening

namespace {
// open's third argument is there only when the flags create a file.
bool takes_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }
}  // namespace

#define MODE_OF(flags)                           \
    mode_t mode = 0;                             \
    if (takes_mode(flags)) {                     \
        va_list ap;                              \
        va_start(ap, flags);                     \
        mode = static_cast<mode_t>(va_arg(ap, int)); \
        va_end(ap);                              \
    }

INTERCEPTOR(int, open, const char *path, int flags, ...) {
    MODE_OF(flags);
    return with_path(path, [&](const char *p) { return REAL(open)(p, flags, mode); });
}
INTERCEPTOR(int, open64, const char *path, int flags, ...) {
    MODE_OF(flags);
    return with_path(path, [&](const char *p) { return REAL(open64)(p, flags, mode); });
}
INTERCEPTOR(int, openat, int dirfd, const char *path, int flags, ...) {
    MODE_OF(flags);
    return with_path(path, [&](const char *p) { return REAL(openat)(dirfd, p, flags, mode); });
}
INTERCEPTOR(int, openat64, int dirfd, const char *path, int flags, ...) {
    MODE_OF(flags);
    return with_path(path, [&](const char *p) { return REAL(openat64)(dirfd, p, flags, mode); });
}
// The C library's second names, and the fortified forms (which check that a
// file created has a mode, then open).
extern "C" {
int __open(const char *path, int flags, ...);
int __open64(const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
}
INTERCEPTOR(int, __open, const char *path, int flags, ...) {
    MODE_OF(flags);
    return open(path, flags, mode);
}
INTERCEPTOR(int, __open64, const char *path, int flags, ...) {
    MODE_OF(flags);
    return open64(path, flags, mode);
}
INTERCEPTOR(int, __open_2, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(__open_2)(p, flags); });
}
INTERCEPTOR(int, __open64_2, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(__open64_2)(p, flags); });
}
INTERCEPTOR(int, __openat_2, int dirfd, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(__openat_2)(dirfd, p, flags); });
}
INTERCEPTOR(int, __openat64_2, int dirfd, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(__openat64_2)(dirfd, p, flags); });
}
#undef MODE_OF

INTERCEPTOR(int, creat, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(creat)(p, mode); });
}
INTERCEPTOR(int, creat64, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(creat64)(p, mode); });
}
// (The C library opens these through its own names, which nothing can
// interpose: so they are wrapped themselves.  A mode string in shared
// memory the C library reads itself, taking the runtime's fault.)
INTERCEPTOR(FILE *, fopen, const char *path, const char *mode) {
    return with_path(path, [&](const char *p) { return REAL(fopen)(p, mode); });
}
INTERCEPTOR(FILE *, fopen64, const char *path, const char *mode) {
    return with_path(path, [&](const char *p) { return REAL(fopen64)(p, mode); });
}
// (A buffer the program gave the stream is dropped with its file, whether
// the new one opens or not.)
INTERCEPTOR(FILE *, freopen, const char *path, const char *mode, FILE *stream) {
    FILE *f = with_path(path, [&](const char *p) { return REAL(freopen)(p, mode, stream); });
    adsm::interpose::forget_stream_buffer(stream);
    return f;
}
INTERCEPTOR(FILE *, freopen64, const char *path, const char *mode, FILE *stream) {
    FILE *f = with_path(path, [&](const char *p) { return REAL(freopen64)(p, mode, stream); });
    adsm::interpose::forget_stream_buffer(stream);
    return f;
}
INTERCEPTOR(DIR *, opendir, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(opendir)(p); });
}

// ---------------------------------------------------------------- asking

INTERCEPTOR(int, access, const char *path, int how) {
    return with_path(path, [&](const char *p) { return REAL(access)(p, how); });
}
INTERCEPTOR(int, faccessat, int dirfd, const char *path, int how, int flags) {
    return with_path(path, [&](const char *p) { return REAL(faccessat)(dirfd, p, how, flags); });
}
INTERCEPTOR(int, euidaccess, const char *path, int how) {
    return with_path(path, [&](const char *p) { return REAL(euidaccess)(p, how); });
}
INTERCEPTOR(int, eaccess, const char *path, int how) {
    return with_path(path, [&](const char *p) { return REAL(eaccess)(p, how); });
}
INTERCEPTOR(long, pathconf, const char *path, int name) {
    return with_path(path, [&](const char *p) { return REAL(pathconf)(p, name); });
}

namespace {
// readlink's answer: the kernel writes it, so a buffer in shared memory gets
// a copy on the stack (a link's target is shorter than a page, so a copy of
// PATH_MAX bytes holds every answer a longer buffer would).
template <class Call>
ssize_t link_target(char *buf, size_t n, Call &&call) {
    if (!buf || !adsm::interpose::stages(buf, n)) return call(buf, n);
    char copy[PATH_MAX];
    ssize_t r = call(copy, std::min<size_t>(n, sizeof copy));
    if (r > 0 && adsm::preload::write_shared(buf, copy, static_cast<size_t>(r)) != adsmSuccess) {
        errno = EFAULT;
        return -1;
    }
    return r;
}
}  // namespace

INTERCEPTOR(ssize_t, readlink, const char *path, char *buf, size_t n) {
    return with_path(path, [&](const char *p) {
        return link_target(buf, n, [&](char *b, size_t m) { return REAL(readlink)(p, b, m); });
    });
}
INTERCEPTOR(ssize_t, readlinkat, int dirfd, const char *path, char *buf, size_t n) {
    return with_path(path, [&](const char *p) {
        return link_target(buf, n, [&](char *b, size_t m) { return REAL(readlinkat)(dirfd, p, b, m); });
    });
}
extern "C" {
ssize_t __readlink_chk(const char *path, char *buf, size_t n, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t n, size_t buflen);
char *__getcwd_chk(char *buf, size_t size, size_t buflen);
}
INTERCEPTOR(ssize_t, __readlink_chk, const char *path, char *buf, size_t n, size_t buflen) {
    if (n > buflen) __chk_fail();
    return readlink(path, buf, n);
}
INTERCEPTOR(ssize_t, __readlinkat_chk, int dirfd, const char *path, char *buf, size_t n, size_t buflen) {
    if (n > buflen) __chk_fail();
    return readlinkat(dirfd, path, buf, n);
}

// ---------------------------------------------------------------- changing the tree

INTERCEPTOR(int, mkdir, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(mkdir)(p, mode); });
}
INTERCEPTOR(int, mkdirat, int dirfd, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(mkdirat)(dirfd, p, mode); });
}
INTERCEPTOR(int, rmdir, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(rmdir)(p); });
}
INTERCEPTOR(int, unlink, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(unlink)(p); });
}
INTERCEPTOR(int, unlinkat, int dirfd, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(unlinkat)(dirfd, p, flags); });
}
INTERCEPTOR(int, remove, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(remove)(p); });
}
INTERCEPTOR(int, rename, const char *from, const char *to) {
    return with_paths(from, to, [&](const char *a, const char *b) { return REAL(rename)(a, b); });
}
INTERCEPTOR(int, renameat, int fromfd, const char *from, int tofd, const char *to) {
    return with_paths(from, to, [&](const char *a, const char *b) { return REAL(renameat)(fromfd, a, tofd, b); });
}
INTERCEPTOR(int, renameat2, int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    return with_paths(from, to,
                      [&](const char *a, const char *b) { return REAL(renameat2)(fromfd, a, tofd, b, flags); });
}
INTERCEPTOR(int, link, const char *from, const char *to) {
    return with_paths(from, to, [&](const char *a, const char *b) { return REAL(link)(a, b); });
}
INTERCEPTOR(int, linkat, int fromfd, const char *from, int tofd, const char *to, int flags) {
    return with_paths(from, to, [&](const char *a, const char *b) { return REAL(linkat)(fromfd, a, tofd, b, flags); });
}
// (A link's target is a path the kernel reads too.)
INTERCEPTOR(int, symlink, const char *target, const char *path) {
    return with_paths(target, path, [&](const char *a, const char *b) { return REAL(symlink)(a, b); });
}
INTERCEPTOR(int, symlinkat, const char *target, int dirfd, const char *path) {
    return with_paths(target, path, [&](const char *a, const char *b) { return REAL(symlinkat)(a, dirfd, b); });
}
INTERCEPTOR(int, mkfifo, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(mkfifo)(p, mode); });
}
INTERCEPTOR(int, mkfifoat, int dirfd, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(mkfifoat)(dirfd, p, mode); });
}
INTERCEPTOR(int, mknod, const char *path, mode_t mode, dev_t dev) {
    return with_path(path, [&](const char *p) { return REAL(mknod)(p, mode, dev); });
}
INTERCEPTOR(int, mknodat, int dirfd, const char *path, mode_t mode, dev_t dev) {
    return with_path(path, [&](const char *p) { return REAL(mknodat)(dirfd, p, mode, dev); });
}
// (Programs built against a C library older than 2.33.)
extern "C" {
int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev);
int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev);
}
INTERCEPTOR(int, __xmknod, int ver, const char *path, mode_t mode, dev_t *dev) {
    return with_path(path, [&](const char *p) { return REAL(__xmknod)(ver, p, mode, dev); });
}
INTERCEPTOR(int, __xmknodat, int ver, int dirfd, const char *path, mode_t mode, dev_t *dev) {
    return with_path(path, [&](const char *p) { return REAL(__xmknodat)(ver, dirfd, p, mode, dev); });
}

// ---------------------------------------------------------------- a file's owner, mode, size and times

INTERCEPTOR(int, chmod, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(chmod)(p, mode); });
}
INTERCEPTOR(int, lchmod, const char *path, mode_t mode) {
    return with_path(path, [&](const char *p) { return REAL(lchmod)(p, mode); });
}
INTERCEPTOR(int, fchmodat, int dirfd, const char *path, mode_t mode, int flags) {
    return with_path(path, [&](const char *p) { return REAL(fchmodat)(dirfd, p, mode, flags); });
}
INTERCEPTOR(int, chown, const char *path, uid_t uid, gid_t gid) {
    return with_path(path, [&](const char *p) { return REAL(chown)(p, uid, gid); });
}
INTERCEPTOR(int, lchown, const char *path, uid_t uid, gid_t gid) {
    return with_path(path, [&](const char *p) { return REAL(lchown)(p, uid, gid); });
}
INTERCEPTOR(int, fchownat, int dirfd, const char *path, uid_t uid, gid_t gid, int flags) {
    return with_path(path, [&](const char *p) { return REAL(fchownat)(dirfd, p, uid, gid, flags); });
}
INTERCEPTOR(int, truncate, const char *path, off_t size) {
    return with_path(path, [&](const char *p) { return REAL(truncate)(p, size); });
}
INTERCEPTOR(int, truncate64, const char *path, off64_t size) {
    return with_path(path, [&](const char *p) { return REAL(truncate64)(p, size); });
}
// The times themselves are small structures the C library passes on: a
// program keeps them on its stack, not in shared memory.
INTERCEPTOR(int, utime, const char *path, const struct utimbuf *times) {
    return with_path(path, [&](const char *p) { return REAL(utime)(p, times); });
}
INTERCEPTOR(int, utimes, const char *path, const struct timeval times[2]) {
    return with_path(path, [&](const char *p) { return REAL(utimes)(p, times); });
}
INTERCEPTOR(int, lutimes, const char *path, const struct timeval times[2]) {
    return with_path(path, [&](const char *p) { return REAL(lutimes)(p, times); });
}
INTERCEPTOR(int, futimesat, int dirfd, const char *path, const struct timeval times[2]) {
    return with_path(path, [&](const char *p) { return REAL(futimesat)(dirfd, p, times); });
}
INTERCEPTOR(int, utimensat, int dirfd, const char *path, const struct timespec times[2], int flags) {
    return with_path(path, [&](const char *p) { return REAL(utimensat)(dirfd, p, times, flags); });
}

// ---------------------------------------------------------------- the directory

INTERCEPTOR(int, chdir, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(chdir)(p); });
}
INTERCEPTOR(int, chroot, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(chroot)(p); });
}
// The kernel writes the answer: one into shared memory is asked for in the
// C library's own memory first, so that every length behaves as it would.
INTERCEPTOR(char *, getcwd, char *buf, size_t size) {
    if (!buf || size == 0 || !adsm::interpose::stages(buf, size)) return REAL(getcwd)(buf, size);
    char *mine = REAL(getcwd)(nullptr, 0);
    if (!mine) return nullptr;
    const size_t n = strlen(mine) + 1;
    adsm::Status s = n > size ? adsmErrorInvalidValue : adsm::preload::write_shared(buf, mine, n);
    free(mine);
    if (s == adsmSuccess) return buf;
    errno = n > size ? ERANGE : EFAULT;
    return nullptr;
}
INTERCEPTOR(char *, __getcwd_chk, char *buf, size_t size, size_t buflen) {
    if (size > buflen) __chk_fail();
    return getcwd(buf, size);
}

// ---------------------------------------------------------------- file systems and watches

INTERCEPTOR(int, mount, const char *source, const char *target, const char *type, unsigned long flags,
            const void *data) {
    return with_paths(source, target, [&](const char *s, const char *t) {
        return with_path(type, [&](const char *y) { return REAL(mount)(s, t, y, flags, data); });
    });
}
INTERCEPTOR(int, umount, const char *target) {
    return with_path(target, [&](const char *p) { return REAL(umount)(p); });
}
INTERCEPTOR(int, umount2, const char *target, int flags) {
    return with_path(target, [&](const char *p) { return REAL(umount2)(p, flags); });
}
INTERCEPTOR(int, swapon, const char *path, int flags) {
    return with_path(path, [&](const char *p) { return REAL(swapon)(p, flags); });
}
INTERCEPTOR(int, swapoff, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(swapoff)(p); });
}
INTERCEPTOR(int, acct, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(acct)(p); });
}
INTERCEPTOR(int, inotify_add_watch, int fd, const char *path, uint32_t mask) {
    return with_path(path, [&](const char *p) { return REAL(inotify_add_watch)(fd, p, mask); });
}
INTERCEPTOR(int, fanotify_mark, int fd, unsigned int flags, uint64_t mask, int dirfd, const char *path) {
    return with_path(path, [&](const char *p) { return REAL(fanotify_mark)(fd, flags, mask, dirfd, p); });
}
INTERCEPTOR(int, name_to_handle_at, int dirfd, const char *path, struct file_handle *handle, int *mount_id,
            int flags) {
    return with_path(path, [&](const char *p) { return REAL(name_to_handle_at)(dirfd, p, handle, mount_id, flags); });
}
