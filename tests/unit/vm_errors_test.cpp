// What the OS layer says when the kernel refuses: the error the kernel
// gave (a failed mapping was reported as EPERM whatever the cause), and,
// where the process has an address-space limit, that limit.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "os/vm.h"

TEST(VmErrorsTest, AFailedMappingKeepsTheKernelsError) {
    errno = 0;
    EXPECT_EQ(adsm::os::map_shared(-1, 0, 4096, PROT_READ), MAP_FAILED);
    EXPECT_EQ(errno, EBADF);
    const int fd = adsm::os::memfd_sized("vm-errors-test", 4096);
    ASSERT_GE(fd, 0);
    errno = 0;
    EXPECT_EQ(adsm::os::map_shared(fd, 0, 0, PROT_READ), MAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    close(fd);
    EXPECT_EQ(adsm::os::address_limit_note(EBADF), "");
}

// In a child: a 64 GiB mapping under a 1 GiB limit is ENOMEM, and the note
// names the limit.
TEST(VmErrorsTest, AnAddressSpaceLimitIsNamed) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        struct rlimit r = {1ull << 30, 1ull << 30};
        if (setrlimit(RLIMIT_AS, &r) != 0) _exit(10);
        int fd = adsm::os::memfd_sized("vm-errors-test", 64ull << 30);
        if (fd < 0) _exit(11);
        errno = 0;
        if (adsm::os::map_shared(fd, 0, 64ull << 30, PROT_NONE) != MAP_FAILED) _exit(12);
        if (errno != ENOMEM) _exit(13);
        const std::string note = adsm::os::address_limit_note(ENOMEM);
        if (note.find("1024 MiB") == std::string::npos || note.find("ulimit -v") == std::string::npos) _exit(14);
        _exit(0);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "13: the mapping's error was not ENOMEM; 14: the note does not name the limit";
}

// The room left under a limit: the limit less what the process maps now,
// where a mapping of that room less a little then fits, and one of a
// little more does not.  Without a limit, no bound.
TEST(VmErrorsTest, TheRoomUnderAnAddressSpaceLimit) {
    struct rlimit now;
    ASSERT_EQ(getrlimit(RLIMIT_AS, &now), 0);
    if (now.rlim_cur == RLIM_INFINITY) {
        EXPECT_EQ(adsm::os::address_room(), UINT64_MAX);
    }
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // A GiB more than the child maps now (which a sanitizer's shadow
        // makes terabytes).
        FILE *statm = fopen("/proc/self/statm", "r");
        unsigned long long pages = 0;
        if (!statm || fscanf(statm, "%llu", &pages) != 1) _exit(9);
        fclose(statm);
        const uint64_t limit = pages * 4096 + (1ull << 30);
        struct rlimit r = {limit, limit};
        if (setrlimit(RLIMIT_AS, &r) != 0) _exit(10);
        const uint64_t room = adsm::os::address_room();
        if (room < (1ull << 29) || room > (1ull << 30)) _exit(11);
        const uint64_t slack = 16u << 20;
        void *p = mmap(nullptr, room - slack, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) _exit(12);
        munmap(p, room - slack);
        if (mmap(nullptr, room + slack, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED)
            _exit(13);
        _exit(0);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "11: not about the GiB left; 12: the room did not fit; 13: more than the room fit";
}
