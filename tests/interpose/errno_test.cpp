// A call that succeeds leaves errno as the program set it, whatever the
// runtime did for it on shared memory (fetching closed blocks, staging,
// copying structures): programs that read errno after a call that did not
// fail, as many do to tell an end of file from an error, see their own.
#include <fcntl.h>
#include <aio.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "helpers.h"

using namespace interpose_test;

TEST(ErrnoTest, SuccessfulCallsOnSharedMemoryLeaveErrno) {
    const size_t n = 3 * kThreshold;
    TempFile f(2 * n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    FILE *stream = fdopen(dup(f.fd), "r+");
    ASSERT_NE(stream, nullptr);
    struct Case {
        const char *name;
        std::function<bool()> call;
    };
    const std::vector<Case> cases = {
        {"read", [&] { return pread(f.fd, p, n, 0) == static_cast<ssize_t>(n); }},
        {"readv", [&] {
             struct iovec v[2] = {{p, 1000}, {p + kThreshold, n - kThreshold}};
             return preadv(f.fd, v, 2, 5) > 0;
         }},
        {"write", [&] { return pwrite(f.fd, p, n, 0) == static_cast<ssize_t>(n); }},
        {"pipe", [&] { return write(fds[1], p + 7, 4000) == 4000 && read(fds[0], p + kThreshold - 9, 4000) == 4000; }},
        {"getrandom", [&] { return getrandom(p + 3, 5000, 0) == 5000; }},
        {"fstat", [&] { return fstat(f.fd, reinterpret_cast<struct stat *>(p + kThreshold - 40)) == 0; }},
        {"uname", [&] { return uname(reinterpret_cast<struct utsname *>(p + 2 * kThreshold - 100)) == 0; }},
        {"poll", [&] {
             auto *a = reinterpret_cast<struct pollfd *>(p + kThreshold - 4);
             a[0] = {fds[1], POLLOUT, 0};
             return poll(a, 1, 0) == 1;
         }},
        {"path", [&] {
             strcpy(reinterpret_cast<char *>(p + 100), f.path.c_str());
             return access(reinterpret_cast<char *>(p + 100), R_OK) == 0;
         }},
        {"xattr", [&] {
             return fsetxattr(f.fd, "user.adsm.e", p + 9, 300, 0) == 0 &&
                    fgetxattr(f.fd, "user.adsm.e", p + kThreshold - 5, 300) == 300;
         }},
        // Bulk memory and streams through the protocol.
        {"memcpy", [&] {
             memcpy(p + n / 2, opaque(p), n / 2);
             return true;
         }},
        {"memset", [&] {
             memset(opaque(p), 7, n);
             return true;
         }},
        {"fread", [&] {
             rewind(stream);
             return fread(p, 1, n, stream) == n;
         }},
        {"fwrite", [&] {
             rewind(stream);
             return fwrite(p, 1, n, stream) == n && fflush(stream) == 0;
         }},
        // Asynchronous I/O, a stream's buffer, allocations, SIGSEGV's action.
        {"aio", [&] {
             struct aiocb cb = {};
             cb.aio_fildes = f.fd;
             cb.aio_buf = p;
             cb.aio_nbytes = n;
             if (aio_read(&cb) != 0) return false;
             const struct aiocb *list[] = {&cb};
             while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, nullptr);
             return aio_return(&cb) == static_cast<ssize_t>(n);
         }},
        {"setvbuf", [&] {
             FILE *s2 = fopen(f.path.c_str(), "r");
             bool ok = s2 && setvbuf(s2, reinterpret_cast<char *>(p), _IOFBF, kThreshold) == 0 && fgetc(s2) != EOF;
             if (s2) fclose(s2);
             return ok;
         }},
        {"malloc", [&] {
             void *q = malloc(2 * kThreshold);
             bool ok = q && shared(q);
             free(q);
             q = calloc(1, 3 * kThreshold);
             q = realloc(q, 5 * kThreshold);
             ok = ok && q;
             free(q);
             return ok;
         }},
        {"sigaction", [&] {
             struct sigaction now;
             return sigaction(SIGSEGV, nullptr, &now) == 0 && sigaction(SIGSEGV, &now, nullptr) == 0;
         }},
    };
    for (const Case &c : cases)
        for (int round = 0; round < 20; ++round) {
            close_on_device(p, n, static_cast<uint8_t>(round));
            errno = 12345;
            ASSERT_TRUE(c.call()) << c.name << ": " << strerror(errno);
            ASSERT_EQ(errno, 12345) << c.name << " (round " << round << ") left errno " << errno;
        }
    fclose(stream);
    close(fds[0]);
    close(fds[1]);
    free(p);
}
