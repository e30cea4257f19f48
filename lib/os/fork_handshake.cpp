#include "os/fork_handshake.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "os/proc_text.h"
#include "os/raw_syscall.h"

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

// Whether the process is stopped, by a signal or a tracer: the state
// after the name (which may hold spaces and parentheses) in its stat.
bool stopped(pid_t pid) {
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    if (!read_proc_text(path, stat, sizeof stat)) return false;
    const char *name_end = strrchr(stat, ')');
    return name_end && name_end[1] == ' ' && (name_end[2] == 'T' || name_end[2] == 't');
}

// The child, or before its id came any child of this thread, held stopped.
bool held_stopped(pid_t child) {
    if (child > 0) return stopped(child);
    char path[64], list[4096];
    snprintf(path, sizeof path, "/proc/self/task/%ld/children", static_cast<long>(raw_syscall(SYS_gettid)));
    if (!read_proc_text(path, list, sizeof list)) return false;
    for (char *at = list; *at;) {
        char *end = nullptr;
        long pid = strtol(at, &end, 10);
        if (end == at) break;
        if (pid > 0 && stopped(static_cast<pid_t>(pid))) return true;
        at = end;
    }
    return false;
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

ForkHandshake::Wait ForkHandshake::parent_wait() {
    if (fds_[0] < 0) return Wait::done;
    const int saved = errno;
    close(fds_[1]);
    fds_[1] = -1;
    Wait result = Wait::done;
    // First the child's id (none: the fork failed, or the child ended
    // before it could write it), then the byte, or the pipe's end.  The
    // child's end also shows on its pidfd (a kernel before 5.3 has none:
    // the pipe alone says then).  A second at a time: a child held stopped
    // before or during its copy lets its parent go.
    pid_t child = 0;
    size_t have = 0;
    int ended = -1;
    for (;;) {
        struct pollfd watch[2] = {{fds_[0], POLLIN, 0}, {ended, POLLIN, 0}};
        int r = poll(watch, ended >= 0 ? 2 : 1, 1000);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == 0) {
            if (held_stopped(have == sizeof child ? child : 0)) {
                result = Wait::stopped;
                break;
            }
            continue;
        }
        if (ended >= 0 && watch[1].revents) break;
        if (have == sizeof child) break;  // the byte, or the pipe's end
        ssize_t n = read(fds_[0], reinterpret_cast<char *>(&child) + have, sizeof child - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if ((have += static_cast<size_t>(n)) == sizeof child)
            ended = static_cast<int>(raw_syscall(SYS_pidfd_open, child, 0));
    }
    if (ended >= 0) close(ended);
    close_all();
    errno = saved;
    return result;
}

void ForkHandshake::close_all() {
    for (int &fd : fds_) {
        if (fd >= 0) close(fd);
        fd = -1;
    }
}

}  // namespace adsm::os
