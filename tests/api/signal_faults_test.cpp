// Faults on shared memory taken inside a signal handler of the program's,
// delivered thousands of times while the interrupted thread is inside the
// runtime (calls, syncs, allocations, frees) or inside the C library's
// allocator.  The runtime holds asynchronous signals back while it holds a
// lock its fault handler takes, so none of this may deadlock (the CTest
// timeout catches a hang), and no write the handler made may be lost.
#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "test_kernels.h"

using namespace adsm_test;

namespace {

volatile uint64_t *g_counter = nullptr;  // shared memory the handler writes
std::atomic<uint64_t> g_handled{0};

void on_usr1(int) {
    // Reads and writes shared memory that a kernel may hold: a fault, and
    // after a call a race that waits for the kernel from inside this handler.
    *g_counter = *g_counter + 1;
    g_handled.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

TEST(SignalFaultsTest, HandlersTouchSharedMemoryWhileTheThreadIsInTheRuntime) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    // Batch protects nothing: a handler's write between a call and its sync
    // races with the copy back, by design; there only freedom from deadlock
    // is checked.
    const bool tracked = std::string(info.protocol) != "batch";
    auto inc = adsm_test::device_kernel<increment>("signals.increment");
    const size_t n = 4096;
    auto *data = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    g_counter = static_cast<uint64_t *>(adsmCalloc(1, sizeof(uint64_t)));
    ASSERT_NE(data, nullptr);
    ASSERT_NE(g_counter, nullptr);
    for (size_t i = 0; i < n; ++i) data[i] = uint32_t(i);

    struct sigaction sa = {}, old;
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

    pthread_t self = pthread_self();
    std::atomic<bool> stop{false};
    std::thread sender([&] {
        struct timespec ts = {0, 20 * 1000};
        while (!stop.load()) {
            pthread_kill(self, SIGUSR1);
            nanosleep(&ts, nullptr);
        }
    });

    int rounds = 0, wrong = 0;
    const auto start = std::chrono::steady_clock::now();
    while (g_handled.load() < 5000 || rounds < 200) {
        inc(adsm::blocks_for(n, 256), 256, data, n);
        ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
        ++rounds;
        // The runtime's allocator and the C library's, interrupted too.
        void *a = adsmAlloc(1 + rounds % 9000);
        void *b = malloc(1 + rounds % 70000);
        ASSERT_NE(a, nullptr);
        ASSERT_EQ(adsmFree(a), adsmSuccess);
        free(b);
        for (size_t i = 0; i < n; i += 97)
            if (data[i] != uint32_t(i + rounds)) ++wrong;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) break;
    }
    stop = true;
    sender.join();
    sigaction(SIGUSR1, &old, nullptr);
    printf("%d rounds, %llu handlers ran, counter %llu\n", rounds, static_cast<unsigned long long>(g_handled.load()),
           static_cast<unsigned long long>(*g_counter));
    EXPECT_EQ(wrong, 0) << "the kernel's results were wrong";
    EXPECT_GE(g_handled.load(), 5000u) << "too few handlers ran to prove anything";
    if (tracked) {
        EXPECT_EQ(*g_counter, g_handled.load()) << "writes made in a signal handler were lost";
    }
    adsmFree(data);
    adsmFree(const_cast<uint64_t *>(g_counter));
}

namespace {

// The deepest the alternate stack [lo, lo + n) was written, from its top,
// given it was filled with kUnused.
constexpr unsigned char kUnused = 0xa5;
size_t depth_used(const unsigned char *lo, size_t n) {
    size_t i = 0;
    while (i < n && lo[i] == kUnused) ++i;
    return n - i;
}

}  // namespace

// A thread with a small alternate stack of its own (as Rust and Go threads
// have) takes faults on shared memory: the runtime's handler enters on that
// stack, where the program's handler expects to run, and every fault is
// handled (its work runs off that stack: AltStackTest shows where).  A
// guard page below the alternate stack turns an overflow into a crash.
TEST(SignalFaultsTest, FaultsTakenOnAProgramsSmallAlternateStackLeaveIt) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    auto inc = adsm_test::device_kernel<increment>("signals.increment");
    const size_t page = 4096, alt_bytes = 4 * page;
    auto *guarded = static_cast<unsigned char *>(
        mmap(nullptr, alt_bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(guarded, MAP_FAILED);
    ASSERT_EQ(mprotect(guarded, page, PROT_NONE), 0);
    unsigned char *alt = guarded + page;
    memset(alt, kUnused, alt_bytes);

    size_t wrong = 0, checked = 0;
    std::string failure;
    std::thread t([&] {
        // (The thread's own context: its calls release what it allocated.)
        const size_t n = 64 << 10;  // 64 pages: many blocks, many faults
        auto *data = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
        if (!data) {
            failure = adsmGetLastErrorDetail();
            return;
        }
        stack_t ss = {};
        ss.ss_sp = alt;
        ss.ss_size = alt_bytes;
        if (sigaltstack(&ss, nullptr) != 0) {
            failure = "sigaltstack refused the stack";
            return;
        }
        for (int round = 0; round < 20 && failure.empty(); ++round) {
            for (size_t i = 0; i < n; i += 1024) data[i] = uint32_t(i + round);  // write faults
            inc(adsm::blocks_for(n, 256), 256, data, n);
            if (adsmSync() != adsmSuccess) failure = adsmGetLastErrorDetail();
            for (size_t i = 0; i < n; i += 1024, ++checked) wrong += data[i] != uint32_t(i + round + 1);  // read faults
        }
        stack_t off = {};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
        adsmFree(data);
    });
    t.join();
    ASSERT_EQ(failure, "");
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(checked, 20u * 64);
    const size_t used = depth_used(alt, alt_bytes);
    printf("protocol %s: %zu bytes of a %zu-byte alternate stack used\n", info.protocol, used, alt_bytes);
    // The handler entered there (batch protects nothing, and an integrated
    // device's memory is the host's: neither takes a fault)...
    if (std::string(info.protocol) != "batch" && !info.integrated) {
        EXPECT_GT(used, 0u);
    }
    // ...with the kernel's signal frame (every vector register: up to 3.5
    // KiB with AVX-512) and the handler's first frames, well inside it.
    EXPECT_LT(used, alt_bytes - page) << "the handler came close to overflowing the program's alternate stack";
    munmap(guarded, alt_bytes + page);
}
