// An alternate signal stack the program allocated in shared memory, whose
// block is closed (its data on the device) when a signal comes: the kernel
// writes the signal frame for the runtime's fault and for the program's own
// handler, and could not where the stack itself was closed (the process
// ended with SIGSEGV).
#include <signal.h>

#include <thread>

#include "helpers.h"

using namespace interpose_test;

namespace {

constexpr size_t kAltBytes = kThreshold;  // (LLVM's tools take 64 KiB and a little more)
constexpr size_t kDataBytes = 2 * kThreshold;

uint8_t *g_data;
volatile uintptr_t g_handler_sp;
volatile size_t g_alt_handler_wrong = ~size_t(0);

// On the alternate stack: notes where it runs and reads closed shared memory.
void on_alt_stack(int) {
    int here = 0;
    g_handler_sp = reinterpret_cast<uintptr_t>(&here);
    size_t wrong = 0;
    for (size_t i = 0; i < kDataBytes; ++i) wrong += g_data[i] != pattern(i, 21);
    g_alt_handler_wrong = wrong;
}

size_t differing(const uint8_t *p, size_t n, uint8_t v) {
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += p[i] != pattern(i, v);
    return wrong;
}

}  // namespace

TEST(AltStacksTest, AStackInClosedSharedMemoryTakesTheRuntimesFaultsAndTheProgramsSignals) {
    auto *alt = static_cast<uint8_t *>(malloc(kAltBytes));
    g_data = static_cast<uint8_t *>(malloc(kDataBytes));
    ASSERT_TRUE(shared(alt));
    ASSERT_TRUE(shared(g_data));
    stack_t ss = {}, old = {}, seen = {};
    ss.ss_sp = alt;
    ss.ss_size = kAltBytes;
    ASSERT_EQ(sigaltstack(&ss, &old), 0);
    struct sigaction sa = {}, old_sa = {};
    sa.sa_handler = on_alt_stack;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old_sa), 0);

    // The runtime's fault (its handler runs with SA_ONSTACK) on closed data,
    // with the stack closed as well.
    close_on_device(alt, kAltBytes, 20);
    close_on_device(g_data, kDataBytes, 21);
    EXPECT_EQ(differing(g_data, kDataBytes, 21), 0u);
    // The program's own handler, on its alternate stack, faulting there.
    close_on_device(alt, kAltBytes, 20);
    close_on_device(g_data, kDataBytes, 21);
    g_handler_sp = 0;
    ASSERT_EQ(raise(SIGUSR1), 0);
    EXPECT_NE(g_handler_sp, 0u) << "the handler ran";
    EXPECT_EQ(g_alt_handler_wrong, 0u);
    // Ran on an alternate stack, not on the thread's own.
    int here = 0;
    const auto sp = reinterpret_cast<uintptr_t>(&here);
    EXPECT_TRUE(g_handler_sp > sp + (1u << 20) || g_handler_sp + (1u << 20) < sp) << "on the thread's stack";

    // The program reads back the stack it gave, and no signal frame was
    // written over its buffer.
    ASSERT_EQ(sigaltstack(nullptr, &seen), 0);
    EXPECT_EQ(seen.ss_sp, alt);
    EXPECT_EQ(seen.ss_size, kAltBytes);
    EXPECT_EQ(seen.ss_flags & SS_DISABLE, 0);
    EXPECT_EQ(differing(alt, kAltBytes, 20), 0u);

    ASSERT_EQ(sigaction(SIGUSR1, &old_sa, nullptr), 0);
    stack_t replaced = {};
    ASSERT_EQ(sigaltstack(&old, &replaced), 0);
    EXPECT_EQ(replaced.ss_sp, alt);
    free(alt);
    free(g_data);
}

// A thread that sets one and ends: another thread can set its own after it.
TEST(AltStacksTest, EachThreadHasItsOwn) {
    for (int round = 0; round < 3; ++round) {
        std::thread t([] {
            auto *alt = static_cast<uint8_t *>(malloc(kAltBytes));
            stack_t ss = {}, seen = {};
            ss.ss_sp = alt;
            ss.ss_size = kAltBytes;
            EXPECT_EQ(sigaltstack(&ss, nullptr), 0);
            EXPECT_EQ(sigaltstack(nullptr, &seen), 0);
            EXPECT_EQ(seen.ss_sp, alt);
            g_data = static_cast<uint8_t *>(malloc(kDataBytes));
            close_on_device(alt, kAltBytes, 30);
            close_on_device(g_data, kDataBytes, 31);
            EXPECT_EQ(differing(g_data, kDataBytes, 31), 0u);
            free(g_data);
            stack_t off = {};
            off.ss_flags = SS_DISABLE;
            EXPECT_EQ(sigaltstack(&off, nullptr), 0);
            free(alt);
        });
        t.join();
    }
}
