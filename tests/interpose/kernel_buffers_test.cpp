// System calls outside the I/O families that fill or read a shared buffer
// whose blocks are closed (their data on the device): random bytes and
// readiness arrays work as on ordinary memory, and only the bytes the
// kernel wrote change.
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "helpers.h"

using namespace interpose_test;

namespace {

// How many of [p, p+n) still hold close_on_device's pattern.
size_t untouched(const uint8_t *base, size_t from, size_t n, uint8_t v) {
    size_t same = 0;
    for (size_t i = from; i < from + n; ++i) same += base[i] == pattern(i, v);
    return same;
}

}  // namespace

TEST(KernelBuffersTest, RandomBytesLandInClosedBlocks) {
    const size_t n = 3 * 256 * 1024;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 3);
    const size_t at = 256 * 1024 - 1000, len = 300000;
    ASSERT_EQ(getrandom(p + at, len, 0), static_cast<ssize_t>(len)) << strerror(errno);
    EXPECT_LT(untouched(p, at, len, 3), len / 64) << "random bytes, not the device's pattern";
    EXPECT_EQ(untouched(p, 0, at, 3), at) << "bytes before the call's are kept";
    EXPECT_EQ(untouched(p, at + len, n - at - len, 3), n - at - len) << "bytes after it are kept";

    close_on_device(p, n, 4);
    ASSERT_EQ(getentropy(p + 5, 256), 0) << strerror(errno);
    EXPECT_LT(untouched(p, 5, 256, 4), 16u);
    EXPECT_EQ(untouched(p, 261, 1000, 4), 1000u);

    // Bad input gets the C library's answers, on shared memory as on any.
    errno = 0;
    EXPECT_EQ(getentropy(p, 257), -1);
    EXPECT_EQ(errno, EIO);
    errno = 0;
    EXPECT_EQ(getrandom(p, 16, ~0u), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(getrandom(p, 0, 0), 0);
    free(p);
}

TEST(KernelBuffersTest, ARequestLargerThanOneStagingRoundIsShortAsTheKernelsMayBe) {
    const size_t n = 6u << 20;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 5);
    ssize_t got = getrandom(p, n, 0);
    ASSERT_GT(got, 0) << strerror(errno);
    ASSERT_LE(static_cast<size_t>(got), n);
    EXPECT_LT(untouched(p, 0, static_cast<size_t>(got), 5), static_cast<size_t>(got) / 64);
    EXPECT_EQ(untouched(p, static_cast<size_t>(got), n - static_cast<size_t>(got), 5), n - static_cast<size_t>(got));
    free(p);
}

TEST(KernelBuffersTest, PollReadsAndFillsAnArrayTheDeviceWrote) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(write(fds[1], "x", 1), 1);
    // Inside a shared allocation, across a block's end: as many entries as
    // the descriptor limit lets poll take (more is EINVAL).
    struct rlimit files;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
    const size_t entries = std::min<size_t>(4096, files.rlim_cur);
    auto *p = static_cast<uint8_t *>(malloc(3 * kThreshold));
    ASSERT_TRUE(shared(p));
    auto *a = reinterpret_cast<struct pollfd *>(p + kThreshold - 512);
    static auto fill = adsm_test::device_kernel<device_pollfds>("interpose.device_pollfds");
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(round ? "ppoll" : "poll");
        fill(adsm::blocks_for(entries, 256), 256, a, entries, fds[0]);
        adsm::sync();
        struct timespec zero = {0, 0};
        int r = round ? ppoll(a, entries, &zero, nullptr) : poll(a, entries, 0);
        ASSERT_EQ(r, static_cast<int>(entries)) << strerror(errno);
        for (size_t i = 0; i < entries; ++i) {
            ASSERT_EQ(a[i].fd, fds[0]) << i;
            ASSERT_EQ(a[i].revents, POLLIN) << i;
        }
    }
    // An empty pipe: every entry's events come back cleared.
    char c;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
    fill(adsm::blocks_for(entries, 256), 256, a, entries, fds[0]);
    adsm::sync();
    ASSERT_EQ(poll(a, entries, 0), 0);
    for (size_t i = 0; i < entries; ++i) ASSERT_EQ(a[i].revents, 0) << i;
    close(fds[0]);
    close(fds[1]);
    free(p);
}

TEST(KernelBuffersTest, EpollWritesOnlyTheEventsItReturns) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    int ep = epoll_create1(0);
    ASSERT_GE(ep, 0);
    struct epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.u64 = 0x1234567890abcdefull;
    ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev), 0);
    ASSERT_EQ(write(fds[1], "x", 1), 1);
    const size_t bytes = 3 * kThreshold;
    auto *p = static_cast<uint8_t *>(malloc(bytes));
    ASSERT_TRUE(shared(p));
    const int max = static_cast<int>(bytes / sizeof(struct epoll_event));
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        close_on_device(p, bytes, static_cast<uint8_t>(10 + round));
        auto *events = reinterpret_cast<struct epoll_event *>(p);
        sigset_t none;
        sigemptyset(&none);
        struct timespec zero = {0, 0};
        int r = round == 0 ? epoll_wait(ep, events, max, 0)
                : round == 1 ? epoll_pwait(ep, events, max, 0, &none)
                             : epoll_pwait2(ep, events, max, &zero, &none);
        ASSERT_EQ(r, 1) << strerror(errno);
        EXPECT_EQ(events[0].events, static_cast<uint32_t>(EPOLLIN));
        EXPECT_EQ(events[0].data.u64, 0x1234567890abcdefull);
        size_t rest = bytes - sizeof(struct epoll_event);
        EXPECT_EQ(untouched(p, sizeof(struct epoll_event), rest, static_cast<uint8_t>(10 + round)), rest)
            << "entries past the events returned keep their bytes";
    }
    // A count the kernel refuses is refused as it is.
    errno = 0;
    EXPECT_EQ(epoll_wait(ep, reinterpret_cast<struct epoll_event *>(p), 0, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    close(ep);
    close(fds[0]);
    close(fds[1]);
    free(p);
}
