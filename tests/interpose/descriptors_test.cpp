// The runtime's own descriptors (os/held_fds.h) out of the program's way:
// numbered high, not closed by close, close_range or closefrom, not
// replaced by dup2 or dup3, by name or by number; shared memory, kernels
// and fork work after a program closed everything it could.
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <vector>

#include "helpers.h"
#include "os/held_fds.h"

using namespace interpose_test;

namespace {

std::vector<int> held() {
    int fds[64];
    const int n = adsm::os::held_in(0, INT_MAX, fds, 64);
    return std::vector<int>(fds, fds + n);
}

bool open_fd(int fd) { return fcntl(fd, F_GETFD) >= 0; }

// A shared buffer the device wrote and the runtime's device process
// started, so that every kind of descriptor the runtime holds is there.
struct Started {
    uint8_t *p = static_cast<uint8_t *>(malloc(2 * kThreshold));
    Started() { close_on_device(p, 2 * kThreshold, 3); }
    ~Started() { free(p); }
};

// After the program closed what it could: the device still runs kernels,
// the CPU reads what they wrote, and a fork child gets its own copy.
void shared_memory_still_works() {
    auto *p = static_cast<uint8_t *>(malloc(2 * kThreshold));
    ASSERT_TRUE(shared(p));
    close_on_device(p, 2 * kThreshold, 5);
    add_on_device(p, 2 * kThreshold, 1);
    for (size_t i = 0; i < 2 * kThreshold; i += 997) ASSERT_EQ(p[i], static_cast<uint8_t>(pattern(i, 5) + 1)) << i;
    memset(p + kThreshold, 7, kThreshold);
    pid_t pid = fork();
    if (pid == 0) {
        int code = p[0] == static_cast<uint8_t>(pattern(0, 5) + 1) ? 0 : 1;
        memset(p, 9, 2 * kThreshold);
        _exit(code);
    }
    ASSERT_GT(pid, 0);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the child did not find the device's data (status " << st << ")";
    EXPECT_EQ(p[kThreshold + 1], 7) << "the child wrote into its parent's memory";
    free(p);
}

}  // namespace

TEST(DescriptorsTest, TheRuntimesLieAboveTheProgramsOwn) {
    Started s;
    const std::vector<int> fds = held();
    const adsmDeviceInfo info = device_info();
    if (std::string(info.name) == "sim") {
        ASSERT_GE(fds.size(), 3u) << "the host mirror, the device's memory and its channel at least";
    } else {
        ASSERT_GE(fds.size(), 1u) << "the host mirror at least (" << info.name << ")";
    }
    int mine = open("/dev/null", O_RDONLY);
    ASSERT_GE(mine, 0);
    for (int fd : fds) {
        EXPECT_GT(fd, mine) << "a program's next descriptor comes after the runtime's " << fd;
        EXPECT_TRUE(open_fd(fd));
        EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << fd;
    }
    close(mine);
}

TEST(DescriptorsTest, CloseAndDupOntoThemAreRefused) {
    Started s;
    int null = open("/dev/null", O_RDONLY);
    ASSERT_GE(null, 0);
    for (int fd : held()) {
        SCOPED_TRACE(fd);
        errno = 0;
        EXPECT_EQ(close(fd), -1);
        EXPECT_EQ(errno, EBADF);
        errno = 0;
        EXPECT_EQ(syscall(SYS_close, fd), -1);
        EXPECT_EQ(errno, EBADF);
        errno = 0;
        EXPECT_EQ(dup2(null, fd), -1);
        EXPECT_EQ(errno, EBADF);
        errno = 0;
        EXPECT_EQ(dup3(null, fd, O_CLOEXEC), -1);
        EXPECT_EQ(errno, EBADF);
        errno = 0;
        EXPECT_EQ(syscall(SYS_dup3, null, fd, 0), -1);
        EXPECT_EQ(errno, EBADF);
        EXPECT_TRUE(open_fd(fd));
        struct stat st;
        ASSERT_EQ(fstat(fd, &st), 0);
        EXPECT_FALSE(S_ISCHR(st.st_mode)) << "/dev/null took the runtime's place";
    }
    // The program's own, and a number that is the program's to take, as before.
    int spare = fcntl(null, F_DUPFD, 0);
    ASSERT_GE(spare, 0);
    EXPECT_EQ(dup2(null, spare), spare);
    EXPECT_EQ(close(spare), 0);
    EXPECT_FALSE(open_fd(spare));
    EXPECT_EQ(close(null), 0);
    shared_memory_still_works();
}

// Descriptors of the program's made on every free number around the
// runtime's, then every way of closing a range: the program's go, the
// runtime's stay.
TEST(DescriptorsTest, ARangeClosesAroundThem) {
    Started s;
    const std::vector<int> fds = held();
    ASSERT_FALSE(fds.empty());
    const int lo = fds.front() - 2, hi = fds.back() + 2;
    ASSERT_GT(lo, 2);
    for (int way = 0; way < 4; ++way) {
        SCOPED_TRACE(way == 0 ? "close_range" : way == 1 ? "SYS_close_range" : way == 2 ? "closefrom" : "CLOEXEC");
        int null = open("/dev/null", O_RDONLY);
        ASSERT_GE(null, 0);
        std::vector<int> mine;
        for (int fd = lo; fd <= hi; ++fd) {
            if (adsm::os::is_held(fd)) continue;
            ASSERT_FALSE(open_fd(fd)) << fd << " is in use: pick other numbers";
            ASSERT_EQ(dup2(null, fd), fd);
            mine.push_back(fd);
        }
        close(null);
        switch (way) {
        case 0: EXPECT_EQ(close_range(lo, hi, 0), 0); break;
        case 1: EXPECT_EQ(syscall(SYS_close_range, lo, hi, 0), 0); break;
        case 2: closefrom(lo); break;
        default: EXPECT_EQ(close_range(lo, hi, CLOSE_RANGE_CLOEXEC), 0); break;
        }
        for (int fd : mine) {
            if (way < 3) {
                EXPECT_FALSE(open_fd(fd)) << fd;
            } else {
                EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC) << fd;
                close(fd);
            }
        }
        for (int fd : fds) EXPECT_TRUE(open_fd(fd)) << "the runtime's " << fd << " was closed";
    }
    shared_memory_still_works();
}
