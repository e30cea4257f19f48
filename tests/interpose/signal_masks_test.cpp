// Signal masks that block SIGSEGV, which a thread then could not take the
// runtime's fault under: a thread started with every signal blocked, a
// handler whose mask blocks every signal, a mask that blocks SIGSEGV
// alone, a context switched to with every signal blocked and a thread whose
// attributes block every signal all read and write closed shared memory
// (its data on the device); so does a handler that runs during a wait
// (ppoll, pselect, epoll_pwait) whose mask blocks every other signal.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <ucontext.h>

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

namespace {
ucontext_t g_main_context, g_coroutine;
uint8_t *g_coroutine_buffer;
size_t g_coroutine_wrong = ~size_t(0);
int g_coroutine_segv_blocked = -1;

uint8_t g_resume_pattern;

// (Apart from the functions that call getcontext, which returns twice.)
__attribute__((noinline)) uint8_t *shared_buffer() {
    auto *p = static_cast<uint8_t *>(malloc(kBytes));
    if (!shared(opaque(p))) _exit(10);
    return p;
}

// Reads and bumps the buffer; resumed (setcontext), does it again with the
// next pattern.
void coroutine() {
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    g_coroutine_segv_blocked = sigismember(&now, SIGSEGV);
    g_coroutine_wrong = read_then_bump(g_coroutine_buffer, 43);
    swapcontext(&g_coroutine, &g_main_context);
    g_coroutine_wrong = read_then_bump(g_coroutine_buffer, g_resume_pattern);
    swapcontext(&g_coroutine, &g_main_context);
}

// A coroutine whose context blocks every signal (the C library sets a
// context's mask with a system call of its own); exits 0 when it read and
// wrote closed shared memory.
[[noreturn]] void switch_to_a_coroutine_that_blocks_every_signal() {
    g_coroutine_buffer = shared_buffer();
    close_on_device(g_coroutine_buffer, kBytes, 43);
    static char stack[256 * 1024];
    if (getcontext(&g_coroutine) != 0) _exit(11);
    g_coroutine.uc_stack.ss_sp = stack;
    g_coroutine.uc_stack.ss_size = sizeof stack;
    g_coroutine.uc_link = &g_main_context;
    sigfillset(&g_coroutine.uc_sigmask);
    makecontext(&g_coroutine, coroutine, 0);
    if (swapcontext(&g_main_context, &g_coroutine) != 0) _exit(12);
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    if (sigismember(&now, SIGSEGV) != 0) _exit(13);
    if (g_coroutine_segv_blocked != 0) _exit(14);
    if (sigismember(&g_coroutine.uc_sigmask, SIGUSR1) != 1) _exit(15);  // the rest as asked
    if (g_coroutine_wrong != 0 || bumped_wrong(g_coroutine_buffer, 43) != 0) _exit(16);
    // Back into it with setcontext, every signal blocked again: it reads
    // the next pattern, and its last swap returns here.
    close_on_device(g_coroutine_buffer, kBytes, 44);
    sigfillset(&g_coroutine.uc_sigmask);
    static volatile int resumed = 0;
    g_resume_pattern = 44;
    if (getcontext(&g_main_context) != 0) _exit(17);
    if (!resumed) {
        resumed = 1;
        setcontext(&g_coroutine);
        _exit(18);
    }
    _exit(g_coroutine_wrong == 0 && bumped_wrong(g_coroutine_buffer, 44) == 0 ? 0 : 19);
}

size_t g_thread_wrong = ~size_t(0);
uint8_t *g_thread_buffer;
void *bump_thread_buffer(void *) {
    g_thread_wrong = read_then_bump(g_thread_buffer, 45);
    return nullptr;
}

// A thread whose attributes set its first mask to block every signal.
[[noreturn]] void start_a_thread_whose_attributes_block_every_signal() {
    g_thread_buffer = shared_buffer();
    close_on_device(g_thread_buffer, kBytes, 45);
    pthread_attr_t attr;
    sigset_t all, back;
    pthread_attr_init(&attr);
    sigfillset(&all);
    if (pthread_attr_setsigmask_np(&attr, &all) != 0) _exit(11);
    if (pthread_attr_getsigmask_np(&attr, &back) != 0 || sigismember(&back, SIGSEGV) != 0 ||
        sigismember(&back, SIGUSR1) != 1)
        _exit(12);
    pthread_t t;
    if (pthread_create(&t, &attr, bump_thread_buffer, nullptr) != 0) _exit(13);
    pthread_join(t, nullptr);
    _exit(g_thread_wrong == 0 && bumped_wrong(g_thread_buffer, 45) == 0 ? 0 : 14);
}
}  // namespace

// Each in a child: with SIGSEGV blocked the kernel would end the process at
// the first closed page it touches.
TEST(SignalMasksTest, AContextSwitchedToWithEverySignalBlockedTakesTheRuntimesFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(switch_to_a_coroutine_that_blocks_every_signal(), testing::ExitedWithCode(0), "");
}

TEST(SignalMasksTest, AThreadWhoseAttributesBlockEverySignalTakesTheRuntimesFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(start_a_thread_whose_attributes_block_every_signal(), testing::ExitedWithCode(0), "");
}

namespace {
// In a child: SIGUSR1 pending while blocked, then a wait whose mask blocks
// every other signal, SIGSEGV among them, so that its handler runs during
// the wait, under that mask, and reads and writes closed shared memory.
template <class Wait>
[[noreturn]] void handler_during_a_wait(Wait wait) {
    g_handler_buffer = static_cast<uint8_t *>(malloc(kBytes));
    close_on_device(g_handler_buffer, kBytes, 41);
    struct sigaction sa = {};
    sa.sa_handler = touching_handler;
    sigaction(SIGUSR1, &sa, nullptr);
    sigset_t usr1, during;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
    raise(SIGUSR1);
    sigfillset(&during);
    sigdelset(&during, SIGUSR1);
    int r = wait(&during);
    _exit(r == -1 && errno == EINTR && g_handler_wrong == 0 && g_handler_segv_blocked == 0 ? 0 : 1);
}
}  // namespace

TEST(SignalMasksTest, AHandlerRunningDuringAWaitTakesTheRuntimesFaults) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const struct timespec second = {1, 0};
    EXPECT_EXIT(handler_during_a_wait([&](const sigset_t *m) { return ppoll(nullptr, 0, &second, m); }),
                testing::ExitedWithCode(0), "")
        << "ppoll";
    EXPECT_EXIT(handler_during_a_wait([&](const sigset_t *m) {
                    return pselect(0, nullptr, nullptr, nullptr, &second, m);
                }),
                testing::ExitedWithCode(0), "")
        << "pselect";
    EXPECT_EXIT(handler_during_a_wait([](const sigset_t *m) {
                    struct epoll_event ev;
                    return epoll_pwait(epoll_create1(0), &ev, 1, 1000, m);
                }),
                testing::ExitedWithCode(0), "")
        << "epoll_pwait";
}
