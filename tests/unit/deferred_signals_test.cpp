// Holding back the program's asynchronous signals (os/deferred_signals.h):
// what the program sees of its own actions, and delivery after the
// critical section with nothing lost or changed.
#include "os/deferred_signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>

#include "os/real_libc.h"

namespace {

std::atomic<int> g_runs{0};
std::atomic<int> g_last_value{0};
std::atomic<int> g_last_code{0};
std::atomic<int> g_depth_seen{-1};

void on_info(int, siginfo_t *info, void *) {
    g_runs.fetch_add(1);
    g_last_value.store(info->si_value.sival_int);
    g_last_code.store(info->si_code);
    g_depth_seen.store(static_cast<int>(adsm::os::tls_deferral.depth));
}

void on_plain(int) { g_runs.fetch_add(1); }

void reset() {
    g_runs = 0;
    g_last_value = 0;
    g_last_code = 0;
    g_depth_seen = -1;
}

struct Restore {
    int sig;
    struct sigaction old;
    explicit Restore(int s) : sig(s) { sigaction(sig, nullptr, &old); }
    ~Restore() { sigaction(sig, &old, nullptr); }
};

// The program installs on_info (SA_SIGINFO) with `flags`.
int install_info(int sig, int flags) {
    struct sigaction sa = {};
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, nullptr);
}

void queue_to_self(int sig, int value) {
    union sigval v;
    v.sival_int = value;
    ASSERT_EQ(pthread_sigqueue(pthread_self(), sig, v), 0);
}

}  // namespace

TEST(DeferredSignalsTest, TheProgramSeesItsOwnActionAndTheKernelRunsTheTrampoline) {
    Restore r(SIGUSR2);
    struct sigaction sa = {};
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGHUP);
    ASSERT_EQ(sigaction(SIGUSR2, &sa, nullptr), 0);

    struct sigaction seen = {};
    ASSERT_EQ(sigaction(SIGUSR2, nullptr, &seen), 0);
    EXPECT_EQ(seen.sa_sigaction, on_info);
    EXPECT_EQ(seen.sa_flags & (SA_SIGINFO | SA_RESTART | SA_RESETHAND), SA_SIGINFO | SA_RESTART | SA_RESETHAND);
    EXPECT_EQ(sigismember(&seen.sa_mask, SIGHUP), 1);

    struct sigaction kernel = {};
    ASSERT_EQ(adsm::os::real_sigaction(SIGUSR2, nullptr, &kernel), 0);
    EXPECT_NE(kernel.sa_sigaction, on_info);
    EXPECT_EQ(kernel.sa_flags & SA_RESETHAND, 0);
    EXPECT_EQ(sigismember(&kernel.sa_mask, SIGHUP), 1);  // the program's mask still applies

    // signal() reports the handler before it, as the program installed it.
    EXPECT_EQ(reinterpret_cast<void *>(signal(SIGUSR2, on_plain)), reinterpret_cast<void *>(on_info));
    EXPECT_EQ(signal(SIGUSR2, SIG_DFL), on_plain);
    ASSERT_EQ(adsm::os::real_sigaction(SIGUSR2, nullptr, &kernel), 0);
    EXPECT_EQ(kernel.sa_handler, SIG_DFL);
}

TEST(DeferredSignalsTest, OutsideACriticalSectionTheHandlerRunsAtOnce) {
    Restore r(SIGUSR2);
    reset();
    ASSERT_EQ(install_info(SIGUSR2, 0), 0);
    queue_to_self(SIGUSR2, 41);
    EXPECT_EQ(g_runs.load(), 1);
    EXPECT_EQ(g_last_value.load(), 41);
}

TEST(DeferredSignalsTest, InsideACriticalSectionTheHandlerRunsAtItsEndWithTheSameSiginfo) {
    Restore r(SIGUSR2);
    reset();
    ASSERT_EQ(install_info(SIGUSR2, SA_NODEFER), 0);  // NODEFER must not make it recurse
    {
        adsm::os::DeferredSignals outer;
        {
            adsm::os::DeferredSignals inner;
            queue_to_self(SIGUSR2, 7);
            EXPECT_EQ(g_runs.load(), 0);
        }
        EXPECT_EQ(g_runs.load(), 0);  // still inside the outer section
    }
    EXPECT_EQ(g_runs.load(), 1);
    EXPECT_EQ(g_last_value.load(), 7);
    EXPECT_EQ(g_last_code.load(), SI_QUEUE);
    EXPECT_EQ(g_depth_seen.load(), 0);
    // The signal is open again afterwards.
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    EXPECT_EQ(sigismember(&mask, SIGUSR2), 0);
}

TEST(DeferredSignalsTest, RealTimeSignalsHeldBackKeepTheirQueue) {
    const int sig = SIGRTMIN + 3;
    Restore r(sig);
    reset();
    ASSERT_EQ(install_info(sig, 0), 0);
    {
        adsm::os::DeferredSignals hold;
        for (int i = 1; i <= 3; ++i) queue_to_self(sig, i);
        EXPECT_EQ(g_runs.load(), 0);
    }
    EXPECT_EQ(g_runs.load(), 3);
    EXPECT_EQ(g_last_value.load(), 3);  // real-time signals arrive in order
}

TEST(DeferredSignalsTest, AResetHandlerHeldBackStillRunsOnceThenTheDefaultIsBack) {
    Restore r(SIGUSR2);
    reset();
    struct sigaction sa = {};
    sa.sa_handler = on_plain;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR2, &sa, nullptr), 0);
    {
        adsm::os::DeferredSignals hold;
        raise(SIGUSR2);
    }
    EXPECT_EQ(g_runs.load(), 1);
    struct sigaction now = {};
    ASSERT_EQ(sigaction(SIGUSR2, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(DeferredSignalsTest, FaultSignalsTheCLibrarysOwnAndTheStopSignalAreNotDeferrable) {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGKILL, SIGSTOP, 32, 33, SIGPWR})
        EXPECT_FALSE(adsm::os::deferrable(sig)) << sig;
    for (int sig : {SIGUSR1, SIGUSR2, SIGALRM, SIGINT, SIGTERM, SIGCHLD, SIGRTMIN, SIGRTMAX})
        EXPECT_TRUE(adsm::os::deferrable(sig)) << sig;
}
