// ioctl's and fcntl's structures in a shared buffer whose blocks are
// closed (their data on the device): the kernel finds them open, reads the
// program's values and writes its own there, and nothing else changes.
// (The kernel alone failed each of these with EFAULT.)
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>

#include "helpers.h"

using namespace interpose_test;

TEST(KernelControlsTest, IoctlStructuresInClosedBlocksReachTheKernel) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    // A number that says nothing of its argument, listed: FIONREAD.
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(write(fds[1], "five!", 5), 5);
    auto *pending = b.at_block_end<int>();
    EXPECT_EQ(ioctl(fds[0], FIONREAD, pending), 0) << strerror(errno);
    EXPECT_EQ(*pending, 5);
    EXPECT_TRUE(b.kept_outside(pending, sizeof *pending));
    close(fds[0]);
    close(fds[1]);

    int master = posix_openpt(O_RDWR | O_NOCTTY);
    ASSERT_GE(master, 0) << strerror(errno);
    ASSERT_EQ(grantpt(master), 0);
    ASSERT_EQ(unlockpt(master), 0);
    // A number that encodes its argument's size and direction: TIOCGPTN.
    unsigned int own = 0;
    ASSERT_EQ(ioctl(master, TIOCGPTN, &own), 0);
    b.close();
    auto *number = b.at_block_end<unsigned int>();
    EXPECT_EQ(ioctl(master, TIOCGPTN, number), 0) << strerror(errno);
    EXPECT_EQ(*number, own);
    EXPECT_TRUE(b.kept_outside(number, sizeof *number));

    // Read by the kernel from a closed block, then written into another.
    b.close();
    auto *size = reinterpret_cast<struct winsize *>(b.p + 2 * kThreshold - 2);
    *size = {};
    size->ws_row = 37;
    size->ws_col = 101;
    b.keep_on_device();
    EXPECT_EQ(ioctl(master, TIOCSWINSZ, size), 0) << strerror(errno);
    b.close();
    auto *got = b.at_block_end<struct winsize>();
    EXPECT_EQ(ioctl(master, TIOCGWINSZ, got), 0) << strerror(errno);
    EXPECT_EQ(got->ws_row, 37);
    EXPECT_EQ(got->ws_col, 101);
    EXPECT_TRUE(b.kept_outside(got, sizeof *got));

    // The terminal's settings, in the kernel's own layout.
    unsigned char mine[64] = {}, theirs[64] = {};
    ASSERT_EQ(ioctl(master, TCGETS, mine), 0);
    b.close();
    EXPECT_EQ(ioctl(master, TCGETS, b.p + kThreshold - 8), 0) << strerror(errno);
    memcpy(theirs, b.p + kThreshold - 8, sizeof theirs);
    EXPECT_EQ(memcmp(mine, theirs, 36), 0);
    close(master);

    // Not listed: the network interfaces' struct ifreq, here the name of
    // interface 1 (the loopback device).
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(s, 0);
    struct ifreq own_req = {};
    own_req.ifr_ifindex = 1;
    ASSERT_EQ(ioctl(s, SIOCGIFNAME, &own_req), 0) << strerror(errno);
    b.close();
    auto *req = b.at_block_end<struct ifreq>();
    memset(req, 0, sizeof *req);
    req->ifr_ifindex = 1;
    b.keep_on_device();
    EXPECT_EQ(ioctl(s, SIOCGIFNAME, req), 0) << strerror(errno);
    EXPECT_STREQ(req->ifr_name, own_req.ifr_name);
    close(s);
}

TEST(KernelControlsTest, FcntlLocksInClosedBlocksReachTheKernel) {
    char path[] = "/tmp/adsm-kernel-controls-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "sixteen bytes!!!", 16), 16);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *lock = b.at_block_end<struct flock>();
    memset(lock, 0, sizeof *lock);
    lock->l_type = F_WRLCK;
    lock->l_whence = SEEK_SET;
    lock->l_len = 8;
    b.keep_on_device();
    EXPECT_EQ(fcntl(fd, F_SETLK, lock), 0) << strerror(errno);
    EXPECT_TRUE(b.kept_outside(lock, sizeof *lock));
    // Another open file description asks about the whole file: the first
    // 8 bytes are locked (by this process, through the other description).
    int other = open(path, O_RDWR);
    ASSERT_GE(other, 0);
    b.close();
    auto *query = reinterpret_cast<struct flock *>(b.p + 2 * kThreshold - 8);
    memset(query, 0, sizeof *query);
    query->l_type = F_WRLCK;
    query->l_whence = SEEK_SET;
    b.keep_on_device();
    EXPECT_EQ(fcntl(other, F_OFD_GETLK, query), 0) << strerror(errno);
    EXPECT_EQ(query->l_type, F_WRLCK);
    EXPECT_EQ(query->l_start, 0);
    EXPECT_EQ(query->l_len, 8);
    EXPECT_TRUE(b.kept_outside(query, sizeof *query));
    // Released from a closed block: nothing is locked any more.
    b.close();
    lock = b.at_block_end<struct flock>();
    memset(lock, 0, sizeof *lock);
    lock->l_type = F_UNLCK;
    lock->l_whence = SEEK_SET;
    b.keep_on_device();
    EXPECT_EQ(fcntl(fd, F_SETLK, lock), 0) << strerror(errno);
    struct flock now = {};
    now.l_type = F_WRLCK;
    now.l_whence = SEEK_SET;
    ASSERT_EQ(fcntl(other, F_OFD_GETLK, &now), 0);
    EXPECT_EQ(now.l_type, F_UNLCK);
    close(other);
    close(fd);
    unlink(path);
}
