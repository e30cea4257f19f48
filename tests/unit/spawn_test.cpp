// Starting a helper process (os::spawn_detached): what the helper starts
// with, and that the children that share the host's memory on the way call
// the kernel only, never a C library function another library may
// interpose (libc_spy.c counts those).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "os/spawn.h"

extern "C" int libc_spy_watch_children(void);
extern "C" int libc_spy_child_calls(void);
extern "C" int libc_spy_clone_calls(void);

namespace {

void noop_handler(int) {}

// Runs `script` under /bin/sh as a detached helper, with the write end of a
// pipe kept as its descriptor `out`, and returns what it wrote there.
std::string helper_output(const std::string &script_with_out) {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    std::string script = script_with_out;
    for (size_t at; (at = script.find("OUT")) != std::string::npos;) script.replace(at, 3, std::to_string(fds[1]));
    char sh[] = "/bin/sh", c[] = "-c";
    char *argv[] = {sh, c, script.data(), nullptr};
    char *envp[] = {nullptr};
    pid_t pid = 0;
    int r = adsm::os::spawn_detached("/bin/sh", argv, envp, &fds[1], 1, &pid);
    close(fds[1]);
    EXPECT_EQ(r, 0);
    EXPECT_GT(pid, 0);
    std::string out;
    char buf[256];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    return out;
}

TEST(SpawnTest, TheHelperStartsWithNoMaskDevNullInAndOnlyTheDescriptorsKept) {
    struct sigaction sa = {};
    sa.sa_handler = noop_handler;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    sigset_t usr2, old;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr2, &old), 0);
    // A descriptor the host did not mark close-on-exec and did not keep.
    int stray = open("/dev/zero", O_RDONLY);
    ASSERT_GE(stray, 0);
    ASSERT_EQ(dup2(stray, 57), 57);
    std::string out = helper_output(
        "readlink /proc/$$/fd/0 >&OUT; [ -e /proc/$$/fd/57 ] && echo fd57 >&OUT; "
        // (The shell blocks signals while it waits for a command: its exec
        // shows the mask it was started with.)
        "exec grep ^SigBlk: /proc/self/status >&OUT");
    EXPECT_EQ(out, "/dev/null\nSigBlk:\t0000000000000000\n");
    close(57);
    close(stray);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    signal(SIGUSR1, SIG_DFL);
}

TEST(SpawnTest, TheChildrenSharingOurMemoryCallNothingAnotherLibraryInterposes) {
    // A caught signal and a descriptor to close: the calls the children make.
    struct sigaction sa = {};
    sa.sa_handler = noop_handler;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    int before = libc_spy_watch_children(), clones_before = libc_spy_clone_calls();
    EXPECT_EQ(helper_output("echo ran >&OUT"), "ran\n");
    EXPECT_EQ(libc_spy_child_calls(), before);
#if defined(__x86_64__)
    // (Elsewhere the children start through the C library's clone.)
    EXPECT_EQ(libc_spy_clone_calls(), clones_before);
#endif
    // And the host's handler is still the host's, in the kernel and in what
    // the interposer was told.
    struct sigaction now = {};
    ASSERT_EQ(sigaction(SIGUSR1, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, &noop_handler);
    signal(SIGUSR1, SIG_DFL);
}

TEST(SpawnTest, AProgramThatCannotRunIsAnError) {
    char prog[] = "/nonexistent/adsm-helper";
    char *argv[] = {prog, nullptr};
    char *envp[] = {nullptr};
    pid_t pid = 0;
    EXPECT_EQ(adsm::os::spawn_detached(prog, argv, envp, nullptr, 0, &pid), -ENOENT);
}

// A helper is ended through a descriptor of its own: a signal sent by it
// once the helper is gone reaches nobody, whoever has its pid by then.
TEST(SpawnTest, ASignalByPidfdReachesThatProcessOrNone) {
    char sh[] = "/bin/sh", c[] = "-c", script[] = "exec sleep 600";  // (one process: the one killed)
    char *argv[] = {sh, c, script, nullptr};
    char *envp[] = {nullptr};
    pid_t pid = 0;
    // Adopted by this test, so that it can reap it and be sure it is gone.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ASSERT_EQ(adsm::os::spawn_detached(sh, argv, envp, nullptr, 0, &pid), 0);
    // Whatever fails below, the helper (which holds ctest's output open)
    // does not outlive the test.
    // (Our child until reaped: its pid names no other process till then.)
    struct Reaper {
        pid_t pid;
        bool reaped = false;
        ~Reaper() {
            if (!reaped && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
            prctl(PR_SET_CHILD_SUBREAPER, 0);
        }
    } reaper{pid};
    int fd = adsm::os::pidfd_of(pid);
    ASSERT_GE(fd, 0) << strerror(-fd);
    EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(adsm::os::pidfd_kill(fd, SIGKILL), 0);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    reaper.reaped = true;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    EXPECT_EQ(adsm::os::pidfd_kill(fd, SIGKILL), -ESRCH);
    close(fd);
    EXPECT_LT(adsm::os::pidfd_of(-1), 0);
}

}  // namespace
