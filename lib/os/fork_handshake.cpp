#include "os/fork_handshake.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace adsm::os {

namespace {
// The whole of [p, p+n) through fd, past interruptions; false when the
// other end went away first.
bool write_all(int fd, const void *p, size_t n) {
    auto *b = static_cast<const char *>(p);
    while (n > 0) {
        ssize_t r = write(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        b += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}
bool read_all(int fd, void *p, size_t n) {
    auto *b = static_cast<char *>(p);
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        b += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}
}  // namespace

void ForkHandshake::prepare() {
    close_all();
    if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

void ForkHandshake::child_started() {
    if (fds_[1] < 0) return;
    const int saved = errno;
    pid_t me = getpid();
    (void)write_all(fds_[1], &me, sizeof me);
    errno = saved;
}

void ForkHandshake::child_done() {
    if (fds_[1] < 0) return;
    const int saved = errno;
    const char done = 1;
    (void)write_all(fds_[1], &done, 1);
    close_all();
    errno = saved;
}

void ForkHandshake::parent_wait() {
    if (fds_[0] < 0) return;
    const int saved = errno;
    close(fds_[1]);
    fds_[1] = -1;
    pid_t child = 0;
    // No id: the fork failed, or the child ended before its handler ran.
    if (read_all(fds_[0], &child, sizeof child)) {
        const int ended = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
        struct pollfd watch[2] = {{fds_[0], POLLIN, 0}, {ended, POLLIN, 0}};
        // The byte (or the pipe's end: the child closed it as it ended), or
        // the child's end (pidfd readable).  Without a pidfd (a kernel
        // before 5.3) the pipe alone says.
        for (;;) {
            int r = poll(watch, ended >= 0 ? 2 : 1, -1);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0 || watch[0].revents || (ended >= 0 && watch[1].revents)) break;
        }
        if (ended >= 0) close(ended);
    }
    close_all();
    errno = saved;
}

void ForkHandshake::close_all() {
    for (int &fd : fds_) {
        if (fd >= 0) close(fd);
        fd = -1;
    }
}

}  // namespace adsm::os
