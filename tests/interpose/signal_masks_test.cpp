// Signal masks that block SIGSEGV, which a thread then could not take the
// runtime's fault under: a thread started with every signal blocked, a
// handler whose mask blocks every signal, and a mask that blocks SIGSEGV
// alone all read and write closed shared memory (its data on the device).
#include <pthread.h>
#include <signal.h>

#include <thread>

#include "helpers.h"

using namespace interpose_test;

namespace {

constexpr size_t kBytes = 3 * kThreshold;

// Reads every byte of p against close_on_device's pattern v, then writes
// each byte plus one; the number of bytes that differed.
size_t read_then_bump(uint8_t *p, uint8_t v) {
    size_t wrong = 0;
    for (size_t i = 0; i < kBytes; ++i) wrong += p[i] != pattern(i, v);
    for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<uint8_t>(pattern(i, v) + 1);
    return wrong;
}

size_t bumped_wrong(const uint8_t *p, uint8_t v) {
    size_t wrong = 0;
    for (size_t i = 0; i < kBytes; ++i) wrong += p[i] != static_cast<uint8_t>(pattern(i, v) + 1);
    return wrong;
}

uint8_t *g_handler_buffer;
volatile size_t g_handler_wrong = ~size_t(0);
volatile int g_handler_segv_blocked = -1;

void touching_handler(int) {
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    g_handler_segv_blocked = sigismember(&now, SIGSEGV);
    g_handler_wrong = read_then_bump(g_handler_buffer, 41);
}

}  // namespace

TEST(SignalMasksTest, AThreadStartedWithEverySignalBlockedTakesTheRuntimesFaults) {
    auto *p = static_cast<uint8_t *>(malloc(kBytes));
    ASSERT_TRUE(shared(p));
    close_on_device(p, kBytes, 40);
    sigset_t all, before;
    sigfillset(&all);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &all, &before), 0);
    size_t wrong = ~size_t(0);
    int segv_blocked = -1, usr1_blocked = -1;
    std::thread t([&] {
        sigset_t mine;
        pthread_sigmask(SIG_BLOCK, nullptr, &mine);
        segv_blocked = sigismember(&mine, SIGSEGV);
        usr1_blocked = sigismember(&mine, SIGUSR1);
        wrong = read_then_bump(p, 40);
    });
    t.join();
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
    EXPECT_EQ(segv_blocked, 0) << "SIGSEGV stays open";
    EXPECT_EQ(usr1_blocked, 1) << "every other signal is blocked as asked";
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(bumped_wrong(p, 40), 0u);
    free(p);
}

TEST(SignalMasksTest, AHandlerWhoseMaskBlocksEverySignalTouchesSharedMemory) {
    g_handler_buffer = static_cast<uint8_t *>(malloc(kBytes));
    ASSERT_TRUE(shared(g_handler_buffer));
    struct sigaction sa = {}, old = {}, seen = {};
    sa.sa_handler = touching_handler;
    sigfillset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    ASSERT_EQ(sigaction(SIGUSR1, nullptr, &seen), 0);
    EXPECT_EQ(sigismember(&seen.sa_mask, SIGSEGV), 0);
    EXPECT_EQ(sigismember(&seen.sa_mask, SIGUSR2), 1);
    close_on_device(g_handler_buffer, kBytes, 41);
    ASSERT_EQ(raise(SIGUSR1), 0);
    ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
    EXPECT_EQ(g_handler_segv_blocked, 0);
    EXPECT_EQ(g_handler_wrong, 0u);
    EXPECT_EQ(bumped_wrong(g_handler_buffer, 41), 0u);
    free(g_handler_buffer);
}

TEST(SignalMasksTest, BlockingSigsegvAloneLeavesItOpen) {
    auto *p = static_cast<uint8_t *>(malloc(kBytes));
    ASSERT_TRUE(shared(p));
    close_on_device(p, kBytes, 42);
    sigset_t segv, before, now;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    ASSERT_EQ(sigprocmask(SIG_BLOCK, &segv, &before), 0);
    ASSERT_EQ(sigprocmask(SIG_BLOCK, nullptr, &now), 0);
    EXPECT_EQ(sigismember(&now, SIGSEGV), 0);
    EXPECT_EQ(read_then_bump(p, 42), 0u);
    ASSERT_EQ(sigprocmask(SIG_SETMASK, &before, nullptr), 0);
    EXPECT_EQ(bumped_wrong(p, 42), 0u);
    free(p);
}
