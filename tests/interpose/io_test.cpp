// I/O on shared memory must behave exactly as the same call on ordinary
// memory: each test runs a call both ways and compares results and errno.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"
#include "os/fault_injection.h"

using namespace interpose_test;

TEST(IoTest, ReadIntoSharedMemoryInEveryState) {
    const size_t n = 6 * 256 * 1024 + 1234;
    TempFile f(n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    // Closed blocks (data on the device), open ones, and a partial block.
    close_on_device(p, n, 1);
    p[100] = 42;
    uint64_t fetched = counter(adsm::Counter::d2h_bytes);
    ASSERT_EQ(pread(f.fd, p + 256 * 1024, 3 * 256 * 1024 + 10, 256 * 1024),
              static_cast<ssize_t>(3 * 256 * 1024 + 10));
    fetched = counter(adsm::Counter::d2h_bytes) - fetched;
    EXPECT_LE(fetched, 256u * 1024) << "blocks the read covers whole are not fetched first";
    for (size_t i = 0; i < n; ++i) {
        uint8_t want = i >= 256 * 1024 && i < 4 * 256 * 1024 + 10 ? file_byte(i) : i == 100 ? 42 : pattern(i, 1);
        ASSERT_EQ(p[i], want) << i;
    }
    // read and readv at the file position, to EOF.
    lseek(f.fd, 0, SEEK_SET);
    close_on_device(p, n, 2);
    struct iovec iov[3] = {{p, 1000}, {p + 5000, 300000}, {p + 400000, n - 400000}};
    ASSERT_EQ(readv(f.fd, iov, 3), static_cast<ssize_t>(n - 99000));
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(p[i], file_byte(i));
    for (size_t i = 0; i < 300000; ++i) ASSERT_EQ(p[5000 + i], file_byte(1000 + i));
    EXPECT_EQ(read(f.fd, p, 200000), 99000) << "the rest of the file";
    EXPECT_EQ(read(f.fd, p, 10), 0) << "EOF";
    free(p);
}

// A big read into memory whose data is on the device: the blocks it
// overwrites whole go from staging to the device while the next round's
// call runs, on any of several devices (each ticket names its device).
TEST(IoTest, BigReadsSendWholeBlocksWhileTheNextRoundIsRead) {
    const size_t n = (12u << 20) + 4096;
    TempFile f(n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 4);
    const std::string protocol = protocol_in_use();
    const uint64_t async = counter(adsm::Counter::async_copies);
    ASSERT_EQ(read(f.fd, p, n), static_cast<ssize_t>(n));
    // (batch takes the object whole: a round's data goes to its host copy,
    // and an integrated device has no other.  The others send each round to
    // the device, lazy's one block included, while the next round is read.)
    if (protocol != "batch" && !device_is_integrated()) {
        EXPECT_GT(counter(adsm::Counter::async_copies), async) << protocol << ": every copy was synchronous";
    }
    for (size_t i = 0; i < n; i += 509) ASSERT_EQ(p[i], file_byte(i)) << i;
    close_on_device(p, n, 5);  // the data on the device is the file's, plus what the kernel adds
    for (size_t i = 0; i < n; i += 509) ASSERT_EQ(p[i], pattern(i, 5)) << i;
    free(p);
}

// A read whose bytes cannot reach shared memory (the device copy fails on
// the spot, in the one synchronous round of a read that fits staging)
// fails with EIO rather than returning as if they had; the memory stays
// usable and a second read brings them.
TEST(IoTest, AReadWhoseBytesCannotBeStoredFailsWithEio) {
    namespace inj = adsm::os::injection;
    const size_t n = 256 * 1024;
    TempFile f(n);
    uint8_t *p = closed_new_object(n, 6);
    ASSERT_TRUE(shared(p));
    const std::string protocol = protocol_in_use();
    inj::arm(inj::Site::device_copy, 1);
    errno = 0;
    ssize_t got = read(f.fd, p, n);
    int err = errno;
    inj::arm(inj::Site::device_copy, 0);
    // (Batch writes the host copy, which cannot fail.)
    if (protocol != "batch") {
        EXPECT_EQ(got, -1) << protocol << ": the read returned as if its bytes were stored";
        EXPECT_EQ(err, EIO);
    }
    ASSERT_EQ(pread(f.fd, p, n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; i += 97) ASSERT_EQ(p[i], file_byte(i)) << i;
    adsmFree(p);
}

TEST(IoTest, WriteFromSharedMemoryInEveryState) {
    const size_t n = 5 * 256 * 1024 + 77;
    auto *p = static_cast<uint8_t *>(malloc(n));
    close_on_device(p, n, 3);
    p[7] = 0xee;  // one open block with a CPU write
    char tmpl[] = "/tmp/adsm-io-XXXXXX";
    int fd = mkstemp(tmpl);
    unlink(tmpl);
    EXPECT_EQ(write(fd, p, n), static_cast<ssize_t>(n));
    struct iovec iov[2] = {{p + 10, 100}, {p + 300000, 200000}};
    EXPECT_EQ(pwritev(fd, iov, 2, 1000000000), 200100);
    std::vector<uint8_t> back(n);
    ASSERT_EQ(pread(fd, back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], i == 7 ? 0xee : pattern(i, 3)) << i;
    ASSERT_EQ(pread(fd, back.data(), 200100, 1000000000), 200100);
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(back[i], pattern(10 + i, 3));
    close(fd);
    free(p);
}

// More iovecs than one round of staging takes (64), each in shared memory
// whose data is on the device: every one is staged, in later rounds too,
// none handed to the kernel as it is.
TEST(IoTest, MoreIovecsThanOneRoundTakes) {
    constexpr int kIovecs = 100;
    constexpr size_t kEach = 1000, n = kIovecs * 2 * kEach;
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 9);
    struct iovec iov[kIovecs];
    for (int i = 0; i < kIovecs; ++i) iov[i] = {p + 2 * kEach * i, kEach};
    char tmpl[] = "/tmp/adsm-io-XXXXXX";
    int fd = mkstemp(tmpl);
    unlink(tmpl);
    ASSERT_EQ(writev(fd, iov, kIovecs), static_cast<ssize_t>(kIovecs * kEach)) << strerror(errno);
    std::vector<uint8_t> back(kIovecs * kEach);
    ASSERT_EQ(pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
    for (size_t i = 0; i < back.size(); ++i)
        ASSERT_EQ(back[i], pattern(2 * kEach * (i / kEach) + i % kEach, 9)) << i;
    // And back in, over a fresh device copy.
    close_on_device(p, n, 50);
    ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
    ASSERT_EQ(readv(fd, iov, kIovecs), static_cast<ssize_t>(kIovecs * kEach)) << strerror(errno);
    for (size_t i = 0; i < n; ++i) {
        const size_t k = i / (2 * kEach), at = i % (2 * kEach);
        ASSERT_EQ(p[i], at < kEach ? back[k * kEach + at] : pattern(i, 50)) << i;
    }
    close(fd);
    free(p);
}

// Each positioned vector call, in both offset widths (a program built with
// -D_FILE_OFFSET_BITS=64 calls the *64 ones), moves shared memory whose
// data is on the device.
TEST(IoTest, PositionedVectorCallsOfBothOffsetWidths) {
    const size_t n = 3 * 256 * 1024 + 99, len = 2 * 256 * 1024 + 7;
    TempFile f(n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    using Read = ssize_t (*)(int, const struct iovec *, int, off64_t);
    const std::pair<const char *, Read> reads[] = {
        {"preadv", [](int fd, const struct iovec *v, int c, off64_t o) { return preadv(fd, v, c, o); }},
        {"preadv64", [](int fd, const struct iovec *v, int c, off64_t o) { return preadv64(fd, v, c, o); }},
        {"preadv2", [](int fd, const struct iovec *v, int c, off64_t o) { return preadv2(fd, v, c, o, 0); }},
        {"preadv64v2", [](int fd, const struct iovec *v, int c, off64_t o) { return preadv64v2(fd, v, c, o, 0); }},
    };
    uint8_t v = 10;
    for (const auto &[name, call] : reads) {
        close_on_device(p, n, ++v);
        struct iovec iov = {p + 4096, len};
        ASSERT_EQ(call(f.fd, &iov, 1, 1000), static_cast<ssize_t>(len)) << name << ": " << strerror(errno);
        for (size_t i = 0; i < n; ++i) {
            uint8_t want = i >= 4096 && i < 4096 + len ? file_byte(1000 + i - 4096) : pattern(i, v);
            ASSERT_EQ(p[i], want) << name << " at " << i;
        }
    }
    using Write = ssize_t (*)(int, const struct iovec *, int, off64_t);
    const std::pair<const char *, Write> writes[] = {
        {"pwritev", [](int fd, const struct iovec *w, int c, off64_t o) { return pwritev(fd, w, c, o); }},
        {"pwritev64", [](int fd, const struct iovec *w, int c, off64_t o) { return pwritev64(fd, w, c, o); }},
        {"pwritev2", [](int fd, const struct iovec *w, int c, off64_t o) { return pwritev2(fd, w, c, o, 0); }},
        {"pwritev64v2", [](int fd, const struct iovec *w, int c, off64_t o) { return pwritev64v2(fd, w, c, o, 0); }},
    };
    for (const auto &[name, call] : writes) {
        close_on_device(p, n, ++v);
        struct iovec iov = {p + 4096, len};
        ASSERT_EQ(call(f.fd, &iov, 1, 123), static_cast<ssize_t>(len)) << name << ": " << strerror(errno);
        std::vector<uint8_t> back(len);
        ASSERT_EQ(::pread(f.fd, back.data(), len, 123), static_cast<ssize_t>(len));
        for (size_t i = 0; i < len; ++i) ASSERT_EQ(back[i], pattern(4096 + i, v)) << name << " at " << i;
    }
    free(p);
}

extern "C" ssize_t __read(int, void *, size_t);
extern "C" ssize_t __write(int, const void *, size_t);
extern "C" ssize_t __pread64(int, void *, size_t, off64_t);

// The C library's second names for the calls move shared memory too.
TEST(IoTest, TheCLibrarysOtherNames) {
    const size_t n = 2 * 256 * 1024 + 5;
    TempFile f(n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 21);
    ASSERT_EQ(__read(f.fd, p, n), static_cast<ssize_t>(n)) << strerror(errno);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], file_byte(i)) << i;
    close_on_device(p, n, 22);
    ASSERT_EQ(__pread64(f.fd, p + 3, 1000, 77), 1000) << strerror(errno);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(p[3 + i], file_byte(77 + i)) << i;
    close_on_device(p, n, 23);
    lseek(f.fd, 0, SEEK_SET);
    ASSERT_EQ(__write(f.fd, p, n), static_cast<ssize_t>(n)) << strerror(errno);
    std::vector<uint8_t> back(n);
    ASSERT_EQ(::pread(f.fd, back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], pattern(i, 23)) << i;
    free(p);
}

// Several datagrams per call, each from and into shared memory whose data
// is on the device.
TEST(IoTest, SendmmsgAndRecvmmsg) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    const size_t n = 3 * 256 * 1024, len = 60000;
    auto *out = static_cast<uint8_t *>(malloc(n));
    auto *in = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(out) && shared(in));
    close_on_device(out, n, 31);
    close_on_device(in, n, 32);
    struct iovec sv_iov[3], rv_iov[3];
    struct mmsghdr sm[3] = {}, rm[3] = {};
    for (int i = 0; i < 3; ++i) {
        sv_iov[i] = {out + static_cast<size_t>(i) * 256 * 1024 + 100, len};
        rv_iov[i] = {in + static_cast<size_t>(i) * 256 * 1024 + 7, len};
        sm[i].msg_hdr.msg_iov = &sv_iov[i];
        sm[i].msg_hdr.msg_iovlen = 1;
        rm[i].msg_hdr.msg_iov = &rv_iov[i];
        rm[i].msg_hdr.msg_iovlen = 1;
    }
    ASSERT_EQ(sendmmsg(sv[0], sm, 3, 0), 3) << strerror(errno);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(sm[i].msg_len, len);
    ASSERT_EQ(recvmmsg(sv[1], rm, 3, MSG_WAITFORONE, nullptr), 3) << strerror(errno);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rm[i].msg_len, len);
        size_t src = static_cast<size_t>(i) * 256 * 1024 + 100, dst = static_cast<size_t>(i) * 256 * 1024 + 7;
        for (size_t k = 0; k < len; ++k) ASSERT_EQ(in[dst + k], pattern(src + k, 31)) << i << " at " << k;
    }
    // Nothing left: a non-blocking call says so, as the system call does.
    errno = 0;
    EXPECT_EQ(recvmmsg(sv[1], rm, 3, MSG_DONTWAIT, nullptr), -1);
    EXPECT_EQ(errno, EAGAIN);
    close(sv[0]);
    close(sv[1]);
    free(out);
    free(in);
}

// Eight threads allocate shared memory, launch kernels on it and do I/O
// from and into it, all at once, each checking every byte it gets back.
TEST(IoTest, EightThreadsAllocateLaunchAndDoIoAtOnce) {
    char tmpl[] = "/tmp/adsm-io-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    unlink(tmpl);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t));
            const off_t base = static_cast<off_t>(t) * (8 << 20);
            for (int round = 0; round < 12 && failures.load() == 0; ++round) {
                size_t n = kThreshold + rng() % (3 << 20);
                auto *out = static_cast<uint8_t *>(malloc(n));
                auto *in = static_cast<uint8_t *>(malloc(n));
                auto v = static_cast<uint8_t>(t * 16 + round);
                close_on_device(out, n, v);       // out's data on the device
                close_on_device(in, n, v + 1);    // in's too, to be overwritten
                if (pwrite(fd, out, n, base) != static_cast<ssize_t>(n) ||
                    pread(fd, in, n, base) != static_cast<ssize_t>(n))
                    failures++;
                for (size_t i = 0; i < n && failures.load() == 0; ++i)
                    if (in[i] != pattern(i, v)) failures++;
                free(out);
                free(in);
            }
        });
    for (auto &th : threads) th.join();
    close(fd);
    EXPECT_EQ(failures.load(), 0);
}

TEST(IoTest, PipesGiveShortReadsAndEintrAsUsual) {
    auto *p = static_cast<uint8_t *>(malloc(kThreshold * 4));
    close_on_device(p, kThreshold * 4, 5);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], "hello", 5), 5);
    EXPECT_EQ(read(fds[0], p, kThreshold * 4), 5) << "one read returns what is there";
    EXPECT_EQ(memcmp(p, "hello", 5), 0);
    EXPECT_EQ(p[5], pattern(5, 5)) << "the rest is untouched";
    // A signal interrupts a blocked read before any data: -1 and EINTR.
    struct sigaction sa = {}, old = {};
    sa.sa_handler = [](int) {};
    sigaction(SIGALRM, &sa, &old);  // no SA_RESTART
    std::thread t([] {
        usleep(100000);
        kill(getpid(), SIGALRM);
    });
    errno = 0;
    EXPECT_EQ(read(fds[0], p, 100), -1);
    EXPECT_EQ(errno, EINTR);
    t.join();
    sigaction(SIGALRM, &old, nullptr);
    // EOF once the writer is gone.
    close(fds[1]);
    EXPECT_EQ(read(fds[0], p, 100), 0);
    close(fds[0]);
    free(p);
}

TEST(IoTest, SocketsBothWays) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    auto *out = static_cast<uint8_t *>(malloc(kThreshold * 2));
    auto *in = static_cast<uint8_t *>(malloc(kThreshold * 2));
    close_on_device(out, kThreshold * 2, 6);
    close_on_device(in, kThreshold * 2, 0);
    std::thread writer([&] { EXPECT_EQ(send(sv[0], out, kThreshold * 2, 0), static_cast<ssize_t>(kThreshold * 2)); });
    size_t got = 0;
    while (got < kThreshold * 2) {
        ssize_t r = recv(sv[1], in + got, kThreshold * 2 - got, 0);
        ASSERT_GT(r, 0);
        got += static_cast<size_t>(r);
    }
    writer.join();
    for (size_t i = 0; i < kThreshold * 2; ++i) ASSERT_EQ(in[i], pattern(i, 6)) << i;
    // Datagrams keep their bounds and MSG_TRUNC reports the true size.
    int dg[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
    ASSERT_EQ(sendto(dg[0], out, 1000, 0, nullptr, 0), 1000);
    EXPECT_EQ(recvfrom(dg[1], in, 10, MSG_TRUNC, nullptr, nullptr), 1000);
    EXPECT_EQ(in[9], pattern(9, 6));
    struct iovec iov = {in, 500};
    struct msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    ASSERT_EQ(sendmsg(dg[0], &m, 0), 500);
    ASSERT_EQ(recvmsg(dg[1], &m, 0), 500);
    for (int fd : {sv[0], sv[1], dg[0], dg[1]}) close(fd);
    free(out);
    free(in);
}

TEST(IoTest, StdioFreadAndFwrite) {
    const size_t n = 3 * 256 * 1024 + 11;
    TempFile f(n);
    FILE *fp = fdopen(dup(f.fd), "r");
    auto *p = static_cast<uint8_t *>(malloc(n));
    close_on_device(p, n, 8);
    ASSERT_EQ(fread(p, 1, 5, fp), 5u);  // a small read through stdio's buffer
    ASSERT_EQ(fread(p + 5, 4, n, fp), (n - 5) / 4) << "stops at EOF, counts whole items";
    for (size_t i = 0; i < n - 3; ++i) ASSERT_EQ(p[i], file_byte(i)) << i;
    EXPECT_TRUE(feof(fp));
    fclose(fp);
    FILE *w = tmpfile();
    EXPECT_EQ(fwrite(p, 3, n / 3, w), n / 3);
    rewind(w);
    std::vector<uint8_t> back(n);
    EXPECT_EQ(fread(back.data(), 1, n, w), n / 3 * 3);
    EXPECT_EQ(memcmp(back.data(), p, n / 3 * 3), 0);
    fclose(w);
    free(p);
}

// System calls by number (syscall(2)) move shared buffers as the C
// library's functions do; the rest go on as they are.
TEST(IoTest, SystemCallsByNumber) {
    const size_t n = 3 * kThreshold + 5;
    TempFile f(2 * n);
    auto *p = static_cast<uint8_t *>(malloc(n));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n, 12);
    ASSERT_EQ(syscall(SYS_pread64, f.fd, p, n, 100), static_cast<long>(n)) << strerror(errno);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], file_byte(100 + i)) << i;
    close_on_device(p, n, 13);
    ASSERT_EQ(syscall(SYS_read, f.fd, p, 1000), 1000) << strerror(errno);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(p[i], file_byte(i)) << i;
    close_on_device(p, n, 14);
    struct iovec iov[2] = {{p, 10}, {p + kThreshold, kThreshold}};
    ASSERT_EQ(syscall(SYS_preadv, f.fd, iov, 2, 7, 0), static_cast<long>(kThreshold + 10));
    for (size_t i = 0; i < kThreshold; ++i) ASSERT_EQ(p[kThreshold + i], file_byte(17 + i)) << i;
    EXPECT_EQ(p[10], pattern(10, 14));

    close_on_device(p, n, 15);
    FILE *t = tmpfile();
    ASSERT_EQ(syscall(SYS_write, fileno(t), p, n), static_cast<long>(n)) << strerror(errno);
    std::vector<uint8_t> back(n);
    ASSERT_EQ(pread(fileno(t), back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], pattern(i, 15)) << i;
    fclose(t);

    close_on_device(p, n, 16);
    ASSERT_EQ(syscall(SYS_getrandom, p, 4096, 0), 4096) << strerror(errno);
    size_t same = 0;
    for (size_t i = 0; i < 4096; ++i) same += p[i] == pattern(i, 16);
    EXPECT_LT(same, 100u) << "random bytes did not reach the buffer";
    EXPECT_EQ(p[4096], pattern(4096, 16));

    // Errors as the kernel gives them, and calls that move no buffer.
    errno = 0;
    EXPECT_EQ(syscall(SYS_read, -1, p, 10), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(syscall(SYS_getpid), getpid());
    free(p);
}

// A buffer the program gives a stream: the C library fills and drains it
// with system calls of its own, which the kernel fails with EFAULT in a
// closed block of shared memory (the stream then reads as empty, or loses
// what it held for writing).
TEST(IoTest, AStreamsBufferInSharedMemory) {
    const size_t n = 5 * kThreshold + 77, size = 2 * kThreshold;
    TempFile f(n);
    auto *vb = static_cast<uint8_t *>(malloc(size));
    ASSERT_TRUE(shared(vb));
    close_on_device(vb, size, 4);
    FILE *fp = fdopen(dup(f.fd), "r");
    ASSERT_EQ(setvbuf(fp, reinterpret_cast<char *>(vb), _IOFBF, size), 0);
    std::vector<uint8_t> in;
    for (int c; (c = fgetc(fp)) != EOF;) in.push_back(static_cast<uint8_t>(c));
    EXPECT_FALSE(ferror(fp));
    ASSERT_EQ(in.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(in[i], file_byte(i)) << i;
    EXPECT_EQ(fclose(fp), 0);

    // What a stream holds for writing outlasts a call, which sends the
    // context's objects to the device.
    FILE *w = tmpfile();
    ASSERT_EQ(setvbuf(w, reinterpret_cast<char *>(vb), _IOFBF, size), 0);
    for (size_t i = 0; i < 3000; ++i) ASSERT_EQ(fputc(file_byte(i), w), file_byte(i));
    auto *other = static_cast<uint8_t *>(malloc(kThreshold));
    close_on_device(other, kThreshold, 6);
    ASSERT_EQ(fflush(w), 0) << strerror(errno);
    rewind(w);
    for (size_t i = 0; i < 3000; ++i) ASSERT_EQ(fgetc(w), file_byte(i)) << i;
    EXPECT_EQ(fgetc(w), EOF);
    EXPECT_EQ(fclose(w), 0);

    // The stream drops the buffer when it reopens (setbuf, the other name),
    // and a later setvbuf before any I/O replaces it.
    FILE *r = fdopen(dup(f.fd), "r");
    setbuf(r, reinterpret_cast<char *>(vb));
    ASSERT_EQ(fseek(r, 0, SEEK_SET), 0);
    EXPECT_EQ(fgetc(r), file_byte(0));
    ASSERT_EQ(freopen(f.path.c_str(), "r", r), r);
    char line[100];
    ASSERT_EQ(setvbuf(r, reinterpret_cast<char *>(vb), _IOFBF, size), 0);
    ASSERT_EQ(setvbuf(r, line, _IOFBF, sizeof line), 0);
    std::vector<uint8_t> again(n);
    EXPECT_EQ(fread(again.data(), 1, n, r), n);
    EXPECT_EQ(memcmp(again.data(), in.data(), n), 0);
    EXPECT_EQ(fclose(r), 0);
    // The program's buffer is as the kernel left it: the streams used others.
    for (size_t i = 0; i < size; ++i) ASSERT_EQ(vb[i], pattern(i, 4)) << i;
    free(other);
    free(vb);
}

TEST(IoTest, BadInputGetsWhatTheCLibraryGives) {
    auto *p = static_cast<uint8_t *>(malloc(kThreshold));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    // A closed descriptor.
    int closed = dup(fds[0]);
    close(closed);
    errno = 0;
    EXPECT_EQ(read(closed, p, 10), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(write(closed, p, 10), -1);
    EXPECT_EQ(errno, EBADF);
    // NULL buffers.
    ASSERT_EQ(::write(fds[1], "abc", 3), 3);
    EXPECT_EQ(read(fds[0], opaque<void *>(nullptr), 3), -1);
    EXPECT_EQ(errno, EFAULT);
    // A size that overflows the address space (from shared memory, so the
    // interposer sees it).
    EXPECT_EQ(write(fds[1], p, opaque(SIZE_MAX)), -1);
    int overflow_errno = errno;
    int ref = ::write(fds[1], reinterpret_cast<void *>(&fds), opaque(SIZE_MAX)) == -1 ? errno : 0;
    EXPECT_EQ(overflow_errno, ref);
    close(fds[0]);
    close(fds[1]);
    free(p);
}

namespace {

// A buffer whose last bytes sit just before an inaccessible page: in
// ordinary memory, and in shared memory (an allocation followed by a freed,
// quarantined one).  Each test runs a call on both and compares.
struct EdgeBuffers {
    uint8_t *ordinary;  // 64K accessible, then a PROT_NONE page
    uint8_t *shared_mem = nullptr;
    void *map;
    EdgeBuffers() {
        map = mmap(nullptr, kThreshold + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(static_cast<uint8_t *>(map) + kThreshold, 4096, PROT_NONE);
        ordinary = static_cast<uint8_t *>(map);
        // Two allocations in a row; the second is freed, so it stays
        // inaccessible (and quarantined, so not reused soon).  (adsmAlloc's:
        // a freed malloc block may be kept for the next malloc, open.)
        std::vector<std::pair<void *, void *>> misses;
        for (int i = 0; i < 200; ++i) {
            auto *a = static_cast<uint8_t *>(malloc(kThreshold));
            void *after = adsmAlloc(kThreshold);
            if (after == a + kThreshold) {
                shared_mem = a;
                adsmFree(after);
                break;
            }
            misses.emplace_back(a, after);
        }
        for (auto [m, a] : misses) {
            free(m);
            adsmFree(a);
        }
        EXPECT_NE(shared_mem, nullptr);
        close_on_device(shared_mem, kThreshold, 4);
    }
    ~EdgeBuffers() {
        munmap(map, kThreshold + 4096);
        free(shared_mem);
    }
};

struct Outcome {
    ssize_t result;
    int err;
    bool operator==(const Outcome &o) const { return result == o.result && (result >= 0 || err == o.err); }
};
std::ostream &operator<<(std::ostream &os, const Outcome &o) { return os << o.result << " (errno " << o.err << ")"; }

template <class F>
Outcome outcome(F &&f) {
    errno = 0;
    ssize_t r = f();
    return {r, errno};
}

}  // namespace

TEST(IoTest, ABufferThatRunsPastSharedMemoryIntoUnmappedMemory) {
    EdgeBuffers b;
    TempFile f(kThreshold * 4);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    for (size_t before : {size_t(100), size_t(5000)}) {
        SCOPED_TRACE(before);
        uint8_t *o = opaque(b.ordinary + kThreshold - before), *s = opaque(b.shared_mem + kThreshold - before);
        Outcome ro = outcome([&] { return pread(f.fd, o, 20000, 0); });
        Outcome rs = outcome([&] { return pread(f.fd, s, 20000, 0); });
        EXPECT_EQ(ro, rs) << "read from a file";
        if (rs.result > 0) {
            EXPECT_EQ(memcmp(o, s, static_cast<size_t>(rs.result)), 0);
        }
        Outcome wo = outcome([&] { return write(fds[1], o, 20000); });
        Outcome ws = outcome([&] { return write(fds[1], s, 20000); });
        EXPECT_EQ(wo, ws) << "write to a pipe";
        struct iovec vo[2] = {{o, before}, {o + before, 100}}, vs[2] = {{s, before}, {s + before, 100}};
        Outcome xo = outcome([&] { return preadv(f.fd, vo, 2, 0); });
        Outcome xs = outcome([&] { return preadv(f.fd, vs, 2, 0); });
        EXPECT_EQ(xo, xs) << "preadv with a second iovec in unmapped memory";
        // Drain the pipe between rounds.
        char sink[1 << 16];
        while (wo.result > 0 && ::read(fds[0], sink, sizeof sink) == sizeof sink) {
        }
    }
    close(fds[0]);
    close(fds[1]);
}
