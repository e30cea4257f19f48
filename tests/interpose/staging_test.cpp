// Staged calls nested in a signal handler, and staged calls a handler
// leaves unfinished.  A handler that interrupts a call and makes one of its
// own gets buffers of its own (the interrupted call's hold its data), on
// the thread's stack or on a signal stack anywhere in memory; a handler
// that longjmps out of a call leaves it unfinished, and the thread's later
// calls are not taken for nested ones (they were, each mapping a buffer of
// its own, five times slower).
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"
#include "interpose/staging.h"

using namespace interpose_test;
using adsm::interpose::calls_under_way;

namespace staging_test {

constexpr size_t kOut = 1u << 20;   // a write that blocks on a full pipe
constexpr size_t kIn = 256 * 1024;  // the handler's read

struct Nesting {
    uint8_t *out = nullptr;  // the interrupted write's bytes
    uint8_t *in = nullptr;   // the handler's read's
    int file = -1;
    std::atomic<int> depth_seen{-1};
    std::atomic<bool> read_ok{false};
};
Nesting *g_nesting;

// Whether thread `tid` is blocked in system call `nr` within 10 s, as
// /proc says (its staged bytes are in the call then).
bool blocked_in(pid_t tid, long nr) {
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
    for (int i = 0; i < 10000; ++i) {
        FILE *f = fopen(path.c_str(), "r");
        long now = -2;
        if (f) {
            if (fscanf(f, "%ld", &now) != 1) now = -2;
            fclose(f);
        }
        if (now == nr) return true;
        usleep(1000);
    }
    return false;
}

void handler_reads(int) {
    Nesting &n = *g_nesting;
    n.read_ok = pread(n.file, n.in, kIn, 0) == static_cast<ssize_t>(kIn);
    n.depth_seen = calls_under_way();
}

// Writes kOut shared bytes into a full pipe (the write, blocked before its
// first byte, is restarted after the handler, from its staged bytes); a
// signal's handler reads a file into other shared memory meanwhile; then
// the pipe is drained and must hold the filler and the write's bytes.
void write_interrupted_by_a_read(Nesting &n, bool on_signal_stack) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    size_t filler = 0;
    const uint8_t ff[4096] = {};
    for (ssize_t r; (r = write(p[1], ff, sizeof ff)) > 0;) filler += static_cast<size_t>(r);
    ASSERT_EQ(errno, EAGAIN);
    ASSERT_EQ(fcntl(p[1], F_SETFL, 0), 0);
    struct sigaction sa = {};
    sa.sa_handler = handler_reads;
    sa.sa_flags = SA_RESTART | (on_signal_stack ? SA_ONSTACK : 0);
    struct sigaction old;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    std::atomic<pid_t> writing{0};
    ssize_t wrote = -1;
    std::thread writer([&] {
        if (on_signal_stack) {
            // Above every frame of this thread's stack (allocated after the
            // signal stack, so lower): a handler running there is higher on
            // "the stack" than the interrupted call.
            stack_t ss = {};
            ss.ss_size = 256 * 1024;
            ss.ss_sp = mmap(nullptr, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            sigaltstack(&ss, nullptr);
        }
        writing = gettid();
        size_t done = 0;
        for (ssize_t r; done < kOut && (r = write(p[1], n.out + done, kOut - done)) > 0;) done += static_cast<size_t>(r);
        wrote = static_cast<ssize_t>(done);
    });
    while (!writing) std::this_thread::yield();
    // (The staged write goes to the kernel as a vector.)
    EXPECT_TRUE(blocked_in(writing, SYS_writev)) << "the write never blocked";
    EXPECT_EQ(pthread_kill(writer.native_handle(), SIGUSR1), 0);
    for (int i = 0; i < 2000 && n.depth_seen < 0; ++i) usleep(1000);
    std::vector<uint8_t> got(filler + kOut);
    size_t have = 0;
    for (ssize_t r; have < got.size() && (r = read(p[0], got.data() + have, got.size() - have)) > 0;)
        have += static_cast<size_t>(r);
    writer.join();
    ASSERT_EQ(have, got.size());
    got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(filler));
    EXPECT_EQ(wrote, static_cast<ssize_t>(kOut));
    EXPECT_EQ(n.depth_seen, 1) << "after the handler's read, the interrupted write is still under way";
    EXPECT_TRUE(n.read_ok);
    for (size_t i = 0; i < kOut; ++i) ASSERT_EQ(got[i], pattern(i, 61)) << "the write sent other bytes at " << i;
    for (size_t i = 0; i < kIn; ++i) ASSERT_EQ(n.in[i], file_byte(i)) << i;
    EXPECT_EQ(calls_under_way(), 0);
    sigaction(SIGUSR1, &old, nullptr);
    close(p[0]);
    close(p[1]);
}

}  // namespace staging_test

using namespace staging_test;

TEST(StagingTest, AHandlersCallDuringAnotherKeepsItsBuffers) {
    TempFile f(kIn);
    for (bool on_signal_stack : {false, true}) {
        SCOPED_TRACE(on_signal_stack ? "on a signal stack" : "on the thread's stack");
        Nesting n;
        n.out = static_cast<uint8_t *>(malloc(kOut));
        n.in = static_cast<uint8_t *>(malloc(kIn));
        ASSERT_TRUE(shared(n.out) && shared(n.in));
        close_on_device(n.out, kOut, 61);
        n.file = f.fd;
        g_nesting = &n;
        write_interrupted_by_a_read(n, on_signal_stack);
        free(n.out);
        free(n.in);
    }
}

namespace staging_test {
sigjmp_buf g_timeout;
void on_alarm(int) { siglongjmp(g_timeout, 1); }

// A read of an empty pipe, which a timer's handler jumps out of.
__attribute__((noinline)) void read_cut_short(int fd, uint8_t *p) {
    if (sigsetjmp(g_timeout, 1) != 0) return;
    struct itimerval t = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &t, nullptr);
    ssize_t r = read(fd, p, kIn);
    ADD_FAILURE() << "the read of an empty pipe returned " << r;
}
}  // namespace staging_test

TEST(StagingTest, ALongjmpOutOfACallLeavesNoneUnderWay) {
    TempFile f(kIn);
    auto *p = static_cast<uint8_t *>(malloc(kIn));
    ASSERT_TRUE(shared(p));
    int empty[2];
    ASSERT_EQ(pipe(empty), 0);
    struct sigaction sa = {}, old;
    sa.sa_handler = on_alarm;
    ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
    // Three reads that never end, each cut short by a timeout.
    for (int round = 0; round < 3; ++round) read_cut_short(empty[0], p);
    sigaction(SIGALRM, &old, nullptr);
    // The next calls are outermost again, and their bytes right.
    for (int round = 0; round < 3; ++round) {
        close_on_device(p, kIn, 62);
        ASSERT_EQ(pread(f.fd, p, kIn, 0), static_cast<ssize_t>(kIn)) << strerror(errno);
        EXPECT_EQ(calls_under_way(), 0) << "an unfinished call is still counted";
        for (size_t i = 0; i < kIn; ++i) ASSERT_EQ(p[i], file_byte(i)) << i;
    }
    close(empty[0]);
    close(empty[1]);
    free(p);
}
