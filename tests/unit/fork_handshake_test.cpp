// The forking thread's wait for its child's copy of the shared objects
// (os/fork_handshake.h): it lasts until the child says its copy is done or
// ends, and no longer than a second or two once the child is held stopped,
// before it said who it is or during its copy.  Each parent's wait runs
// under a watchdog that ends the child after 10 s (the wait then ends too).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "os/fork_handshake.h"

namespace {

using adsm::os::ForkHandshake;
using Clock = std::chrono::steady_clock;

struct Waited {
    ForkHandshake::Wait how;
    double seconds;
    bool killed;  // by the watchdog
};

// Prepares a handshake, runs `before` (with the pipe made), forks a child
// that runs `child_side` and ends, and waits as the forking thread does in
// the runtime's handler, under the watchdog; the child is gone after.
Waited fork_and_wait(const std::function<void(ForkHandshake &)> &child_side,
                     const std::function<void()> &before = [] {}) {
    ForkHandshake h;
    h.prepare();
    before();
    pid_t child = fork();
    if (child == 0) {
        child_side(h);
        _exit(0);
    }
    if (child < 0) return {ForkHandshake::Wait::done, 0, true};
    std::atomic<bool> over{false}, killed{false};
    std::thread watchdog([&] {
        for (int i = 0; i < 1000 && !over.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!over.load()) {
            killed = true;
            kill(child, SIGKILL);
        }
    });
    const auto t0 = Clock::now();
    ForkHandshake::Wait how = h.parent_wait();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    over = true;
    watchdog.join();
    kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    return {how, s, killed.load()};
}

}  // namespace

TEST(ForkHandshakeTest, TheParentWaitsUntilItsChildHasCopied) {
    Waited w = fork_and_wait([](ForkHandshake &h) {
        h.child_started();
        usleep(300 * 1000);  // the copy
        h.child_done();
        pause();
    });
    EXPECT_FALSE(w.killed);
    EXPECT_EQ(w.how, ForkHandshake::Wait::done);
    EXPECT_GE(w.seconds, 0.29) << "the parent went on before its child's copy was done";
    EXPECT_LT(w.seconds, 5.0);
}

TEST(ForkHandshakeTest, AChildThatEndsBeforeItIsDoneLetsItsParentGo) {
    Waited w = fork_and_wait([](ForkHandshake &h) { h.child_started(); });
    EXPECT_FALSE(w.killed);
    EXPECT_EQ(w.how, ForkHandshake::Wait::done);
    EXPECT_LT(w.seconds, 5.0);
}

TEST(ForkHandshakeTest, AChildStoppedDuringItsCopyLetsItsParentGo) {
    Waited w = fork_and_wait([](ForkHandshake &h) {
        h.child_started();
        raise(SIGSTOP);  // as a debugger holding the child would
        h.child_done();
    });
    EXPECT_FALSE(w.killed) << "the parent waited for a stopped child";
    EXPECT_EQ(w.how, ForkHandshake::Wait::stopped);
    EXPECT_LT(w.seconds, 5.0);
}

TEST(ForkHandshakeTest, AChildStoppedBeforeItSaidWhoItIsLetsItsParentGo) {
    Waited w = fork_and_wait([](ForkHandshake &h) {
        raise(SIGSTOP);  // an earlier fork handler's, say
        h.child_started();
        h.child_done();
    });
    EXPECT_FALSE(w.killed) << "the parent waited for a stopped child";
    EXPECT_EQ(w.how, ForkHandshake::Wait::stopped);
    EXPECT_LT(w.seconds, 5.0);
}

TEST(ForkHandshakeTest, WithoutAPipeNothingWaits) {
    ForkHandshake h;  // never prepared: the parent and child sides do nothing
    h.child_started();
    h.child_done();
    EXPECT_EQ(h.parent_wait(), ForkHandshake::Wait::done);
}

// Another thread's child, forked while this pipe existed, holds it open
// (close-on-exec closes it only at an exec): a child that ends without
// saying it is done still lets its parent go at once, through its pidfd,
// not when the other child lets go of the pipe.
TEST(ForkHandshakeTest, AChildThatEndsWithoutSayingSoLetsItsParentGoWhileAnotherHoldsThePipe) {
    pid_t holder = -1;
    Waited w = fork_and_wait([](ForkHandshake &h) { h.child_started(); },
                             [&holder] {
                                 std::thread([&holder] {
                                     holder = fork();
                                     if (holder == 0) {
                                         usleep(20 * 1000 * 1000);  // (killed below)
                                         _exit(0);
                                     }
                                 }).join();
                             });
    ASSERT_GT(holder, 0);
    kill(holder, SIGKILL);
    int st = 0;
    waitpid(holder, &st, 0);
    EXPECT_FALSE(w.killed);
    EXPECT_EQ(w.how, ForkHandshake::Wait::done);
    EXPECT_LT(w.seconds, 10.0) << "the parent waited for the other child to let go of the pipe";
}
