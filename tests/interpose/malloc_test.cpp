#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "helpers.h"

using namespace interpose_test;

TEST(MallocTest, TheThresholdDecides) {
    void *small = malloc(kThreshold - 1);
    void *big = malloc(kThreshold);
    EXPECT_FALSE(adsm::preload::in_window(small));
    EXPECT_TRUE(shared(big));
    EXPECT_EQ(malloc_usable_size(big), kThreshold);
    EXPECT_GE(malloc_usable_size(small), kThreshold - 1);
    free(small);
    free(big);
}

TEST(MallocTest, EveryEntryPoint) {
    auto *c = static_cast<uint8_t *>(calloc(kThreshold, 2));
    ASSERT_TRUE(shared(c));
    for (size_t i = 0; i < 2 * kThreshold; i += 511) ASSERT_EQ(c[i], 0);
    free(c);
    EXPECT_EQ(calloc(opaque(SIZE_MAX / 2), 4), nullptr);
    EXPECT_EQ(errno, ENOMEM);

    void *p = nullptr;
    ASSERT_EQ(posix_memalign(&p, 4096, kThreshold), 0);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(shared(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    free(p);
    EXPECT_EQ(posix_memalign(&p, 3, kThreshold), EINVAL);
    ASSERT_EQ(posix_memalign(&p, 1 << 21, kThreshold), 0) << "larger alignments go to the C library";
    EXPECT_FALSE(adsm::preload::in_window(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (1 << 21), 0u);
    free(p);

    for (void *q : {aligned_alloc(64, kThreshold), memalign(256, kThreshold), valloc(kThreshold), pvalloc(kThreshold + 1)}) {
        ASSERT_NE(q, nullptr);
        EXPECT_TRUE(shared(q));
        memset(q, 1, kThreshold);
        free(q);
    }
}

TEST(MallocTest, ReallocKeepsTheDataAcrossTheThresholdBothWays) {
    auto *p = static_cast<uint8_t *>(malloc(1000));
    for (int i = 0; i < 1000; ++i) p[i] = static_cast<uint8_t>(i);
    p = static_cast<uint8_t *>(realloc(p, 3 * kThreshold));  // up: into shared memory
    ASSERT_TRUE(shared(p));
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i));
    for (size_t i = 1000; i < 3 * kThreshold; ++i) p[i] = static_cast<uint8_t>(i * 3);
    close_on_device(p + 2 * kThreshold, kThreshold, 9);  // part of it lives on the device now
    p = static_cast<uint8_t *>(realloc(p, 4 * kThreshold));  // shared to shared
    ASSERT_TRUE(shared(p));
    for (size_t i = 1000; i < 2 * kThreshold; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i * 3));
    for (size_t i = 0; i < kThreshold; ++i) ASSERT_EQ(p[2 * kThreshold + i], pattern(i, 9));
    close_on_device(p, kThreshold, 4);
    p = static_cast<uint8_t *>(realloc(p, 5000));  // down: back to the C library
    ASSERT_FALSE(adsm::preload::in_window(p));
    for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(p[i], pattern(i, 4));
    EXPECT_EQ(realloc(p, 0), nullptr);  // frees
}

// realloc within the pages a shared block spans leaves it where it is, both
// ways, and the CPU and kernels see it at its new size.
TEST(MallocTest, ReallocWithinTheBlocksPagesKeepsItInPlace) {
    const size_t first = kThreshold + 100, grown = kThreshold + 4000, shrunk = kThreshold + 10;  // all 17 pages
    auto *p = static_cast<uint8_t *>(malloc(first));
    ASSERT_TRUE(shared(p));
    close_on_device(p, first, 3);  // its data on the device
    const uint64_t before = counter(adsm::Counter::resizes);
    const auto at = reinterpret_cast<uintptr_t>(p);
    p = static_cast<uint8_t *>(realloc(opaque(p), grown));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p), at);
    EXPECT_EQ(adsmGetSize(p), grown);
    EXPECT_EQ(malloc_usable_size(p), grown);
    for (size_t i = 0; i < first; ++i) ASSERT_EQ(p[i], pattern(i, 3)) << i;
    for (size_t i = first; i < grown; ++i) p[i] = static_cast<uint8_t>(i * 5);
    add_on_device(p, grown, 1);
    for (size_t i = 0; i < first; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(pattern(i, 3) + 1)) << i;
    for (size_t i = first; i < grown; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i * 5 + 1)) << i;
    p = static_cast<uint8_t *>(realloc(opaque(p), shrunk));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p), at);
    EXPECT_EQ(adsmGetSize(p), shrunk);
    add_on_device(p, shrunk, 1);
    for (size_t i = 0; i < shrunk; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(pattern(i, 3) + 2)) << i;
    EXPECT_EQ(counter(adsm::Counter::resizes) - before, 2u);
    free(p);
}

// A block that outgrows its pages moves with room to grow: growing it by
// small steps (a string appended to, a file read into a buffer) moves it a
// few times, not once every few steps.  Shrunk to under half its pages, it
// moves again and gives them back.
TEST(MallocTest, ReallocThatOutgrowsItsPagesLeavesRoomToGrowInPlace) {
    size_t n = kThreshold;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i % 251);
    int moves = 0;
    while (n < (size_t{4} << 20)) {
        const auto at = reinterpret_cast<uintptr_t>(p);
        p = static_cast<uint8_t *>(realloc(opaque(p), n + 1000));
        ASSERT_NE(p, nullptr);
        moves += reinterpret_cast<uintptr_t>(p) != at;
        for (size_t i = n; i < n + 1000; ++i) p[i] = static_cast<uint8_t>(i % 251);
        n += 1000;
    }
    EXPECT_TRUE(shared(p));
    EXPECT_EQ(adsmGetSize(p), n);
    // From 64 KiB to 4 MiB with half again as room each time: ten moves.
    EXPECT_LE(moves, 12) << "of " << (n - kThreshold) / 1000 << " reallocs";
    add_on_device(p, n, 2);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i % 251 + 2)) << i;
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto *small = static_cast<uint8_t *>(realloc(opaque(p), kThreshold));
    EXPECT_NE(reinterpret_cast<uintptr_t>(small), at);
    EXPECT_TRUE(shared(small));
    for (size_t i = 0; i < kThreshold; ++i) ASSERT_EQ(small[i], static_cast<uint8_t>(i % 251 + 2)) << i;
    free(small);
}

// A freed block serves the next malloc of about its size where it is, with
// the pages and device memory it had (malloc'ing a buffer per file paid
// fresh pages on both sides each time); while kept, a release moves none of
// it, and the block it becomes is an object as any other, to the CPU and to
// kernels.
TEST(MallocTest, AFreedBlockServesTheNextMallocOfItsSizeWhereItIs) {
    const size_t n = (size_t{3} << 20) + 5 * 4096 + 123;  // a span no other test's blocks have
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 4);
    for (size_t i = 0; i < n; i += 4096) p[i] = 7;  // written again: the CPU's now
    const auto at = reinterpret_cast<uintptr_t>(p);
    uint8_t *stale = opaque(p);
    free(p);
    EXPECT_EQ(adsmGetSize(stale), 0u) << "a kept block is no object";
    const uint64_t sent = counter(adsm::Counter::h2d_bytes);
    auto *other = static_cast<uint8_t *>(malloc(kThreshold));
    memset(other, 1, kThreshold);
    add_on_device(other, kThreshold, 1);
    EXPECT_LT(counter(adsm::Counter::h2d_bytes) - sent, n) << "the freed block went to the device at a release";
    EXPECT_EQ(other[kThreshold - 1], 2);
    free(other);

    const uint64_t reused = counter(adsm::Counter::kept_reuses);
    auto *q = static_cast<uint8_t *>(malloc(n - 100));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(q), at);
    EXPECT_EQ(counter(adsm::Counter::kept_reuses) - reused, 1u);
    EXPECT_EQ(adsmGetSize(q), n - 100);
    EXPECT_EQ(malloc_usable_size(q), n - 100);
    for (size_t i = 0; i < n - 100; ++i) q[i] = static_cast<uint8_t>(i * 3);
    add_on_device(q, n - 100, 2);
    for (size_t i = 0; i < n - 100; ++i) ASSERT_EQ(q[i], static_cast<uint8_t>(i * 3 + 2)) << i;
    free(q);
}

// A block another thread's context kept (a worker that mallocs a buffer
// per task and ends, a pool whose tasks run on any thread) serves this
// thread's malloc of about its size: its pages stay warm, and it is this
// thread's object from then on (its kernels move it).
TEST(MallocTest, AnotherThreadsKeptBlockServesThisThreadsMalloc) {
    const size_t n = (size_t{3} << 20) + 9 * 4096 + 17;  // a span no other test's blocks have
    uintptr_t at = 0;
    std::thread worker([&] {
        auto *p = static_cast<uint8_t *>(malloc(n));
        if (!shared(p)) return;
        memset(p, 6, n);
        add_on_device(p, n, 1);  // the worker's context used it
        at = reinterpret_cast<uintptr_t>(p);
        free(p);
    });
    worker.join();
    ASSERT_NE(at, 0u);
    const uint64_t reused = counter(adsm::Counter::kept_reuses);
    auto *q = static_cast<uint8_t *>(malloc(n - 50));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(q), at) << "a fresh block, the worker's kept one left idle";
    EXPECT_EQ(counter(adsm::Counter::kept_reuses) - reused, 1u);
    EXPECT_EQ(adsmGetSize(q), n - 50);
    for (size_t i = 0; i < n - 50; ++i) q[i] = static_cast<uint8_t>(i * 5);
    add_on_device(q, n - 50, 3);
    for (size_t i = 0; i < n - 50; ++i) ASSERT_EQ(q[i], static_cast<uint8_t>(i * 5 + 3)) << i;
    free(q);
}

// A preloaded program's mallocs are the program's: a buffer one thread
// filled (and used for its own kernel), handed to another thread whose
// kernel reads and writes it.  That kernel must find what the CPU wrote and
// its sync bring back what it wrote, each time, both ways.
TEST(MallocTest, AnotherThreadsBufferGoesToThisThreadsKernel) {
    const size_t n = 2 * kThreshold + 333;
    uint8_t *p = nullptr;
    std::thread([&] {
        p = static_cast<uint8_t *>(malloc(n));
        if (!p) return;
        for (size_t i = 0; i < n; ++i) p[i] = pattern(i, 1);
        add_on_device(p, n, 1);  // the worker's context used it
    }).join();
    ASSERT_TRUE(p && shared(p));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(pattern(i, 1) + 1)) << i;
    for (size_t i = 0; i < n; i += 7) p[i] = 9;
    add_on_device(p, n, 2);
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(p[i], i % 7 ? static_cast<uint8_t>(pattern(i, 1) + 3) : 11) << i;
    // And back to a thread of its own.
    std::thread([&] {
        memset(p, 4, n);
        add_on_device(p, n, 1);
    }).join();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 5) << i;
    free(p);
}

// malloc_trim gives the kept blocks back, as the C library gives back its
// free memory: the next malloc of that size gets fresh addresses.
TEST(MallocTest, MallocTrimGivesTheKeptBlocksBack) {
    const size_t n = (size_t{2} << 20) + 11 * 4096;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    memset(p, 3, n);
    const auto at = reinterpret_cast<uintptr_t>(p);
    free(p);
    EXPECT_EQ(malloc_trim(0), 1);
    const uint64_t reused = counter(adsm::Counter::kept_reuses);
    auto *q = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(q));
    EXPECT_NE(reinterpret_cast<uintptr_t>(q), at) << "a kept block outlived malloc_trim";
    EXPECT_EQ(counter(adsm::Counter::kept_reuses), reused);
    free(q);
}

// calloc's memory is zeros: never a kept block's bytes.
TEST(MallocTest, CallocNeverGetsAKeptBlock) {
    const size_t n = (size_t{2} << 20) + 7 * 4096;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    memset(p, 0xa5, n);
    free(p);
    const uint64_t reused = counter(adsm::Counter::kept_reuses);
    auto *q = static_cast<uint8_t *>(calloc(1, n));
    ASSERT_TRUE(shared(q));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(q[i], 0) << i;
    EXPECT_EQ(counter(adsm::Counter::kept_reuses), reused);
    free(q);
}

TEST(MallocTest, CppNewAndDeleteGoThroughIt) {
    auto v = std::make_unique<uint8_t[]>(kThreshold * 2);
    EXPECT_TRUE(shared(v.get()));
    std::vector<int> small(10);
    EXPECT_FALSE(adsm::preload::in_window(small.data()));
}

TEST(MallocTest, ManyThreadsAtOnce) {
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 300; ++i) {
                size_t n = (i % 3 == 0) ? kThreshold + static_cast<size_t>(i) * 100 : 100 + static_cast<size_t>(i);
                auto *p = static_cast<uint8_t *>(malloc(n));
                memset(p, t, n);
                p = static_cast<uint8_t *>(realloc(p, n * 2));
                for (size_t k = 0; k < n; k += 97)
                    if (p[k] != t) bad++;
                free(p);
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

namespace {
std::atomic<int> g_handler_allocs{0};
void allocating_handler(int) {
    // What some libraries do in their handlers: not async-signal-safe in
    // general, but it must not deadlock or corrupt anything here.
    void *p = opaque(malloc(kThreshold * 2));
    if (p) {
        memset(p, 5, kThreshold * 2);
        free(p);
        g_handler_allocs++;
    }
}
}  // namespace

TEST(MallocTest, FromAnotherLibrarysSignalHandler) {
    struct sigaction sa = {}, old = {};
    sa.sa_handler = allocating_handler;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    std::atomic<bool> stop{false};
    pthread_t self = pthread_self();
    std::thread killer([&] {
        while (!stop.load()) {
            pthread_kill(self, SIGUSR1);  // at the thread that allocates
            usleep(200);
        }
    });
    // Allocate until the handler has run a good number of times.
    int i = 0;
    for (; g_handler_allocs.load() < 50 && i < 5000000; ++i) {
        void *p = opaque(malloc(i % 2 ? kThreshold : 64));
        free(p);
    }
    stop = true;
    killer.join();
    sigaction(SIGUSR1, &old, nullptr);
    EXPECT_GE(g_handler_allocs.load(), 50) << "after " << i << " allocations";
}

// An alignment that is not a power of two is the C library's to answer
// (glibc rounds it up, or refuses it from 2.38): never shared memory.
TEST(MallocTest, AlignmentsThatAreNotPowersOfTwoGoToTheCLibrary) {
    for (size_t align : {size_t{0}, size_t{24}, size_t{3000}}) {
        void *a = aligned_alloc(align, 4 * kThreshold);
        EXPECT_FALSE(a && shared(a)) << "aligned_alloc " << align;
        free(a);
        void *m = memalign(align, 4 * kThreshold);
        EXPECT_FALSE(m && shared(m)) << "memalign " << align;
        free(m);
    }
    void *p = aligned_alloc(4096, 4 * kThreshold);
    EXPECT_TRUE(shared(p)) << "a power of two up to a page is served";
    free(p);
}

namespace {

// A shared buffer of 2 * kThreshold bytes of 7 whose first half only the
// device holds (pattern 1): what a fork child must copy from both sides.
uint8_t *half_on_device() {
    auto *p = static_cast<uint8_t *>(malloc(2 * kThreshold));
    if (!shared(p)) return p;
    memset(p, 7, 2 * kThreshold);
    close_on_device(p, kThreshold, 1);
    return p;
}

// The exit code of child pid once it ended, or -1 if it did not exit.
int exit_code_of(pid_t pid) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

}  // namespace

TEST(MallocTest, AcrossFork) {
    uint8_t *p = half_on_device();
    ASSERT_TRUE(shared(p));
    pid_t pid = fork();
    if (pid == 0) {
        int code = 0;
        for (size_t i = 0; i < kThreshold; ++i)
            if (p[i] != pattern(i, 1)) code = 1;
        p = static_cast<uint8_t *>(realloc(p, 3 * kThreshold));  // ordinary memory now
        if (!p || p[kThreshold + 5] != 7) code = 2;
        void *q = malloc(4 * kThreshold);  // the runtime is gone: the C library serves
        if (!q || adsm::preload::in_window(q)) code = 3;
        free(q);
        free(p);
        _exit(code);
    }
    EXPECT_EQ(exit_code_of(pid), 0);
    EXPECT_EQ(p[kThreshold + 5], 7);
    free(p);
}

extern "C" pid_t _Fork(void);

// A fork that runs no atfork handler (_Fork) still gives the child its own
// copy: what it writes stays out of the parent, and it finds what only the
// device held.
TEST(MallocTest, AcrossAForkWithoutHandlers) {
    uint8_t *p = half_on_device();
    ASSERT_TRUE(shared(p));
    pid_t pid = _Fork();
    if (pid == 0) {
        int code = 0;
        for (size_t i = 0; i < kThreshold; ++i)
            if (p[i] != pattern(i, 1)) code = 1;
        memset(p + kThreshold, 9, kThreshold);
        _exit(code);
    }
    ASSERT_GT(pid, 0);
    EXPECT_EQ(exit_code_of(pid), 0) << "the child did not find what the device held (-1: it died)";
    EXPECT_EQ(p[kThreshold + 5], 7) << "the child wrote into its parent's memory";
    EXPECT_EQ(p[2 * kThreshold - 1], 7);
    free(p);
}

// A fork or clone made by number through syscall() (a sandbox's or a
// runtime's own process making) runs no atfork handler either: the child
// still gets its own copy.
TEST(MallocTest, AcrossAForkOrCloneByNumber) {
    struct clone_args3 {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    };
    for (int how = 0; how < 3; ++how) {
        SCOPED_TRACE(how == 0 ? "SYS_fork" : how == 1 ? "SYS_clone" : "SYS_clone3");
        uint8_t *p = half_on_device();
        ASSERT_TRUE(shared(p));
        auto *open = static_cast<uint8_t *>(malloc(kThreshold));  // written last by the host: no fault to take
        ASSERT_TRUE(shared(open));
        memset(open, 7, kThreshold);
        clone_args3 args = {};
        args.exit_signal = SIGCHLD;
        long pid = how == 0 ? syscall(SYS_fork)
                   : how == 1 ? syscall(SYS_clone, SIGCHLD, 0L, 0L, 0L, 0L)
                              : syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0) {
            memset(open, 9, kThreshold);
            int code = 0;
            for (size_t i = 0; i < kThreshold; ++i)
                if (p[i] != pattern(i, 1)) code = 1;
            memset(p + kThreshold, 9, kThreshold);
            _exit(code);
        }
        ASSERT_GT(pid, 0) << strerror(errno);
        EXPECT_EQ(exit_code_of(static_cast<pid_t>(pid)), 0) << "the child did not find what the device held (-1: it died)";
        EXPECT_EQ(open[5], 7) << "the child wrote into its parent's memory";
        EXPECT_EQ(p[kThreshold + 5], 7) << "the child wrote into its parent's memory";
        EXPECT_EQ(p[2 * kThreshold - 1], 7);
        free(open);
        free(p);
    }
}

// A child forked while another thread changes a signal's action sets its
// own, as children do before an exec, without waiting for ever for a lock
// the other thread held at the fork.
TEST(MallocTest, ForkWhileAnotherThreadChangesSignalActions) {
    std::atomic<bool> stop{false};
    std::thread changer([&] {
        while (!stop.load()) {
            signal(SIGPIPE, SIG_IGN);
            signal(SIGPIPE, SIG_DFL);
        }
    });
    int hung = 0, failed = 0;
    for (int i = 0; i < 300 && !hung; ++i) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            signal(SIGPIPE, SIG_DFL);
            signal(SIGCHLD, SIG_DFL);
            _exit(0);
        }
        int st = 0;
        pid_t got = 0;
        for (int waited_ms = 0; waited_ms < 10000 && (got = waitpid(pid, &st, WNOHANG)) == 0; ++waited_ms) usleep(1000);
        if (got == 0) {
            hung = 1;
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            ++failed;
        }
    }
    stop = true;
    changer.join();
    EXPECT_EQ(hung, 0) << "a child waited 10 s in signal()";
    EXPECT_EQ(failed, 0);
}

TEST(MallocTest, AcrossExec) {
    // The child is this test program again, running one test that checks
    // the threshold applies there too.
    if (getenv("ADSM_TEST_EXECED")) {
        void *p = malloc(kThreshold);
        bool ok = shared(p);
        free(p);
        _exit(ok ? 0 : 1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        setenv("ADSM_TEST_EXECED", "1", 1);
        execl("/proc/self/exe", "interpose_tests", "--gtest_filter=MallocTest.AcrossExec", static_cast<char *>(nullptr));
        _exit(127);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(MallocDeathTest, FreeingAnInvalidSharedPointerStopsTheProgram) {
    // In a fresh process (not a fork child, where the runtime is gone).
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            auto *p = static_cast<uint8_t *>(malloc(kThreshold));
            free(opaque(p + 16));
        },
        "invalid pointer");
    EXPECT_DEATH(
        {
            auto *p = static_cast<uint8_t *>(malloc(kThreshold));
            uint8_t *stale = opaque(p);
            free(p);
            free(stale);
        },
        "invalid pointer");
}

TEST(MallocTest, AnInvalidFreeInAForkChildIsStillCaught) {
    auto *p = static_cast<uint8_t *>(malloc(kThreshold));
    pid_t pid = fork();
    if (pid == 0) {
        free(opaque(p + 16));
        _exit(0);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(st)) << "aborted";
    free(p);
}
