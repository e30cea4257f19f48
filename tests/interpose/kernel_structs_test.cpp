// Calls that fill one structure of the program's, with the structure in a
// shared buffer whose blocks are closed (their data on the device): each
// works as on ordinary memory (the kernel alone would fail it with EFAULT),
// and only the structure's bytes change.
#include <arpa/inet.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "helpers.h"
#include "os/fault_injection.h"

using namespace interpose_test;

extern "C" {
int capget(cap_user_header_t header, cap_user_data_t data);
int capset(cap_user_header_t header, const cap_user_data_t data);
}

TEST(KernelStructsTest, FileStatusLandsInClosedBlocks) {
    char path[] = "/tmp/adsm-kernel-structs-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "twelve bytes", 12), 12);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));

    auto *st = b.at_block_end<struct stat>();
    ASSERT_EQ(fstat(fd, st), 0) << strerror(errno);
    EXPECT_EQ(st->st_size, 12);
    EXPECT_TRUE(S_ISREG(st->st_mode));
    EXPECT_TRUE(b.kept_outside(st, sizeof *st));

    b.close();
    ASSERT_EQ(stat(path, st), 0) << strerror(errno);
    EXPECT_EQ(st->st_size, 12);
    b.close();
    ASSERT_EQ(lstat(path, st), 0) << strerror(errno);
    EXPECT_EQ(st->st_size, 12);
    b.close();
    ASSERT_EQ(fstatat(AT_FDCWD, path, st, 0), 0) << strerror(errno);
    EXPECT_EQ(st->st_size, 12);
    EXPECT_TRUE(b.kept_outside(st, sizeof *st));

    b.close();
    auto *sx = b.at_block_end<struct statx>();
    ASSERT_EQ(statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, sx), 0) << strerror(errno);
    EXPECT_EQ(sx->stx_size, 12u);
    EXPECT_TRUE(b.kept_outside(sx, sizeof *sx));

    b.close();
    auto *fs = b.at_block_end<struct statfs>();
    ASSERT_EQ(fstatfs(fd, fs), 0) << strerror(errno);
    EXPECT_GT(fs->f_bsize, 0);
    b.close();
    auto *vfs = b.at_block_end<struct statvfs>();
    ASSERT_EQ(statvfs(path, vfs), 0) << strerror(errno);
    EXPECT_GT(vfs->f_bsize, 0u);
    EXPECT_TRUE(b.kept_outside(vfs, sizeof *vfs));

    // A failing call stores nothing and keeps its own errno.
    b.close();
    errno = 0;
    EXPECT_EQ(stat("/nonexistent/adsm", st), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_TRUE(b.kept_outside(st, 0));
    close(fd);
    unlink(path);
}

TEST(KernelStructsTest, DescriptorPairsLandInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int *fds = b.at_block_end<int[2]>()[0];
    ASSERT_EQ(pipe(fds), 0) << strerror(errno);
    EXPECT_TRUE(b.kept_outside(fds, 2 * sizeof(int)));
    char c = 0;
    ASSERT_EQ(write(fds[1], "p", 1), 1);
    ASSERT_EQ(read(fds[0], &c, 1), 1);
    EXPECT_EQ(c, 'p');
    close(fds[0]);
    close(fds[1]);

    b.close();
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0) << strerror(errno);
    EXPECT_EQ(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(fds[0]);
    close(fds[1]);

    b.close();
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0) << strerror(errno);
    ASSERT_EQ(write(fds[0], "s", 1), 1);
    ASSERT_EQ(read(fds[1], &c, 1), 1);
    EXPECT_EQ(c, 's');
    EXPECT_TRUE(b.kept_outside(fds, 2 * sizeof(int)));
    close(fds[0]);
    close(fds[1]);
}

// A pair whose copy into shared memory fails (the device copy fails on the
// spot): the call fails with EFAULT, as the kernel's own copy would, and
// leaves no descriptor behind.
TEST(KernelStructsTest, APairThatCannotBeStoredFailsAndLeavesNoDescriptor) {
    namespace inj = adsm::os::injection;
    // (Batch reads and writes the host copy, which cannot fail.)
    const bool can_fail = protocol_in_use() != "batch";
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int *fds = b.at_block_end<int[2]>()[0];
    const int lowest_free = dup(0);
    ASSERT_GE(lowest_free, 0);
    close(lowest_free);
    // The first copy reads the program's bytes, the second stores the pair.
    for (uint64_t nth : {1, 2}) {
        SCOPED_TRACE(nth);
        b.close();
        inj::arm(inj::Site::device_copy, nth);
        errno = 0;
        int r = pipe(fds);
        int err = errno;
        inj::arm(inj::Site::device_copy, 0);
        if (can_fail) {
            EXPECT_EQ(r, -1);
            EXPECT_EQ(err, EFAULT);
        } else {
            ASSERT_EQ(r, 0) << strerror(err);
            close(fds[0]);
            close(fds[1]);
        }
        int probe = dup(0);
        EXPECT_EQ(probe, lowest_free) << "a descriptor of the failed call was left open";
        close(probe);
    }
    // The memory stays usable.
    b.close();
    ASSERT_EQ(pipe(fds), 0) << strerror(errno);
    close(fds[0]);
    close(fds[1]);
}

TEST(KernelStructsTest, AChildsStatusLandsInAClosedBlockAndOnlyWhenOneEnded) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int *status = b.at_block_end<int>();
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char c;
        (void)!read(pipe_fds[0], &c, 1);  // till the parent says
        _exit(7);
    }
    // (Closed after the fork, which brings shared objects to the host.)
    b.close();
    // Nothing to reap yet: the status is left as it was.
    EXPECT_EQ(waitpid(child, status, WNOHANG), 0);
    EXPECT_TRUE(b.kept_outside(status, 0));
    ASSERT_EQ(write(pipe_fds[1], "go", 1), 1);
    b.close();
    ASSERT_EQ(waitpid(child, status, 0), child) << strerror(errno);
    EXPECT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 7);
    EXPECT_TRUE(b.kept_outside(status, sizeof *status));

    // wait4's status and usage, both in closed blocks.
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(3);
    b.close();
    auto *usage = reinterpret_cast<struct rusage *>(b.p + 2 * kThreshold - 64);
    ASSERT_EQ(wait4(child, status, 0, usage), child) << strerror(errno);
    EXPECT_EQ(WEXITSTATUS(*status), 3);
    EXPECT_TRUE(b.written(usage, sizeof *usage));
    EXPECT_GE(usage->ru_maxrss, 0);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

TEST(KernelStructsTest, TheProcesssFactsLandInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *name = b.at_block_end<struct utsname>();
    ASSERT_EQ(uname(name), 0) << strerror(errno);
    EXPECT_STREQ(name->sysname, "Linux");
    EXPECT_TRUE(b.kept_outside(name, sizeof *name));

    b.close();
    auto *usage = b.at_block_end<struct rusage>();
    ASSERT_EQ(getrusage(RUSAGE_SELF, usage), 0) << strerror(errno);
    EXPECT_GT(usage->ru_maxrss, 0);

    b.close();
    auto *info = b.at_block_end<struct sysinfo>();
    ASSERT_EQ(sysinfo(info), 0) << strerror(errno);
    EXPECT_GT(info->totalram, 0u);

    b.close();
    auto *t = b.at_block_end<struct tms>();
    EXPECT_NE(times(t), static_cast<clock_t>(-1)) << strerror(errno);
    EXPECT_TRUE(b.written(t, sizeof *t));
    EXPECT_TRUE(b.kept_outside(t, sizeof *t));
}

TEST(KernelStructsTest, ReadinessSetsAndEventsTheDeviceHoldsAreReadAndWritten) {
    int ready[2], idle[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(idle), 0);
    ASSERT_EQ(write(ready[1], "r", 1), 1);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    // Sets the program filled, their bytes then on the device.
    auto *set = b.at_block_end<fd_set>();
    FD_ZERO(set);
    FD_SET(ready[0], set);
    FD_SET(idle[0], set);
    b.keep_on_device();
    struct timeval no_wait = {0, 0};
    const int nfds = std::max(ready[0], idle[0]) + 1;
    ASSERT_EQ(select(nfds, set, nullptr, nullptr, &no_wait), 1) << strerror(errno);
    EXPECT_TRUE(FD_ISSET(ready[0], set));
    EXPECT_FALSE(FD_ISSET(idle[0], set)) << "the kernel's answer, written back";

    FD_ZERO(set);
    FD_SET(ready[0], set);
    b.keep_on_device();
    struct timespec no_wait_ns = {0, 0};
    ASSERT_EQ(pselect(nfds, set, nullptr, nullptr, &no_wait_ns, nullptr), 1) << strerror(errno);
    EXPECT_TRUE(FD_ISSET(ready[0], set));

    auto *ev = b.at_block_end<struct epoll_event>();
    ev->events = EPOLLIN;
    ev->data.u64 = 42;
    b.keep_on_device();
    int ep = epoll_create1(0);
    ASSERT_GE(ep, 0);
    ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, ready[0], ev), 0) << strerror(errno);
    struct epoll_event got = {};
    ASSERT_EQ(epoll_wait(ep, &got, 1, 0), 1);
    EXPECT_EQ(got.data.u64, 42u) << "the event the kernel read was the program's";
    for (int fd : {ep, ready[0], ready[1], idle[0], idle[1]}) close(fd);
}

TEST(KernelStructsTest, SocketAddressesAndOptionsLandInClosedBlocks) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(listener, 0);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    // What the kernel reads: the address to bind and an option's value, the
    // program's bytes on the device.
    auto *addr = b.at_block_end<struct sockaddr_in>();
    *addr = {};
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto *one = reinterpret_cast<int *>(b.p + 2 * kThreshold + 64);
    *one = 1;
    const std::vector<uint8_t> before(b.p, b.p + b.kSize);
    b.keep_on_device();
    ASSERT_EQ(setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, one, sizeof *one), 0) << strerror(errno);
    int reuse = 0;
    socklen_t reuse_len = sizeof reuse;
    ASSERT_EQ(getsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, &reuse_len), 0);
    EXPECT_EQ(reuse, 1) << "the option's value was the program's";
    ASSERT_EQ(bind(listener, reinterpret_cast<struct sockaddr *>(addr), sizeof *addr), 0) << strerror(errno);
    ASSERT_EQ(listen(listener, 1), 0);
    EXPECT_EQ(memcmp(before.data(), b.p, b.kSize), 0) << "nothing changed where the kernel only read";
    b.close();
    auto *len = reinterpret_cast<socklen_t *>(b.p + 2 * kThreshold);
    *len = sizeof *addr;
    b.keep_on_device();
    ASSERT_EQ(getsockname(listener, reinterpret_cast<struct sockaddr *>(addr), len), 0) << strerror(errno);
    EXPECT_EQ(*len, sizeof *addr);
    EXPECT_EQ(addr->sin_family, AF_INET);
    const in_port_t port = addr->sin_port;
    EXPECT_NE(port, 0);

    int client = socket(AF_INET, SOCK_STREAM, 0);
    b.keep_on_device();  // the address to connect to, on the device
    ASSERT_EQ(connect(client, reinterpret_cast<struct sockaddr *>(addr), sizeof *addr), 0) << strerror(errno);
    b.close();
    *len = sizeof *addr;
    b.keep_on_device();
    int served = accept(listener, reinterpret_cast<struct sockaddr *>(addr), len);
    ASSERT_GE(served, 0) << strerror(errno);
    EXPECT_EQ(addr->sin_family, AF_INET);
    EXPECT_EQ(addr->sin_addr.s_addr, htonl(INADDR_LOOPBACK));

    b.close();
    *len = sizeof *addr;
    b.keep_on_device();
    ASSERT_EQ(getpeername(client, reinterpret_cast<struct sockaddr *>(addr), len), 0) << strerror(errno);
    EXPECT_EQ(addr->sin_port, port);

    b.close();
    auto *type = b.at_block_end<int>();
    *len = sizeof *type;
    b.keep_on_device();
    ASSERT_EQ(getsockopt(client, SOL_SOCKET, SO_TYPE, type, len), 0) << strerror(errno);
    EXPECT_EQ(*type, SOCK_STREAM);
    EXPECT_EQ(*len, sizeof(int));
    // A bad length pointer with a shared address: the kernel's EFAULT, not a
    // crash in the runtime.
    errno = 0;
    EXPECT_EQ(getsockname(listener, reinterpret_cast<struct sockaddr *>(addr), opaque(reinterpret_cast<socklen_t *>(8))),
              -1);
    EXPECT_EQ(errno, EFAULT);
    for (int fd : {served, client, listener}) close(fd);
}

TEST(KernelStructsTest, MessageAddressesAndControlDataLandInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(rx, 0);
    ASSERT_GE(tx, 0);
    struct sockaddr_in rx_addr = {}, tx_addr = {};
    rx_addr.sin_family = tx_addr.sin_family = AF_INET;
    rx_addr.sin_addr.s_addr = tx_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(rx, reinterpret_cast<struct sockaddr *>(&rx_addr), sizeof rx_addr), 0);
    ASSERT_EQ(bind(tx, reinterpret_cast<struct sockaddr *>(&tx_addr), sizeof tx_addr), 0);
    socklen_t n = sizeof rx_addr;
    ASSERT_EQ(getsockname(rx, reinterpret_cast<struct sockaddr *>(&rx_addr), &n), 0);
    n = sizeof tx_addr;
    ASSERT_EQ(getsockname(tx, reinterpret_cast<struct sockaddr *>(&tx_addr), &n), 0);

    // sendto reads its destination from the device's blocks...
    auto *addr = b.at_block_end<struct sockaddr_in>();
    *addr = rx_addr;
    b.keep_on_device();
    ASSERT_EQ(sendto(tx, "ping", 4, 0, reinterpret_cast<struct sockaddr *>(addr), sizeof *addr), 4) << strerror(errno);
    // ...and recvfrom writes the sender's there, its data on the stack or,
    // staged, in shared memory too.
    auto *len = reinterpret_cast<socklen_t *>(b.p + 2 * kThreshold);
    char *data = reinterpret_cast<char *>(b.p + 2 * kThreshold + 256);
    for (bool staged : {false, true}) {
        SCOPED_TRACE(staged);
        if (staged) {
            ASSERT_EQ(sendto(tx, "ping", 4, 0, reinterpret_cast<struct sockaddr *>(&rx_addr), sizeof rx_addr), 4);
        }
        b.close();
        *len = sizeof *addr;
        b.keep_on_device();
        char mine[8] = {};
        char *into = staged ? data : mine;
        ASSERT_EQ(recvfrom(rx, into, 4, 0, reinterpret_cast<struct sockaddr *>(addr), len), 4) << strerror(errno);
        EXPECT_EQ(std::string(into, 4), "ping");
        EXPECT_EQ(*len, sizeof *addr);
        EXPECT_EQ(addr->sin_port, tx_addr.sin_port);
    }

    // sendmmsg and recvmmsg with their vector in the device's blocks: each
    // message's length lands there.
    b.close();
    char one[] = "one", two[] = "two!";
    struct iovec iov[2] = {{one, 3}, {two, 4}};
    auto *vec = reinterpret_cast<struct mmsghdr *>(b.p + kThreshold - sizeof(struct mmsghdr));
    memset(vec, 0, 2 * sizeof *vec);
    for (int i = 0; i < 2; ++i) {
        vec[i].msg_hdr.msg_iov = &iov[i];
        vec[i].msg_hdr.msg_iovlen = 1;
        vec[i].msg_hdr.msg_name = &rx_addr;
        vec[i].msg_hdr.msg_namelen = sizeof rx_addr;
    }
    b.keep_on_device();
    ASSERT_EQ(sendmmsg(tx, vec, 2, 0), 2) << strerror(errno);
    EXPECT_EQ(vec[0].msg_len, 3u);
    EXPECT_EQ(vec[1].msg_len, 4u);
    char got[2][8] = {};
    struct iovec in[2] = {{got[0], 8}, {got[1], 8}};
    for (int i = 0; i < 2; ++i) {
        vec[i].msg_hdr.msg_iov = &in[i];
        vec[i].msg_hdr.msg_name = nullptr;
        vec[i].msg_hdr.msg_namelen = 0;
        vec[i].msg_len = 0;
    }
    b.keep_on_device();
    ASSERT_EQ(recvmmsg(rx, vec, 2, 0, nullptr), 2) << strerror(errno);
    EXPECT_EQ(vec[0].msg_len, 3u);
    EXPECT_EQ(vec[1].msg_len, 4u);
    EXPECT_EQ(std::string(got[1], 4), "two!");
    close(rx);
    close(tx);

    // A descriptor passed in control data, the message's header and control
    // data in the device's blocks at both ends.
    int sv[2], pipe_fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    ASSERT_EQ(pipe(pipe_fds), 0);
    union Control {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    };
    b.close();
    auto *mh = reinterpret_cast<struct msghdr *>(b.p + 2 * kThreshold - sizeof(struct msghdr) / 2 / 8 * 8);
    auto *control = b.at_block_end<Control>();
    char byte = 'x';
    struct iovec v = {&byte, 1};
    *mh = {};
    mh->msg_iov = &v;
    mh->msg_iovlen = 1;
    mh->msg_control = control->buf;
    mh->msg_controllen = sizeof control->buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pipe_fds[1], sizeof(int));
    b.keep_on_device();
    ASSERT_EQ(sendmsg(sv[0], mh, 0), 1) << strerror(errno);

    b.close();
    char received = 0;
    v = {&received, 1};
    *mh = {};
    mh->msg_iov = &v;
    mh->msg_iovlen = 1;
    mh->msg_control = control->buf;
    mh->msg_controllen = sizeof control->buf;
    b.keep_on_device();
    ASSERT_EQ(recvmsg(sv[1], mh, 0), 1) << strerror(errno);
    EXPECT_EQ(received, 'x');
    ASSERT_GE(mh->msg_controllen, CMSG_LEN(sizeof(int)));
    c = CMSG_FIRSTHDR(mh);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->cmsg_type, SCM_RIGHTS);
    int passed = -1;
    memcpy(&passed, CMSG_DATA(c), sizeof passed);
    ASSERT_GE(passed, 0);
    ASSERT_EQ(write(passed, "!", 1), 1) << "the descriptor passed is the pipe's";
    char bang = 0;
    ASSERT_EQ(read(pipe_fds[0], &bang, 1), 1);
    EXPECT_EQ(bang, '!');
    for (int fd : {passed, pipe_fds[0], pipe_fds[1], sv[0], sv[1]}) close(fd);
}

// Control data larger than the copies the message's other parts get (a
// few hundred descriptors) is opened in place, at both ends.
TEST(KernelStructsTest, LargeControlDataInClosedBlocksReachesTheKernel) {
    constexpr int kPassed = 200;  // 800 bytes of descriptors
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int sv[2], pipe_fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    ASSERT_EQ(pipe(pipe_fds), 0);
    const size_t room = CMSG_SPACE(kPassed * sizeof(int));
    ASSERT_GT(room, 512u);
    auto *control = reinterpret_cast<char *>(b.p + 2 * kThreshold - 512);  // across two blocks
    char byte = 'x';
    struct iovec v = {&byte, 1};
    struct msghdr mh = {};
    mh.msg_iov = &v;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = room;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(kPassed * sizeof(int));
    for (int i = 0; i < kPassed; ++i) memcpy(CMSG_DATA(c) + i * sizeof(int), &pipe_fds[1], sizeof(int));
    b.keep_on_device();
    ASSERT_EQ(sendmsg(sv[0], &mh, 0), 1) << strerror(errno);

    b.close();
    char received = 0;
    v = {&received, 1};
    mh = {};
    mh.msg_iov = &v;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = room;
    ASSERT_EQ(recvmsg(sv[1], &mh, 0), 1) << strerror(errno);
    EXPECT_EQ(received, 'x');
    EXPECT_EQ(mh.msg_flags & MSG_CTRUNC, 0);
    c = CMSG_FIRSTHDR(&mh);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->cmsg_type, SCM_RIGHTS);
    ASSERT_EQ(c->cmsg_len, CMSG_LEN(kPassed * sizeof(int)));
    EXPECT_TRUE(b.kept_outside(control, room));
    std::vector<int> passed(kPassed);
    memcpy(passed.data(), CMSG_DATA(c), kPassed * sizeof(int));
    ASSERT_EQ(write(passed.back(), "!", 1), 1) << "a descriptor passed is the pipe's";
    char bang = 0;
    ASSERT_EQ(read(pipe_fds[0], &bang, 1), 1);
    EXPECT_EQ(bang, '!');
    for (int fd : passed) close(fd);
    for (int fd : {pipe_fds[0], pipe_fds[1], sv[0], sv[1]}) close(fd);
}

TEST(KernelStructsTest, LimitsLandInClosedBlocks) {
    struct rlimit own;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &own), 0);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *limit = b.at_block_end<struct rlimit>();
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, limit), 0) << strerror(errno);
    EXPECT_EQ(limit->rlim_cur, own.rlim_cur);
    EXPECT_EQ(limit->rlim_max, own.rlim_max);

    b.close();
    ASSERT_EQ(prlimit(0, RLIMIT_NOFILE, nullptr, limit), 0) << strerror(errno);
    EXPECT_EQ(limit->rlim_cur, own.rlim_cur);
    // A new limit the kernel reads from a closed block: the same as now.
    b.keep_on_device();
    ASSERT_EQ(prlimit(0, RLIMIT_NOFILE, limit, nullptr), 0) << strerror(errno);
    EXPECT_TRUE(b.kept_outside(limit, sizeof *limit));
    // Lowered from a closed block: the kernel read the program's value.
    limit->rlim_cur = own.rlim_cur - 1;
    b.keep_on_device();
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, limit), 0) << strerror(errno);
    struct rlimit now;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
    EXPECT_EQ(now.rlim_cur, own.rlim_cur - 1);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &own), 0);
}

TEST(KernelStructsTest, IntervalTimersAreReadAndWrittenInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *timer = b.at_block_end<struct itimerval>();
    *timer = {};
    timer->it_value.tv_sec = 1000;  // far enough never to fire here
    b.keep_on_device();
    auto *old = reinterpret_cast<struct itimerval *>(b.p + 2 * kThreshold + 128);
    ASSERT_EQ(setitimer(ITIMER_REAL, timer, old), 0) << strerror(errno);
    EXPECT_EQ(old->it_value.tv_sec, 0) << "no timer was set before";
    b.close();
    ASSERT_EQ(getitimer(ITIMER_REAL, timer), 0) << strerror(errno);
    EXPECT_GT(timer->it_value.tv_sec, 990) << "the timer the kernel read was the program's";
    EXPECT_TRUE(b.kept_outside(timer, sizeof *timer));
    struct itimerval off = {};
    ASSERT_EQ(setitimer(ITIMER_REAL, &off, nullptr), 0);
}

namespace {
void on_wake(int) {}
}  // namespace

TEST(KernelStructsTest, ASleepReadsItsLengthAndWritesItsRemainderInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *req = b.at_block_end<struct timespec>();
    auto *rem = reinterpret_cast<struct timespec *>(b.p + 2 * kThreshold + 32);
    *req = {0, 1000000};  // 1 ms
    b.keep_on_device();
    EXPECT_EQ(nanosleep(req, rem), 0) << strerror(errno);
    EXPECT_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem), 0);

    // Cut short by a signal: the remainder is the kernel's, in the closed block.
    struct sigaction sa = {}, old;
    sa.sa_handler = on_wake;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
    for (bool clock : {false, true}) {
        SCOPED_TRACE(clock ? "clock_nanosleep" : "nanosleep");
        *req = {100, 0};
        *rem = {0, 0};
        b.keep_on_device();
        pthread_t sleeper = pthread_self();
        std::thread waker([sleeper] {
            usleep(50000);
            pthread_kill(sleeper, SIGUSR2);
        });
        int r = clock ? clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem) : nanosleep(req, rem);
        int err = clock ? r : errno;
        waker.join();
        EXPECT_EQ(err, EINTR);
        EXPECT_GT(rem->tv_sec, 90) << "the remainder of a 100 s sleep cut short after 50 ms";
    }
    sigaction(SIGUSR2, &old, nullptr);
}

// The vectored calls' iovec arrays in closed blocks (the buffers they name
// ordinary memory): the interposer reads the array to learn whether any
// buffer is shared, which opens its block as any CPU read does, so the
// kernel finds it readable.
TEST(KernelStructsTest, IovecArraysInClosedBlocksReachTheKernel) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    char one[] = "one ", two[] = "two";
    auto *iov = b.at_block_end<struct iovec[2]>()[0];
    iov[0] = {one, 4};
    iov[1] = {two, 3};
    b.keep_on_device();
    ASSERT_EQ(writev(fds[1], iov, 2), 7) << strerror(errno);
    char got1[4] = {}, got2[3] = {};
    b.close();
    iov = b.at_block_end<struct iovec[2]>()[0];
    iov[0] = {got1, 4};
    iov[1] = {got2, 3};
    b.keep_on_device();
    ASSERT_EQ(readv(fds[0], iov, 2), 7) << strerror(errno);
    EXPECT_EQ(std::string(got1, 4) + std::string(got2, 3), "one two");
    close(fds[0]);
    close(fds[1]);
}

TEST(KernelStructsTest, SignalsWaitedForAreReadAndWrittenInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    sigset_t usr, old;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR2);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr, &old), 0);
    ASSERT_EQ(raise(SIGUSR2), 0);
    auto *pending = b.at_block_end<sigset_t>();
    ASSERT_EQ(sigpending(pending), 0) << strerror(errno);
    EXPECT_EQ(sigismember(pending, SIGUSR2), 1);
    EXPECT_TRUE(b.kept_outside(pending, sizeof *pending));

    // The set the kernel waits on and the information it fills, both
    // where the device wrote last.
    auto *set = reinterpret_cast<sigset_t *>(b.p + 100);
    *set = usr;
    b.keep_on_device();
    auto *info = reinterpret_cast<siginfo_t *>(b.p + 2 * kThreshold - 64);
    struct timespec now = {0, 0};
    ASSERT_EQ(sigtimedwait(set, info, &now), SIGUSR2) << strerror(errno);
    EXPECT_EQ(info->si_signo, SIGUSR2);
    EXPECT_EQ(info->si_pid, getpid());
    ASSERT_EQ(raise(SIGUSR2), 0);
    b.keep_on_device();
    ASSERT_EQ(sigwaitinfo(set, info), SIGUSR2) << strerror(errno);
    EXPECT_EQ(info->si_signo, SIGUSR2);
    ASSERT_EQ(raise(SIGUSR2), 0);
    b.keep_on_device();
    int got = 0;
    ASSERT_EQ(sigwait(set, &got), 0);
    EXPECT_EQ(got, SIGUSR2);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
}

TEST(KernelStructsTest, ClocksAndTimersAreReadAndWrittenInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    // The CPU-time clocks are read by the kernel, not the vDSO.
    volatile double spin = 0;
    for (int i = 0; i < 2000000; ++i) spin = spin + i;
    auto *ts = b.at_block_end<struct timespec>();
    ASSERT_EQ(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, ts), 0) << strerror(errno);
    EXPECT_TRUE(ts->tv_sec > 0 || ts->tv_nsec > 0);
    EXPECT_TRUE(b.kept_outside(ts, sizeof *ts));
    b.close();
    ASSERT_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(clock_getres(CLOCK_PROCESS_CPUTIME_ID, ts), 0) << strerror(errno);
    EXPECT_EQ(ts->tv_sec, 0);
    b.close();
    ASSERT_EQ(clock_gettime(CLOCK_MONOTONIC, ts), 0) << strerror(errno);

    // A timer descriptor's setting read from, and its state written into,
    // closed blocks.
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    ASSERT_GE(fd, 0);
    auto *value = reinterpret_cast<struct itimerspec *>(b.p + 300);
    *value = {};
    value->it_value.tv_sec = 1000;
    value->it_interval.tv_sec = 7;
    b.keep_on_device();
    auto *old = b.at_block_end<struct itimerspec>();
    ASSERT_EQ(timerfd_settime(fd, 0, value, old), 0) << strerror(errno);
    EXPECT_EQ(old->it_value.tv_sec, 0);
    b.close();
    ASSERT_EQ(timerfd_gettime(fd, old), 0) << strerror(errno);
    EXPECT_GT(old->it_value.tv_sec, 990) << "the setting the kernel read was the device's";
    EXPECT_EQ(old->it_interval.tv_sec, 7);
    close(fd);

    // A POSIX timer: the event read, the id written.
    auto *event = reinterpret_cast<struct sigevent *>(b.p + 1000);
    *event = {};
    event->sigev_notify = SIGEV_NONE;
    b.keep_on_device();
    auto *id = b.at_block_end<timer_t>();
    ASSERT_EQ(timer_create(CLOCK_MONOTONIC, event, id), 0) << strerror(errno);
    timer_t mine = *id;
    *value = {};
    value->it_value.tv_sec = 1000;
    b.keep_on_device();
    ASSERT_EQ(timer_settime(mine, 0, value, nullptr), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(timer_gettime(mine, old), 0) << strerror(errno);
    EXPECT_GT(old->it_value.tv_sec, 990);
    EXPECT_EQ(timer_delete(mine), 0);
}

TEST(KernelStructsTest, SchedulingAndIdentitiesLandInClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    auto *mask = b.at_block_end<cpu_set_t>();
    ASSERT_EQ(sched_getaffinity(0, sizeof *mask, mask), 0) << strerror(errno);
    EXPECT_TRUE(CPU_EQUAL(mask, &mine));
    EXPECT_TRUE(b.kept_outside(mask, sizeof *mask));
    b.keep_on_device();
    ASSERT_EQ(sched_setaffinity(0, sizeof *mask, mask), 0) << strerror(errno);

    b.close();
    auto *param = b.at_block_end<struct sched_param>();
    ASSERT_EQ(sched_getparam(0, param), 0) << strerror(errno);
    EXPECT_EQ(param->sched_priority, 0);
    b.keep_on_device();
    ASSERT_EQ(sched_setparam(0, param), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(sched_rr_get_interval(0, b.at_block_end<struct timespec>()), 0) << strerror(errno);
    b.close();
    auto *cpu = reinterpret_cast<unsigned *>(b.p + kThreshold - 2);
    auto *node = reinterpret_cast<unsigned *>(b.p + 2 * kThreshold - 2);
    ASSERT_EQ(getcpu(cpu, node), 0) << strerror(errno);
    EXPECT_LT(*cpu, 4096u);

    b.close();
    gid_t groups[256];
    int n = getgroups(256, groups);
    ASSERT_GE(n, 0);
    auto *list = reinterpret_cast<gid_t *>(b.p + kThreshold - 6);
    ASSERT_EQ(getgroups(256, list), n) << strerror(errno);
    EXPECT_TRUE(std::equal(groups, groups + n, list));
    EXPECT_TRUE(b.kept_outside(list, n * sizeof *list));

    b.close();
    auto *r = reinterpret_cast<uid_t *>(b.p + kThreshold - 2), *e = r + 1, *s = r + 2;
    ASSERT_EQ(getresuid(r, e, s), 0) << strerror(errno);
    EXPECT_EQ(*r, getuid());
    EXPECT_EQ(*e, geteuid());
    b.close();
    auto *gr = reinterpret_cast<gid_t *>(b.p + kThreshold - 2);
    ASSERT_EQ(getresgid(gr, gr + 1, gr + 2), 0) << strerror(errno);
    EXPECT_EQ(gr[1], getegid());

    // Capabilities: the header read and written, then two sets of data.
    struct __user_cap_header_struct plain_header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct plain[2];
    ASSERT_EQ(syscall(SYS_capget, &plain_header, plain), 0);
    auto *header = reinterpret_cast<struct __user_cap_header_struct *>(b.p + 200);
    auto *data = reinterpret_cast<struct __user_cap_data_struct *>(b.p + kThreshold - 12);
    // A version the kernel does not know: it writes its own back, asked
    // without data (a probe, 0) and with (EINVAL).
    for (bool probe : {true, false}) {
        *header = {0x12345678, 0};
        b.keep_on_device();
        errno = 0;
        EXPECT_EQ(capget(header, probe ? nullptr : data), probe ? 0 : -1);
        EXPECT_EQ(errno, probe ? 0 : EINVAL);
        EXPECT_EQ(header->version, static_cast<uint32_t>(_LINUX_CAPABILITY_VERSION_3)) << probe;
    }
    b.keep_on_device();
    ASSERT_EQ(capget(header, data), 0) << strerror(errno);
    EXPECT_EQ(data[0].effective, plain[0].effective);
    EXPECT_EQ(data[1].permitted, plain[1].permitted);
    b.keep_on_device();
    ASSERT_EQ(capset(header, data), 0) << strerror(errno) << ": setting the sets it has";
}

TEST(KernelStructsTest, OffsetsTheKernelMovesAreReadAndWrittenInClosedBlocks) {
    TempFile in(200000);
    char tmpl[] = "/tmp/adsm-offsets-XXXXXX";
    int out = mkstemp(tmpl);
    ASSERT_GE(out, 0);
    unlink(tmpl);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *at = b.at_block_end<off_t>();
    *at = 1000;
    b.keep_on_device();
    ASSERT_EQ(sendfile(out, in.fd, at, 5000), 5000) << strerror(errno);
    EXPECT_EQ(*at, 6000) << "the kernel moved the device's offset";
    auto *to = reinterpret_cast<off64_t *>(b.p + 2 * kThreshold - 4);
    *at = 100000;
    *to = 5000;
    b.keep_on_device();
    ASSERT_EQ(copy_file_range(in.fd, at, out, to, 3000, 0), 3000) << strerror(errno);
    EXPECT_EQ(*at, 103000);
    EXPECT_EQ(*to, 8000);
    uint8_t got[8000];
    ASSERT_EQ(pread(out, got, sizeof got, 0), 8000);
    for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(got[i], file_byte(1000 + i)) << i;
    for (size_t i = 0; i < 3000; ++i) ASSERT_EQ(got[5000 + i], file_byte(100000 + i)) << i;

    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    *at = 50;
    b.keep_on_device();
    ASSERT_EQ(splice(in.fd, reinterpret_cast<loff_t *>(at), fds[1], nullptr, 100, 0), 100) << strerror(errno);
    EXPECT_EQ(*at, 150);
    ASSERT_EQ(read(fds[0], got, 100), 100);
    EXPECT_EQ(got[0], file_byte(50));
    close(fds[0]);
    close(fds[1]);
    close(out);
}
