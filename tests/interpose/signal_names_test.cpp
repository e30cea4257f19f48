// The C library's other names for installing a handler or setting a mask
// (__sysv_signal, which signal() is in a program built with -std=c99,
// __sigaction, ssignal, sigset, sigignore, sighold, sigblock, sigsetmask,
// BSD's sigpause), and the system calls made by number through syscall():
// each sets SIGSEGV's action or mask inside the C library, past sigaction
// and sigprocmask.  Whatever the program does through them, the runtime's
// fault handler stays, its faults on shared memory are taken, and the
// program reads back what it set.  Each case runs in a child: where the
// program's handler took the runtime's place, it ends the child with
// status 3 at the first closed page.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

using namespace interpose_test;

extern "C" sighandler_t __sysv_signal(int, sighandler_t);
extern "C" int __sigaction(int, const struct sigaction *, struct sigaction *);
extern "C" int bsd_sigpause(int mask) __asm__("sigpause");  // (C++'s sigpause is X/Open's)
extern "C" int __sigpause(int, int);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// (Named: the suite builds its files as one.)
namespace signal_names {

constexpr size_t kBytes = 3 * kThreshold;

void programs_handler(int) { _exit(3); }

// In the child, where a failed assertion would not be seen: status 7.
void need(bool ok) {
    if (!ok) _exit(7);
}

// In the child, with the runtime started (its handler installed) and a
// buffer closed on the device: the program's `install`, then the buffer
// read and written, and the action the program reads back for SIGSEGV is
// its handler.
[[noreturn]] void install_then_touch(void (*install)()) {
    auto *p = static_cast<uint8_t *>(malloc(kBytes));
    close_on_device(p, kBytes, 50);
    install();
    for (size_t i = 0; i < kBytes; ++i)
        if (p[i] != pattern(i, 50)) _exit(4);
    for (size_t i = 0; i < kBytes; ++i) p[i] = static_cast<uint8_t>(i);
    struct sigaction now = {};
    if (sigaction(SIGSEGV, nullptr, &now) != 0 || now.sa_handler != programs_handler) _exit(5);
    sigset_t mask;
    if (pthread_sigmask(SIG_BLOCK, nullptr, &mask) != 0 || sigismember(&mask, SIGSEGV) == 1) _exit(6);
    _exit(0);
}

void with(void (*install)()) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(install_then_touch(install), testing::ExitedWithCode(0), "");
}

uint8_t *g_alarm_buffer;
volatile int g_alarm_wrong = -1;

// Reads the closed buffer while the thread waits under the pause's mask.
void alarm_touches(int) {
    int wrong = 0;
    for (size_t i = 0; i < kBytes; ++i) wrong += g_alarm_buffer[i] != pattern(i, 51);
    g_alarm_wrong = wrong;
}

// In the child: a wait under a mask with SIGSEGV's bit, whose SIGALRM
// handler reads closed shared memory.
[[noreturn]] void pause_then_touch(int (*pause_with)(int mask)) {
    g_alarm_buffer = static_cast<uint8_t *>(malloc(kBytes));
    close_on_device(g_alarm_buffer, kBytes, 51);
    struct sigaction sa = {};
    sa.sa_handler = alarm_touches;
    need(sigaction(SIGALRM, &sa, nullptr) == 0);
    ualarm(20000, 0);
    pause_with(1 << (SIGSEGV - 1) | 1 << (SIGUSR1 - 1));
    _exit(g_alarm_wrong == 0 ? 0 : 8);
}

}  // namespace signal_names

using namespace signal_names;

TEST(SignalNamesTest, SysvSignalAsAStrictStandardBuildCallsSignal) {
    with([] { need(__sysv_signal(SIGSEGV, programs_handler) != SIG_ERR); });
}

TEST(SignalNamesTest, TheSigactionSecondName) {
    with([] {
        struct sigaction sa = {};
        sa.sa_handler = programs_handler;
        need(__sigaction(SIGSEGV, &sa, nullptr) == 0);
    });
}

TEST(SignalNamesTest, Ssignal) {
    with([] { need(ssignal(SIGSEGV, programs_handler) != SIG_ERR); });
}

TEST(SignalNamesTest, SigsetHoldAndInstall) {
    with([] {
        need(sigset(SIGSEGV, SIG_HOLD) != SIG_ERR);
        // (Held as the C library saw it: the mask read back lacks it.)
        need(sigset(SIGSEGV, programs_handler) != SIG_ERR);
    });
}

TEST(SignalNamesTest, SigignoreThenAHandler) {
    with([] {
        need(sigignore(SIGSEGV) == 0);
        struct sigaction now = {};
        need(sigaction(SIGSEGV, nullptr, &now) == 0 && now.sa_handler == SIG_IGN);
        need(signal(SIGSEGV, programs_handler) != SIG_ERR);
    });
}

TEST(SignalNamesTest, MasksThatBlockSigsegv) {
    with([] {
        need(sighold(SIGSEGV) == 0);
        sigblock(1 << (SIGSEGV - 1));
        sigsetmask(1 << (SIGSEGV - 1) | 1 << (SIGUSR1 - 1));
        sigset_t mask;
        // (The rest of the mask is as asked.)
        need(pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, SIGUSR1) == 1);
        need(signal(SIGSEGV, programs_handler) != SIG_ERR);
    });
}

TEST(SignalNamesTest, WaitsUnderAMaskOfBits) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(pause_then_touch(bsd_sigpause), testing::ExitedWithCode(0), "");
    EXPECT_EXIT(pause_then_touch([](int mask) { return __sigpause(mask, 0); }), testing::ExitedWithCode(0), "");
}

// The kernel's sigaction, as a call by number passes it (x86-64, AArch64).
struct KernelSigaction {
    void *handler;
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

#if defined(__x86_64__) || defined(__aarch64__)
TEST(SignalNamesTest, AnActionSetByNumber) {
    with([] {
        KernelSigaction k = {reinterpret_cast<void *>(programs_handler), 0, nullptr, 0};
        KernelSigaction old = {};
        need(syscall(SYS_rt_sigaction, SIGSEGV, &k, &old, sizeof k.mask) == 0);
        // What it reads back by number is its handler too.
        need(syscall(SYS_rt_sigaction, SIGSEGV, nullptr, &old, sizeof k.mask) == 0);
        need(old.handler == reinterpret_cast<void *>(programs_handler));
        // Bad pointers are the kernel's EFAULT, not a fault here.
        errno = 0;
        need(syscall(SYS_rt_sigaction, SIGSEGV, reinterpret_cast<void *>(8), nullptr, sizeof k.mask) == -1 &&
             errno == EFAULT);
    });
}
#endif

TEST(SignalNamesTest, AMaskAndAnAlternateStackSetByNumber) {
    with([] {
        uint64_t mask = uint64_t{1} << (SIGSEGV - 1) | uint64_t{1} << (SIGUSR1 - 1), old = 0;
        need(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, &old, sizeof mask) == 0);
        need(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, nullptr, sizeof mask) == 0);
        sigset_t now;
        need(pthread_sigmask(SIG_BLOCK, nullptr, &now) == 0 && sigismember(&now, SIGUSR1) == 1);
        // An alternate stack by number goes where the C library's would.
        static char stack[64 * 1024];
        stack_t ss = {stack, 0, sizeof stack}, was = {};
        need(syscall(SYS_sigaltstack, &ss, &was) == 0);
        need(syscall(SYS_sigaltstack, nullptr, &was) == 0 && was.ss_sp == stack);
        need(signal(SIGSEGV, programs_handler) != SIG_ERR);
    });
}

#pragma GCC diagnostic pop
