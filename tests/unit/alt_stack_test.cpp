// os::run_off_alt_stack: a fault handler entered on a thread's small
// alternate stack runs its work on the stack the fault interrupted, with
// the alternate stack out of the way of faults nested in that work, and
// gets it back afterwards.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include "os/fault_signals.h"

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kAltBytes = 4 * kPage;

unsigned char *g_alt;           // the thread's alternate stack
unsigned char *g_pages;         // two pages made PROT_NONE; the handler opens the one that faulted
uintptr_t g_work_sp[2];         // where the work of each fault ran (outer, nested)
int g_faults = 0;
adsm::os::FaultFrame g_frame_seen{};
bool g_alt_disabled_in_work = false;

bool on_alt(uintptr_t a) { return a >= reinterpret_cast<uintptr_t>(g_alt) && a < reinterpret_cast<uintptr_t>(g_alt) + kAltBytes; }

struct Fault {
    void *addr;
    int depth;
};

void work(void *p) {
    auto *f = static_cast<Fault *>(p);
    volatile char here = 0;
    g_work_sp[f->depth] = reinterpret_cast<uintptr_t>(&here);
    if (f->depth == 0) {
        g_frame_seen = adsm::os::switched_fault_frame;
        stack_t cur;
        g_alt_disabled_in_work = sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE);
        // A fault inside the work: delivered where the work runs, not over
        // the frames waiting on the alternate stack.
        g_pages[kPage] = 2;
    }
    mprotect(reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(f->addr) & ~(kPage - 1)), kPage,
             PROT_READ | PROT_WRITE);
}

int g_depth = 0;
void on_segv(int, siginfo_t *info, void *uctx) {
    Fault f{info->si_addr, g_depth++};
    ++g_faults;
    adsm::os::run_off_alt_stack(uctx, work, &f);
    --g_depth;
}

}  // namespace

// flags: the alternate stack's (0, or Linux's SS_AUTODISARM, which the
// kernel applies itself while a handler runs on it).
static void work_leaves_the_alternate_stack(int flags) {
    g_alt = static_cast<unsigned char *>(mmap(nullptr, kAltBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    g_pages = static_cast<unsigned char *>(mmap(nullptr, 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(g_alt, MAP_FAILED);
    ASSERT_NE(g_pages, MAP_FAILED);
    struct sigaction sa = {}, old;
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);

    uintptr_t thread_sp = 0;
    stack_t after = {};
    adsm::os::FaultFrame frame_after{1, 1};
    std::thread t([&] {
        stack_t ss = {};
        ss.ss_sp = g_alt;
        ss.ss_size = kAltBytes;
        ss.ss_flags = flags;
        ASSERT_EQ(sigaltstack(&ss, nullptr), 0);
        volatile char here = 0;
        thread_sp = reinterpret_cast<uintptr_t>(&here);
        g_pages[0] = 1;  // the fault
        sigaltstack(nullptr, &after);
        frame_after = adsm::os::switched_fault_frame;
        stack_t off = {};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
    });
    t.join();
    sigaction(SIGSEGV, &old, nullptr);

    EXPECT_EQ(g_faults, 2);
    EXPECT_EQ(g_pages[0], 1);
    EXPECT_EQ(g_pages[kPage], 2);
    // Both pieces of work ran below the interrupted frame, not on the alternate stack.
    for (uintptr_t sp : g_work_sp) {
        EXPECT_FALSE(on_alt(sp));
        EXPECT_LT(sp, thread_sp);
        EXPECT_GT(sp, thread_sp - (1 << 20));
    }
    // (Disabled by the runtime, or disarmed by the kernel.)
    EXPECT_TRUE(g_alt_disabled_in_work) << "a nested fault would have been delivered over the waiting frames";
    // The fault's frame on the alternate stack was named for the collector, and only meanwhile.
    EXPECT_TRUE(on_alt(g_frame_seen.lo));
    EXPECT_EQ(g_frame_seen.hi, reinterpret_cast<uintptr_t>(g_alt) + kAltBytes);
    EXPECT_EQ(frame_after.lo, 0u);
    // The thread's alternate stack is its own again.
    EXPECT_EQ(after.ss_sp, g_alt);
    EXPECT_EQ(after.ss_size, kAltBytes);
    EXPECT_FALSE(after.ss_flags & SS_DISABLE);
    EXPECT_EQ(after.ss_flags & static_cast<int>(1u << 31), flags);
    munmap(g_alt, kAltBytes);
    munmap(g_pages, 2 * kPage);
}

TEST(AltStackTest, AFaultsWorkRunsOnTheInterruptedStackAndTheAlternateStackComesBack) {
    if (!adsm::os::kLeavesAltStack) GTEST_SKIP() << "this architecture runs the fault path where it is delivered";
    g_faults = 0;
    work_leaves_the_alternate_stack(0);
}

TEST(AltStackTest, AnAutoDisarmedAlternateStackIsLeftAsWell) {
    if (!adsm::os::kLeavesAltStack) GTEST_SKIP() << "this architecture runs the fault path where it is delivered";
    g_faults = 0;
    work_leaves_the_alternate_stack(static_cast<int>(1u << 31));
}

// Without an alternate stack the work runs where the handler does.
TEST(AltStackTest, WithoutAnAlternateStackTheWorkRunsInPlace) {
    g_pages = static_cast<unsigned char *>(mmap(nullptr, 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(g_pages, MAP_FAILED);
    g_faults = 0;
    struct sigaction sa = {}, old;
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
    g_alt = nullptr;
    std::thread t([&] {
        stack_t off = {};  // (a sanitizer gives threads one of its own)
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
        g_pages[0] = 1;
    });
    t.join();
    sigaction(SIGSEGV, &old, nullptr);
    EXPECT_EQ(g_faults, 2);
    EXPECT_EQ(g_frame_seen.lo, 0u);
    munmap(g_pages, 2 * kPage);
}
