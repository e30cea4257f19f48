// Whether the kernel may write a page of this process: a read from a pipe
// into it fails with EFAULT where it may not.  Tells a page's protection
// without taking a fault in the test (whose handler the runtime may own).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

inline bool kernel_may_write(uint8_t *page) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    EXPECT_EQ(write(fds[1], "x", 1), 1);
    ssize_t n = read(fds[0], page, 1);
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    EXPECT_TRUE(n == 1 || e == EFAULT);
    return n == 1;
}
