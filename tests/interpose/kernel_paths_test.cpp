// Calls that take path names, with the paths in a shared buffer whose
// blocks are closed (their data on the device): each works as with the path
// anywhere else (the kernel alone would fail it with EFAULT), and answers
// the kernel writes (readlink, getcwd) land there with nothing else
// changed.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "helpers.h"
#include "os/fault_injection.h"

using namespace interpose_test;

namespace {

// A temporary directory, and names in it written into a closed buffer where
// a path spans two blocks (slots 1 and 2) or lies inside one (slot 0).
struct ClosedPaths {
    ClosedBuffer b;
    std::string dir;
    ClosedPaths() {
        char t[] = "/tmp/adsm-kernel-paths-XXXXXX";
        dir = mkdtemp(t);
    }
    ~ClosedPaths() { rmdir(dir.c_str()); }
    std::string plain(const std::string &name) const { return dir + "/" + name; }
    // The path of name at a slot; every block then closed, the bytes kept.
    const char *put(const std::string &name, int slot) {
        const std::string s = plain(name);
        const size_t at = slot == 0 ? kThreshold / 2 : slot * kThreshold - s.size() / 2;
        char *p = reinterpret_cast<char *>(b.p) + at;
        memcpy(p, s.c_str(), s.size() + 1);
        close();
        return p;
    }
    void close() { b.keep_on_device(); }
};

bool exists(const std::string &path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

off_t size_of(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

}  // namespace

TEST(KernelPathsTest, FilesAreMadeFoundAndRemovedThroughPathsInClosedBlocks) {
    ClosedPaths t;
    ASSERT_TRUE(shared(t.b.p));

    const char *f = t.put("file", 1);
    int fd = open(f, O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(::write(fd, "abc", 3), 3);
    ::close(fd);
    EXPECT_EQ(size_of(t.plain("file")), 3);

    t.close();
    EXPECT_EQ(access(f, R_OK | W_OK), 0) << strerror(errno);
    t.close();
    struct stat st;
    ASSERT_EQ(stat(f, &st), 0) << strerror(errno);
    EXPECT_EQ(st.st_size, 3);
    t.close();
    ASSERT_EQ(truncate(f, 10), 0) << strerror(errno);
    EXPECT_EQ(size_of(t.plain("file")), 10);
    t.close();
    ASSERT_EQ(chmod(f, 0640), 0) << strerror(errno);
    ASSERT_EQ(stat(t.plain("file").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u);
    t.close();
    const struct timespec times[2] = {{1000, 0}, {2000, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, f, times, 0), 0) << strerror(errno);
    ASSERT_EQ(stat(t.plain("file").c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, 2000);
    t.close();
    FILE *stream = fopen(f, "r");
    ASSERT_NE(stream, nullptr) << strerror(errno);
    fclose(stream);
    t.close();
    fd = openat(AT_FDCWD, f, O_RDONLY);
    ASSERT_GE(fd, 0) << strerror(errno);
    ::close(fd);

    // Two paths in closed blocks at once.
    const char *g = t.put("moved", 2);
    ASSERT_EQ(rename(f, g), 0) << strerror(errno);
    EXPECT_FALSE(exists(t.plain("file")));
    EXPECT_EQ(size_of(t.plain("moved")), 10);
    t.close();
    ASSERT_EQ(link(g, f), 0) << strerror(errno);
    EXPECT_EQ(size_of(t.plain("file")), 10);
    const char *l = t.put("link", 0);
    ASSERT_EQ(symlink(g, l), 0) << strerror(errno);
    char target[PATH_MAX] = {};
    ASSERT_GT(readlink(t.plain("link").c_str(), target, sizeof target - 1), 0);
    EXPECT_EQ(std::string(target), t.plain("moved"));

    t.close();
    ASSERT_EQ(unlink(l), 0) << strerror(errno);
    t.close();
    ASSERT_EQ(remove(g), 0) << strerror(errno);
    t.close();
    ASSERT_EQ(unlinkat(AT_FDCWD, f, 0), 0) << strerror(errno);
    EXPECT_FALSE(exists(t.plain("link")));
    EXPECT_FALSE(exists(t.plain("moved")));
    EXPECT_FALSE(exists(t.plain("file")));

    const char *fifo = t.put("fifo", 2);
    ASSERT_EQ(mkfifo(fifo, 0600), 0) << strerror(errno);
    ASSERT_EQ(lstat(t.plain("fifo").c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    t.close();
    ASSERT_EQ(unlink(fifo), 0) << strerror(errno);
}

TEST(KernelPathsTest, DirectoriesAreMadeEnteredAndRemovedThroughPathsInClosedBlocks) {
    ClosedPaths t;
    const char *d = t.put("sub", 1);
    ASSERT_EQ(mkdir(d, 0700), 0) << strerror(errno);
    t.close();
    DIR *dir = opendir(d);
    ASSERT_NE(dir, nullptr) << strerror(errno);
    closedir(dir);

    char was[PATH_MAX];
    ASSERT_NE(getcwd(was, sizeof was), nullptr);
    t.close();
    ASSERT_EQ(chdir(d), 0) << strerror(errno);
    char now[PATH_MAX];
    ASSERT_NE(getcwd(now, sizeof now), nullptr);
    ASSERT_EQ(chdir(was), 0);
    char real[PATH_MAX];
    ASSERT_NE(realpath(t.plain("sub").c_str(), real), nullptr);
    EXPECT_EQ(std::string(now), std::string(real));

    t.close();
    ASSERT_EQ(rmdir(d), 0) << strerror(errno);
    EXPECT_FALSE(exists(t.plain("sub")));
}

TEST(KernelPathsTest, AnswersTheKernelWritesLandInClosedBlocks) {
    ClosedPaths t;
    const std::string link = t.plain("link");
    ASSERT_EQ(symlink("/some/where/else", link.c_str()), 0);

    t.b.close();
    char *out = t.b.at_block_end<char[16]>()[0];
    ASSERT_EQ(readlink(link.c_str(), out, 16), 16);
    EXPECT_EQ(std::string(out, 16), "/some/where/else");
    EXPECT_TRUE(t.b.kept_outside(out, 16));
    // A buffer shorter than the target gets its first bytes, as anywhere.
    t.b.close();
    ASSERT_EQ(readlink(link.c_str(), out, 5), 5);
    EXPECT_EQ(std::string(out, 5), "/some");
    EXPECT_TRUE(t.b.kept_outside(out, 5));
    ASSERT_EQ(unlink(link.c_str()), 0);

    char here[PATH_MAX];
    ASSERT_NE(getcwd(here, sizeof here), nullptr);
    const size_t n = strlen(here) + 1;
    t.b.close();
    char *cwd = reinterpret_cast<char *>(t.b.p) + kThreshold - n / 2;
    ASSERT_EQ(getcwd(cwd, 2 * n), cwd) << strerror(errno);
    EXPECT_EQ(std::string(cwd), std::string(here));
    EXPECT_TRUE(t.b.kept_outside(cwd, n));
    // Too short a buffer: ERANGE, and nothing written.
    t.b.close();
    errno = 0;
    EXPECT_EQ(getcwd(cwd, n - 1), nullptr);
    EXPECT_EQ(errno, ERANGE);
    EXPECT_TRUE(t.b.kept_outside(cwd, 0));
}

TEST(KernelPathsTest, APathIsReadUpToTheKernelsLimit) {
    ClosedPaths t;
    // "/././.../" of PATH_MAX - 1 bytes names the root: the longest path
    // the kernel takes (its zero the PATH_MAX-th byte, in the second page).
    char *p = reinterpret_cast<char *>(t.b.p) + 100;
    p[0] = '/';
    for (size_t i = 1; i < PATH_MAX - 1; ++i) p[i] = i % 2 ? '.' : '/';
    p[PATH_MAX - 1] = 0;
    t.close();
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    EXPECT_GE(fd, 0) << strerror(errno);
    if (fd >= 0) ::close(fd);
    // One byte more, and no zero within PATH_MAX: too long.
    p[PATH_MAX - 1] = '.';
    p[PATH_MAX] = 0;
    t.close();
    errno = 0;
    EXPECT_EQ(open(p, O_RDONLY | O_DIRECTORY), -1);
    EXPECT_EQ(errno, ENAMETOOLONG);
}

TEST(KernelPathsTest, APathThatCannotBeReadFailsTheCallAndMakesNothing) {
    namespace inj = adsm::os::injection;
    // (Batch reads the host copy, which cannot fail.)
    const bool can_fail = protocol_in_use() != "batch";
    ClosedPaths t;
    const char *d = t.put("never", 1);
    inj::arm(inj::Site::device_copy, 1);
    errno = 0;
    int r = mkdir(d, 0700);
    int err = errno;
    inj::arm(inj::Site::device_copy, 0);
    if (can_fail) {
        EXPECT_EQ(r, -1);
        EXPECT_EQ(err, EFAULT);
        EXPECT_FALSE(exists(t.plain("never")));
    } else {
        EXPECT_EQ(r, 0) << strerror(err);
    }
    // The memory stays usable.
    t.close();
    rmdir(t.plain("never").c_str());
    ASSERT_EQ(mkdir(d, 0700), 0) << strerror(errno);
    ASSERT_EQ(rmdir(d), 0);
}
