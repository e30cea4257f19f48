// POSIX asynchronous I/O on shared memory (interpose/async_io.cpp): the C
// library's helper threads make the system calls, which the kernel failed
// with EFAULT on a closed block.  Each request here uses buffers whose
// blocks a kernel wrote last (closed on every protocol but batch), and the
// program must find its bytes there as soon as it may know the request is
// over, and its aiocb as it made it.
#include <aio.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "helpers.h"
#include "os/fault_injection.h"

using namespace interpose_test;

namespace {

struct aiocb request(int fd, void *buf, size_t n, off_t off, int opcode = LIO_NOP) {
    struct aiocb cb = {};
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = n;
    cb.aio_offset = off;
    cb.aio_lio_opcode = opcode;
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    return cb;
}

void wait_for(const struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS) aio_suspend(list, 1, nullptr);
}

// Waits up to 10 s for flag to be set.
bool wait_for(const std::atomic<int> &flag) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flag.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return flag.load() != 0;
}

bool holds_file(const uint8_t *p, size_t n, size_t from) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != file_byte(from + i)) return false;
    return true;
}

}  // namespace

TEST(AsyncIoTest, ReadAndWriteWithClosedBlocks) {
    const size_t n = 5 * kThreshold + 333;
    TempFile f(n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 1);
    // A read into the middle of the object, found over by polling.
    struct aiocb cb = request(f.fd, p + 100, n - 1000, 500);
    ASSERT_EQ(aio_read(&cb), 0) << strerror(errno);
    while (aio_error(&cb) == EINPROGRESS) std::this_thread::yield();
    EXPECT_EQ(aio_error(&cb), 0);
    EXPECT_EQ(aio_return(&cb), static_cast<ssize_t>(n - 1000));
    EXPECT_EQ(const_cast<void *>(cb.aio_buf), p + 100) << "the aiocb names the program's buffer again";
    for (size_t i = 0; i < n; ++i) {
        uint8_t want = i >= 100 && i < n - 900 ? file_byte(500 + i - 100) : pattern(i, 1);
        ASSERT_EQ(p[i], want) << i;
    }
    EXPECT_EQ(aio_cancel(f.fd, &cb), AIO_ALLDONE);

    // A write of bytes only the device holds, and a read past the file's
    // end (a short count).
    close_on_device(p, n, 2);
    FILE *t = tmpfile();
    struct aiocb w = request(fileno(t), p, n, 0);
    ASSERT_EQ(aio_write(&w), 0) << strerror(errno);
    wait_for(&w);
    EXPECT_EQ(aio_return(&w), static_cast<ssize_t>(n));
    std::vector<uint8_t> back(n);
    ASSERT_EQ(pread(fileno(t), back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], pattern(i, 2)) << i;
    fclose(t);
    struct aiocb tail = request(f.fd, p, n, n - 50);
    ASSERT_EQ(aio_read64(reinterpret_cast<struct aiocb64 *>(&tail)), 0);
    wait_for(&tail);
    EXPECT_EQ(aio_return64(reinterpret_cast<struct aiocb64 *>(&tail)), 50);
    EXPECT_TRUE(holds_file(p, 50, n - 50));
    EXPECT_EQ(p[50], pattern(50, 2)) << "a byte the read did not reach";
    free(p);
}

namespace {
std::atomic<int> g_thread_saw{0};  // 1: the bytes were there; 2: they were not
std::atomic<void *> g_thread_value{nullptr};
std::atomic<int> g_signal_saw{0};
std::atomic<int> g_signal_code{0};
std::atomic<void *> g_signal_value{nullptr};
const uint8_t *g_signal_buffer = nullptr;
size_t g_signal_bytes = 0, g_signal_from = 0;

struct Expect {
    const uint8_t *p;
    size_t n, from;
};

void on_done_thread(union sigval v) {
    auto *e = static_cast<Expect *>(v.sival_ptr);
    g_thread_value.store(v.sival_ptr);
    g_thread_saw.store(holds_file(e->p, e->n, e->from) ? 1 : 2);
}

void on_done_signal(int, siginfo_t *info, void *) {
    g_signal_code.store(info->si_code);
    g_signal_value.store(info->si_value.sival_ptr);
    g_signal_saw.store(holds_file(g_signal_buffer, g_signal_bytes, g_signal_from) ? 1 : 2);
}
}  // namespace

// The notification the program asked for comes after the bytes are in its
// buffer, as the C library would send it.
TEST(AsyncIoTest, NotificationsComeOnceTheBytesAreThere) {
    const size_t n = 4 * kThreshold;
    TempFile f(2 * n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    close_on_device(p, n, 3);
    g_thread_saw.store(0);
    g_signal_saw.store(0);
    Expect e{p, n, 7};
    struct aiocb cb = request(f.fd, p, n, 7);
    cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
    cb.aio_sigevent.sigev_notify_function = &on_done_thread;
    cb.aio_sigevent.sigev_value.sival_ptr = &e;
    ASSERT_EQ(aio_read(&cb), 0);
    ASSERT_TRUE(wait_for(g_thread_saw)) << "no notification";
    EXPECT_EQ(g_thread_saw.load(), 1) << "the thread ran before the bytes were in the buffer";
    EXPECT_EQ(g_thread_value.load(), &e);
    EXPECT_EQ(aio_return(&cb), static_cast<ssize_t>(n));
    EXPECT_EQ(cb.aio_sigevent.sigev_notify_function, &on_done_thread) << "the aiocb names the program's notification again";

    struct sigaction sa = {}, old;
    sa.sa_sigaction = &on_done_signal;
    sa.sa_flags = SA_SIGINFO;
    const int sig = SIGRTMIN + 2;
    ASSERT_EQ(sigaction(sig, &sa, &old), 0);
    close_on_device(p, n, 4);
    g_signal_buffer = p;
    g_signal_bytes = n;
    g_signal_from = 1000;
    struct aiocb s = request(f.fd, p, n, 1000);
    s.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
    s.aio_sigevent.sigev_signo = sig;
    s.aio_sigevent.sigev_value.sival_ptr = &s;
    ASSERT_EQ(aio_read(&s), 0);
    ASSERT_TRUE(wait_for(g_signal_saw)) << "no signal";
    EXPECT_EQ(g_signal_saw.load(), 1) << "the handler ran before the bytes were in the buffer";
    EXPECT_EQ(g_signal_code.load(), SI_ASYNCIO);
    EXPECT_EQ(g_signal_value.load(), &s);
    EXPECT_EQ(aio_return(&s), static_cast<ssize_t>(n));
    sigaction(sig, &old, nullptr);
    free(p);
}

namespace {
std::atomic<int> g_list_saw{0};
void on_list_done(union sigval v) {
    auto *e = static_cast<Expect *>(v.sival_ptr);
    bool all = true;
    for (int i = 0; i < 2; ++i) all &= holds_file(e[i].p, e[i].n, e[i].from);
    g_list_saw.store(all ? 1 : 2);
}
}  // namespace

// A list of requests: once lio_listio has waited for them, and before the
// list's own notification.
TEST(AsyncIoTest, ListsOfRequests) {
    const size_t n = 3 * kThreshold;
    TempFile f(4 * n);
    auto *a = static_cast<uint8_t *>(malloc(n));
    auto *b = static_cast<uint8_t *>(malloc(n));
    auto *c = static_cast<uint8_t *>(malloc(n));
    close_on_device(a, n, 5);
    close_on_device(b, n, 6);
    close_on_device(c, n, 7);
    FILE *t = tmpfile();
    struct aiocb ra = request(f.fd, a, n, 0, LIO_READ), rb = request(f.fd, b, n, n, LIO_READ),
                 wc = request(fileno(t), c, n, 0, LIO_WRITE), nop = request(f.fd, a, n, 0, LIO_NOP);
    struct aiocb *list[] = {&ra, nullptr, &rb, &wc, &nop};
    ASSERT_EQ(lio_listio(LIO_WAIT, list, 5, nullptr), 0) << strerror(errno);
    EXPECT_TRUE(holds_file(a, n, 0));
    EXPECT_TRUE(holds_file(b, n, n));
    EXPECT_EQ(const_cast<void *>(ra.aio_buf), a);
    EXPECT_EQ(const_cast<void *>(wc.aio_buf), c);
    std::vector<uint8_t> back(n);
    ASSERT_EQ(pread(fileno(t), back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], pattern(i, 7)) << i;
    fclose(t);

    close_on_device(a, n, 8);
    close_on_device(b, n, 9);
    g_list_saw.store(0);
    Expect e[2] = {{a, n, 2 * n}, {b, n, 3 * n}};
    struct aiocb la = request(f.fd, a, n, 2 * n, LIO_READ), lb = request(f.fd, b, n, 3 * n, LIO_READ);
    struct aiocb *nowait[] = {&la, &lb};
    struct sigevent done = {};
    done.sigev_notify = SIGEV_THREAD;
    done.sigev_notify_function = &on_list_done;
    done.sigev_value.sival_ptr = e;
    ASSERT_EQ(lio_listio(LIO_NOWAIT, nowait, 2, &done), 0);
    ASSERT_TRUE(wait_for(g_list_saw)) << "no notification";
    EXPECT_EQ(g_list_saw.load(), 1) << "the list's notification came before its bytes";
    EXPECT_EQ(aio_return(&la), static_cast<ssize_t>(n));
    EXPECT_EQ(aio_return(&lb), static_cast<ssize_t>(n));
    free(a);
    free(b);
    free(c);
}

// A read whose bytes cannot reach shared memory (the device copy fails)
// ends in EIO rather than as if they had.
TEST(AsyncIoTest, AReadWhoseBytesCannotBeStoredEndsInEio) {
    namespace inj = adsm::os::injection;
    const size_t n = 256 * 1024;
    TempFile f(n);
    uint8_t *p = closed_new_object(n, 10);
    ASSERT_NE(p, nullptr);
    const std::string protocol = protocol_in_use();
    struct aiocb cb = request(f.fd, p, n, 0);
    ASSERT_EQ(aio_read(&cb), 0);
    // (Over, as the C library sees it, before the runtime settles it.)
    while (__atomic_load_n(&cb.__error_code, __ATOMIC_ACQUIRE) == EINPROGRESS) std::this_thread::yield();
    inj::arm(inj::Site::device_copy, 1);
    int err = aio_error(&cb);
    inj::arm(inj::Site::device_copy, 0);
    // (Batch writes the host copy, which cannot fail.)
    if (protocol != "batch") {
        EXPECT_EQ(err, EIO) << protocol << ": the read ended as if its bytes were stored";
        EXPECT_EQ(aio_return(&cb), -1);
    }
    ASSERT_EQ(pread(f.fd, p, n, 0), static_cast<ssize_t>(n));
    EXPECT_TRUE(holds_file(p, n, 0));
    adsmFree(p);
}

namespace {
std::atomic<int> g_notified{0};
void count_notice(union sigval) { g_notified.fetch_add(1); }
}  // namespace

// Threads polling their requests while the runtime's notification threads
// settle the same requests: each request settles once, whoever comes first,
// and nobody sees it over before its bytes are in place.
TEST(AsyncIoTest, ThreadsRaceTheNotificationsToSettle) {
    const size_t piece = kThreshold + 4096;
    const int threads = 4, each = 10;
    TempFile f(piece * threads * each);
    auto *p = static_cast<uint8_t *>(malloc(piece * threads * each));
    close_on_device(p, piece * threads * each, 11);
    g_notified.store(0);
    std::atomic<int> bad{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int k = 0; k < each; ++k) {
                size_t at = (size_t(t) * each + k) * piece;
                struct aiocb cb = request(f.fd, p + at, piece, static_cast<off_t>(at));
                cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
                cb.aio_sigevent.sigev_notify_function = &count_notice;
                if (aio_read(&cb) != 0) {
                    bad.fetch_add(1);
                    continue;
                }
                while (aio_error(&cb) == EINPROGRESS) std::this_thread::yield();
                if (aio_return(&cb) != static_cast<ssize_t>(piece) || !holds_file(p + at, piece, at)) bad.fetch_add(1);
            }
        });
    for (auto &t : pool) t.join();
    EXPECT_EQ(bad.load(), 0);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (g_notified.load() < threads * each && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(g_notified.load(), threads * each) << "every notification reached the program";
    free(p);
}

// Linux's native asynchronous I/O, by number as libaio makes it: a read
// into and a write out of closed blocks; their completions hand the
// program the bytes.
TEST(AsyncIoTest, LinuxNativeRequestsByNumber) {
    const size_t n = 3 * kThreshold + 100;
    TempFile f(2 * n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    auto *q = static_cast<uint8_t *>(malloc(n));
    close_on_device(p, n, 20);
    close_on_device(q, n, 21);
    FILE *t = tmpfile();
    aio_context_t ctx = 0;
    ASSERT_EQ(syscall(SYS_io_setup, 8, &ctx), 0) << strerror(errno);
    struct iocb rd = {}, wr = {};
    rd.aio_lio_opcode = IOCB_CMD_PREAD;
    rd.aio_fildes = static_cast<uint32_t>(f.fd);
    rd.aio_buf = reinterpret_cast<uint64_t>(p);
    rd.aio_nbytes = n;
    rd.aio_offset = 50;
    rd.aio_data = 1;
    wr.aio_lio_opcode = IOCB_CMD_PWRITE;
    wr.aio_fildes = static_cast<uint32_t>(fileno(t));
    wr.aio_buf = reinterpret_cast<uint64_t>(q);
    wr.aio_nbytes = n;
    wr.aio_data = 2;
    struct iocb *list[] = {&rd, &wr};
    ASSERT_EQ(syscall(SYS_io_submit, ctx, 2, list), 2) << strerror(errno);
    EXPECT_EQ(rd.aio_buf, reinterpret_cast<uint64_t>(p)) << "the iocb names the program's buffer again";
    struct io_event ev[2];
    long got = 0;
    while (got < 2) {
        long r = syscall(SYS_io_getevents, ctx, 1, 2 - got, ev + got, nullptr);
        ASSERT_GT(r, 0) << strerror(errno);
        got += r;
    }
    for (const auto &e : ev) EXPECT_EQ(e.res, static_cast<int64_t>(n)) << "request " << e.data;
    EXPECT_TRUE(holds_file(p, n, 50));
    std::vector<uint8_t> back(n);
    ASSERT_EQ(pread(fileno(t), back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], pattern(i, 21)) << i;
    EXPECT_EQ(syscall(SYS_io_destroy, ctx), 0);
    fclose(t);
    free(p);
    free(q);
}

// Vector requests: a read into, and a write out of, pieces of which two
// are closed blocks and one is private memory; the program reuses its
// vectors as soon as io_submit returns, as the kernel lets it.
TEST(AsyncIoTest, LinuxNativeVectorRequestsByNumber) {
    const size_t n = 2 * kThreshold + 300;
    TempFile f(4 * n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    auto *q = static_cast<uint8_t *>(malloc(n));
    uint8_t mine[1000];
    close_on_device(p, n, 22);
    close_on_device(q, n, 23);
    for (size_t i = 0; i < sizeof mine; ++i) mine[i] = static_cast<uint8_t>(i ^ 0x5a);
    FILE *t = tmpfile();
    aio_context_t ctx = 0;
    ASSERT_EQ(syscall(SYS_io_setup, 8, &ctx), 0) << strerror(errno);
    struct iovec rv[3] = {{p + 10, n - 10}, {mine, sizeof mine}, {q + 5, 777}};
    struct iocb rd = {};
    rd.aio_lio_opcode = IOCB_CMD_PREADV;
    rd.aio_fildes = static_cast<uint32_t>(f.fd);
    rd.aio_buf = reinterpret_cast<uint64_t>(rv);
    rd.aio_nbytes = 3;
    rd.aio_offset = 99;
    struct iocb *list[] = {&rd};
    ASSERT_EQ(syscall(SYS_io_submit, ctx, 1, list), 1) << strerror(errno);
    EXPECT_EQ(rd.aio_buf, reinterpret_cast<uint64_t>(rv)) << "the iocb names the program's vector again";
    EXPECT_EQ(rd.aio_nbytes, 3u);
    memset(rv, 0, sizeof rv);
    struct io_event ev;
    ASSERT_EQ(syscall(SYS_io_getevents, ctx, 1, 1, &ev, nullptr), 1) << strerror(errno);
    const size_t total = n - 10 + sizeof mine + 777;
    ASSERT_EQ(ev.res, static_cast<int64_t>(total));
    for (size_t i = 0; i < n - 10; ++i) ASSERT_EQ(p[10 + i], file_byte(99 + i)) << i;
    for (size_t i = 0; i < sizeof mine; ++i) ASSERT_EQ(mine[i], file_byte(99 + n - 10 + i)) << i;
    for (size_t i = 0; i < 777; ++i) ASSERT_EQ(q[5 + i], file_byte(99 + n - 10 + sizeof mine + i)) << i;
    EXPECT_EQ(p[0], pattern(0, 22));
    EXPECT_EQ(q[4], pattern(4, 23));
    EXPECT_EQ(q[5 + 777], pattern(5 + 777, 23));

    // And out: the device's bytes and the private ones, in order.
    close_on_device(p, n, 24);
    struct iovec wv[2] = {{mine, 100}, {p + 1, n - 1}};
    struct iocb wr = {};
    wr.aio_lio_opcode = IOCB_CMD_PWRITEV;
    wr.aio_fildes = static_cast<uint32_t>(fileno(t));
    wr.aio_buf = reinterpret_cast<uint64_t>(wv);
    wr.aio_nbytes = 2;
    list[0] = &wr;
    ASSERT_EQ(syscall(SYS_io_submit, ctx, 1, list), 1) << strerror(errno);
    memset(wv, 0, sizeof wv);
    ASSERT_EQ(syscall(SYS_io_getevents, ctx, 1, 1, &ev, nullptr), 1) << strerror(errno);
    ASSERT_EQ(ev.res, static_cast<int64_t>(100 + n - 1));
    std::vector<uint8_t> back(100 + n - 1);
    ASSERT_EQ(pread(fileno(t), back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(back[i], mine[i]) << i;
    for (size_t i = 0; i < n - 1; ++i) ASSERT_EQ(back[100 + i], pattern(1 + i, 24)) << i;
    EXPECT_EQ(syscall(SYS_io_destroy, ctx), 0);
    fclose(t);
    free(p);
    free(q);
}
