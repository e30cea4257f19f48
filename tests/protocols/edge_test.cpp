// The protocols' edge cases, run under every protocol, block size and dirty
// tracker of the model test, and on the GPU drivers' doubles (edge.cuda.*,
// edge.levelzero.*).  Where protocols legitimately differ (batch
// takes no faults, so it cannot see a race), each test asserts the
// behaviour the protocol documents.
#include <adsm.hpp>
#include <gtest/gtest.h>

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/doubles/fake_module.hpp"
#include "os/write_hold.h"
#include "support/config.h"
#include "support/stats.h"

namespace {

std::string protocol() {
    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    return info.protocol;
}
bool faults() {
    std::string p = protocol();
    return p != "batch" && p != "integrated";
}
size_t block_size() {
    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    return info.block_size;
}

void fill_bytes(const adsm::thread_index &t, uint8_t *p, size_t n, uint8_t v) {
    size_t i = adsm::global_x(t);
    if (i < n) p[i] = static_cast<uint8_t>(v + i);
}

void add_bytes(const adsm::thread_index &t, const uint8_t *src, uint8_t *dst, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) dst[i] = static_cast<uint8_t>(dst[i] + src[i]);
}

void slow_write(const adsm::thread_index &, uint64_t *p, uint64_t v) {
    usleep(150 * 1000);
    *p = v;
}

void stamp_pages(const adsm::thread_index &t, uint8_t *p, size_t pages, uint8_t v) {
    size_t i = adsm::global_x(t);
    if (i < pages) p[i * 4096] = static_cast<uint8_t>(v + i);
}

// The exit code of child pid once it ended, or -1 if it did not exit (a signal).
int exit_code_of(pid_t pid) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

adsm::kernel<fill_bytes> &fill_k() {
    static adsm::kernel<fill_bytes> k = adsm_test::device_kernel<fill_bytes>("edge.fill");
    return k;
}

void device_fill(uint8_t *p, size_t n, uint8_t v) {
    fill_k()(adsm::blocks_for(n, 256), 256, p, n, v);
}

}  // namespace

TEST(EdgeTest, SmallObjectsNeverShareABlock) {
    std::vector<uint8_t *> objs;
    for (int i = 0; i < 16; ++i) {
        objs.push_back(static_cast<uint8_t *>(adsmAlloc(17)));
        ASSERT_NE(objs.back(), nullptr);
    }
    // Even the odd objects are written by the CPU, the even ones by kernels,
    // in the same round: neighbours must not clobber each other.
    for (int i = 1; i < 16; i += 2) memset(objs[i], 0x40 + i, 17);
    for (int i = 0; i < 16; i += 2) device_fill(objs[i], 17, static_cast<uint8_t>(i));
    ASSERT_EQ(adsmSync(), adsmSuccess);
    for (int i = 0; i < 16; ++i)
        for (int b = 0; b < 17; ++b)
            ASSERT_EQ(objs[i][b], i % 2 ? 0x40 + i : static_cast<uint8_t>(i + b)) << i << " " << b;
    for (auto *p : objs) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u) << "every object starts a page of its own";
        adsmFree(p);
    }
}

TEST(EdgeTest, SizesThatAreNotMultiplesOfTheBlockSize) {
    const size_t bs = block_size(), n = 3 * bs + 123;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    memset(p, 1, n);
    device_fill(p + 3 * bs, 123, 7);  // only the ragged tail
    ASSERT_EQ(adsmSync(), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], i < 3 * bs ? 1 : static_cast<uint8_t>(7 + i - 3 * bs)) << i;
    p[n - 1] = 99;
    adsm::kernel<add_bytes> add = adsm_test::device_kernel<add_bytes>("edge.add");
    auto *q = static_cast<uint8_t *>(adsmCalloc(1, 1));
    add(1, 1, p + n - 1, q, size_t(1));
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(q[0], 99) << "the last byte of a ragged block reached the device";
    adsmFree(q);
    adsmFree(p);
}

TEST(EdgeTest, AStoreAcrossTwoBlocksCompletes) {
    // An unaligned store that straddles a block boundary needs both blocks
    // writable at once, whatever the rolling size.
    const size_t bs = block_size();
    auto *p = static_cast<uint8_t *>(adsmAlloc(4 * bs));
    ASSERT_NE(p, nullptr);
    device_fill(p, 4 * bs, 0);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    for (size_t b = 1; b < 4; ++b) {
        uint64_t v = 0x0102030405060708ull * b;
        memcpy(p + b * bs - 3, &v, sizeof v);
        uint64_t back;
        memcpy(&back, p + b * bs - 3, sizeof back);
        EXPECT_EQ(back, v);
    }
    adsmFree(p);
}

TEST(EdgeTest, FreeWhileDirtyLeavesNothingBehind) {
    const size_t n = 5 * 4096 + 7;
    for (int round = 0; round < 20; ++round) {
        auto *p = static_cast<uint8_t *>(adsmAlloc(n));
        ASSERT_NE(p, nullptr);
        memset(p, 0xee, n);  // dirty, never released
        ASSERT_EQ(adsmFree(p), adsmSuccess);
    }
    // The device goes on working with fresh objects, zeroed ones included.
    auto *z = static_cast<uint8_t *>(adsmCalloc(n, 1));
    auto *out = static_cast<uint8_t *>(adsmCalloc(n, 1));
    adsm::kernel<add_bytes> add = adsm_test::device_kernel<add_bytes>("edge.add");
    add(adsm::blocks_for(n, 256), 256, z, out, n);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 0) << "stale device data at " << i;
    adsmFree(z);
    adsmFree(out);
}

TEST(EdgeTest, FreeDuringARunningKernelIsAClearError) {
    auto *p = static_cast<uint64_t *>(adsmAlloc(4096));
    adsm::kernel<slow_write> k = adsm_test::device_kernel<slow_write>("edge.slow_write");
    k(1, 1, p, uint64_t(5));
    EXPECT_EQ(adsmFree(p), adsmErrorBusy);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("adsmSync"), std::string::npos);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(*p, 5u);
    EXPECT_EQ(adsmFree(p), adsmSuccess);
}

TEST(EdgeTest, ThreadsFaultingOnOneBlockTogetherMoveItOnce) {
    const size_t n = 4096 * 4;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    device_fill(p, n, 3);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    uint64_t before = adsm::stats().get(adsm::Counter::d2h_bytes);
    std::atomic<int> ready{0}, bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 6; ++t)
        ts.emplace_back([&] {
            ready++;
            while (ready.load() < 6) {
            }
            for (size_t i = 0; i < 4096; ++i)
                if (p[i] != static_cast<uint8_t>(3 + i)) bad++;
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    uint64_t moved = adsm::stats().get(adsm::Counter::d2h_bytes) - before;
    if (faults()) {
        // One block's worth, however many threads asked at once.
        size_t expect = std::min(block_size(), n);
        if (protocol() == "lazy") expect = n;
        EXPECT_EQ(moved, expect);
    } else {
        EXPECT_EQ(moved, 0u) << "batch brought everything back at the sync";
    }
    adsmFree(p);
}

TEST(EdgeTest, CpuAccessDuringAKernelWaitsForIt) {
    auto *v = static_cast<uint64_t *>(adsmAlloc(sizeof(uint64_t)));
    *v = 1;
    adsm::kernel<slow_write> k = adsm_test::device_kernel<slow_write>("edge.slow_write");
    testing::internal::CaptureStderr();
    k(1, 1, v, uint64_t(42));
    uint64_t seen = *v;  // a race: between adsmCall and adsmSync
    std::string err = testing::internal::GetCapturedStderr();
    if (faults()) {
        EXPECT_EQ(seen, 42u) << "ADSM_ON_RACE=sync waits for the kernel";
        EXPECT_NE(err.find("between adsmCall and adsmSync"), std::string::npos) << err;
        EXPECT_NE(err.find("EdgeTest_CpuAccessDuringAKernelWaitsForIt"), std::string::npos)
            << "the warning names the code: " << err;
    } else {
        EXPECT_EQ(seen, 1u) << "batch cannot see the access: the CPU reads its own copy";
    }
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(*v, 42u);
    adsmFree(v);
}

namespace {
// Under ADSM_ON_RACE=abort, reads what a running kernel is writing.
void read_during_a_kernel() {
    setenv("ADSM_ON_RACE", "abort", 1);
    auto *v = static_cast<uint64_t *>(adsmAlloc(8));
    adsm::kernel<slow_write> k = adsm_test::device_kernel<slow_write>("edge.slow_write");
    k(1, 1, v, uint64_t(42));
    volatile uint64_t x = *v;
    (void)x;
}
}  // namespace

TEST(EdgeDeathTest, RacePolicyAbortStopsTheProgram) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // The runtime must start inside the death statement, after the setenv,
    // so the protocol is read from the environment here.
    const char *env = getenv("ADSM_PROTOCOL");
    const char *dev = getenv("ADSM_DEVICE");
    std::string p = env ? env : adsm::Config{}.protocol;  // unset: the default
    bool takes_faults = p != "batch" && !(dev && std::string(dev) == "cpu");
    if (takes_faults) {
        EXPECT_DEATH(read_during_a_kernel(), "aborting");
    } else {
        EXPECT_EXIT(
            {
                read_during_a_kernel();
                exit(adsmSync() == adsmSuccess ? 0 : 1);
            },
            testing::ExitedWithCode(0), "");
    }
}

TEST(EdgeTest, ForkChildSeesTheDataAsOrdinaryMemory) {
    const size_t n = 3 * block_size() + 100;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    memset(p, 0, n);
    device_fill(p, n, 10);  // results on the device; lazy protocols leave them there
    ASSERT_EQ(adsmSync(), adsmSuccess);
    p[n - 1] = 0xab;  // and one fresh CPU write
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int code = 0;
        for (size_t i = 0; i + 1 < n; ++i)
            if (p[i] != static_cast<uint8_t>(10 + i)) code = 1;
        if (p[n - 1] != 0xab) code = 2;
        memset(p, 0x77, n);  // private to the child now
        if (adsmAlloc(10) != nullptr || adsmGetLastError() != adsmErrorNotSupported) code = 3;
        // A grandchild inherits the child's ordinary memory as it is.
        pid_t grandchild = fork();
        if (grandchild == 0) _exit(p[0] == 0x77 && p[n - 1] == 0x77 ? 0 : 4);
        int gst = 0;
        waitpid(grandchild, &gst, 0);
        if (!WIFEXITED(gst) || WEXITSTATUS(gst) != 0) code = 4;
        _exit(code);
    }
    EXPECT_EQ(exit_code_of(pid), 0)
        << "-1: the child died; 1: kernel results, 2: CPU write, 3: API in the child, 4: grandchild";
    // The parent's data and device are untouched by the child.
    for (size_t i = 0; i + 1 < n; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(10 + i)) << i;
    EXPECT_EQ(p[n - 1], 0xab);
    device_fill(p, n, 20);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(p[5], static_cast<uint8_t>(25));
    adsmFree(p);
}

namespace {
// Bytes of the host mirror's file (memfd "adsm-host") in memory.
long long mirror_bytes() {
    for (int fd = 0; fd < 1024; ++fd) {
        char link[64], target[128];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        struct stat st;
        if (strstr(target, "/memfd:adsm-host") == target && fstat(fd, &st) == 0) return st.st_blocks * 512LL;
    }
    return -1;
}
size_t pages_in_memory(const void *p, size_t n) {
    std::vector<unsigned char> in((n + 4095) / 4096);
    if (mincore(const_cast<void *>(p), n, in.data()) != 0) return SIZE_MAX;
    size_t count = 0;
    for (unsigned char c : in) count += c & 1;
    return count;
}
}  // namespace

// A fork child's copy of a big object the program used a little of takes
// what the object holds, nothing more: the pages never made stay unmade in
// the child and in the parent's mirror (making them cost the parent 32 MiB
// of memory and the fork a fault's work per page).  The child of a later
// round, after a kernel wrote where the CPU never did, gets that too.  (On
// a GPU only the bytes are checked: its mirror is pinned a granule at a
// time at first use, making pages no touch made, and what only the GPU
// holds comes to the host before the fork, the child being unable to ask
// the GPU for it.)
TEST(EdgeTest, ForkChildCopiesOnlyThePagesTheObjectHolds) {
    const size_t n = 32u << 20, bs = block_size();
    const bool counts = !adsm_test::on_gpu();
    // (Zero-filled: the bytes never written are zeros on the device too,
    // which a GPU's fresh memory need not be.)
    auto *p = static_cast<uint8_t *>(adsmCalloc(1, n));
    ASSERT_NE(p, nullptr);
    memset(p, 1, 4096);
    p[n / 2] = 2;
    p[n - 1] = 3;
    for (int round = 0; round < 2; ++round) {
        const size_t written = (n / 4) & ~(bs - 1);  // by a kernel in the second round
        const long long before = mirror_bytes();
        ASSERT_GT(before, 0) << "the host mirror's memfd";
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // Counted first: reading a zero maps a page.
            const size_t made = pages_in_memory(p, n);
            int code = 0;
            for (size_t i = 0; i < 4096; ++i)
                if (p[i] != 1) code = 1;
            if (p[n / 2] != 2 || p[n - 1] != 3 || p[4096] != 0 || p[n / 2 + 1] != 0 || p[n - 2] != 0) code = 2;
            for (size_t i = 0; round == 1 && i < bs; ++i)
                if (p[written + i] != static_cast<uint8_t>(10 + i)) code = 3;
            // The blocks of the first page and of the two bytes (rolling,
            // sending a block ahead, reads all of it).  After a kernel, a
            // protocol may have fetched the whole object: batch does.
            if (counts && round == 0 && made > 3 * std::max<size_t>(1, bs / 4096)) code = 4;
            _exit(code);
        }
        EXPECT_EQ(exit_code_of(pid), 0) << "round " << round
                                        << "; -1: the child died; 1, 2: the CPU's bytes, 3: the kernel's, 4: pages "
                                           "the object never held";
        if (counts) {
            EXPECT_LT(mirror_bytes() - before, 8ll << 20) << "round " << round << ": the fork made the mirror's pages";
        }
        device_fill(p + written, bs, 10);
        ASSERT_EQ(adsmSync(), adsmSuccess);
    }
    adsmFree(p);
}

// The child copies its objects from memory its parent still shares with
// it: what the forking thread writes once fork returns must not reach the
// child, however long the copy takes.  The parent writes at once, the
// object's last page first (the child copies from its first).
TEST(EdgeTest, WhatTheParentWritesAfterTheForkDoesNotReachTheChild) {
    const size_t n = 16u << 20;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    memset(p, 1, n);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        for (size_t i = 0; i < n; i += 4096)
            if (p[i] != 1 || p[i + 4095] != 1) _exit(1);
        _exit(0);
    }
    for (size_t page = n / 4096; page-- > 0;) p[page * 4096 + 4095] = 2;
    memset(p, 2, n);
    EXPECT_EQ(exit_code_of(pid), 0) << "-1: the child died; 1: the child saw the parent's writes from after the fork";
    EXPECT_EQ(p[0], 2);
    EXPECT_EQ(p[n - 1], 2);
    adsmFree(p);
}

// Nor what the parent's other threads write meanwhile: a thread writing
// one counter at the object's start and then at its end, as fast as it
// can, and another storing a second pair with adsmMemcpy (as interposed
// I/O stores).  Any instant holds each start counter at or past its end
// counter; a copy made while the writers went on (the child copies from
// the object's start) found the end's newer.
TEST(EdgeTest, WhatOtherThreadsWriteWhileTheChildCopiesDoesNotReachIt) {
    const size_t n = 16u << 20;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    memset(p, 0, n);
    auto *cpu_first = reinterpret_cast<volatile uint64_t *>(p);
    auto *cpu_last = reinterpret_cast<volatile uint64_t *>(p + n - 8);
    uint8_t *store_first = p + 64, *store_last = p + n - 64;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> cpu_rounds{0}, store_rounds{0};
    std::thread cpu([&] {
        for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
            *cpu_first = i;
            *cpu_last = i;
            cpu_rounds.store(i, std::memory_order_relaxed);
        }
    });
    std::thread stores([&] {
        for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
            if (adsmMemcpy(store_first, &i, sizeof i) != adsmSuccess ||
                adsmMemcpy(store_last, &i, sizeof i) != adsmSuccess)
                return;
            store_rounds.store(i, std::memory_order_relaxed);
        }
    });
    while (cpu_rounds.load() < 1000 || store_rounds.load() < 100) std::this_thread::yield();
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t a = *cpu_first, b = *cpu_last, c, d;
        memcpy(&c, store_first, 8);
        memcpy(&d, store_last, 8);
        _exit(a < b ? 1 : c < d ? 2 : 0);
    }
    stop = true;
    cpu.join();
    stores.join();
    ASSERT_GE(pid, 0);
    EXPECT_EQ(exit_code_of(pid), 0) << "1: a CPU write, 2: a store, from during the child's copy reached it; -1: died";
    EXPECT_GT(store_rounds.load(), 100u) << "the storing thread failed";
    adsmFree(p);
}

// Nor a kernel another thread launches meanwhile (the child takes what only
// the device holds from the device): a thread that launches one as soon as
// the fork's hold is on finds its launch waiting until the copy is done.
TEST(EdgeTest, AKernelLaunchedWhileTheChildCopiesDoesNotReachIt) {
    const size_t pages = 8192;
    auto *p = static_cast<uint8_t *>(adsmAlloc(pages * 4096));
    ASSERT_NE(p, nullptr);
    adsm::kernel<stamp_pages> stamp = adsm_test::device_kernel<stamp_pages>("edge.stamp");
    stamp(adsm::blocks_for(pages, 256), 256, p, pages, uint8_t{10});
    ASSERT_EQ(adsmSync(), adsmSuccess);
    std::atomic<int> launched{0};  // 1: during the hold; -1: never saw it
    adsmContext_t ctx = adsmGetContext();  // (the object's, for the other thread's calls)
    std::thread other([&] {
        if (adsmSetContext(ctx) != adsmSuccess) {
            launched = -3;
            return;
        }
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!adsm::os::write_hold::held())
            if (std::chrono::steady_clock::now() > give_up) {
                launched = -1;
                return;
            }
        stamp(adsm::blocks_for(pages, 256), 256, p, pages, uint8_t{20});
        launched = adsmSync() == adsmSuccess ? 1 : -2;
    });
    pid_t pid = fork();
    if (pid == 0) {
        for (size_t i = 0; i < pages; ++i)
            if (p[i * 4096] != static_cast<uint8_t>(10 + i)) _exit(1);
        _exit(0);
    }
    other.join();
    ASSERT_GE(pid, 0);
    const int code = exit_code_of(pid);
    EXPECT_EQ(launched.load(), 1)
        << "-1: the launching thread never saw the hold; -2: its kernel failed; -3: no context";
    EXPECT_EQ(code, 0) << "1: a kernel launched during the child's copy reached it; -1: the child died";
    EXPECT_EQ(p[5 * 4096], static_cast<uint8_t>(25));
    adsmFree(p);
}

TEST(EdgeTest, ForkChildGetsEachObjectApartWithAFreedOneBetween) {
    // Several objects, one freed in between: each moves into the child on
    // its own (a move covers one mapping on kernels before 6.17), and none
    // stays shared with the parent.
    const size_t n = 2 * block_size() + 300;
    uint8_t *objs[4];
    for (int i = 0; i < 4; ++i) {
        objs[i] = static_cast<uint8_t *>(adsmAlloc(n));
        ASSERT_NE(objs[i], nullptr);
        memset(objs[i], 0, n);
        device_fill(objs[i], n, static_cast<uint8_t>(40 * i));
    }
    ASSERT_EQ(adsmSync(), adsmSuccess);
    adsmFree(objs[1]);
    int to_parent[2], to_child[2];
    ASSERT_EQ(pipe(to_parent), 0);
    ASSERT_EQ(pipe(to_child), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int code = 0;
        for (int k : {0, 2, 3})
            for (size_t i = 0; i < n; ++i)
                if (objs[k][i] != static_cast<uint8_t>(40 * k + i)) code = 10 + k;
        for (int k : {0, 2, 3}) memset(objs[k], 0x5a, n);
        char done = 1;
        if (write(to_parent[1], &done, 1) != 1) code = 20;
        // Wait for the parent to look before leaving: its pages must not
        // have changed while the child's writes were still live.
        if (read(to_child[0], &done, 1) != 1) code = 21;
        _exit(code);
    }
    char done = 0;
    ASSERT_EQ(read(to_parent[0], &done, 1), 1);
    for (int k : {0, 2, 3})
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(objs[k][i], static_cast<uint8_t>(40 * k + i)) << "object " << k << " byte " << i;
    ASSERT_EQ(write(to_child[1], &done, 1), 1);
    EXPECT_EQ(exit_code_of(pid), 0) << "-1: the child died; 10+k: object k's data in the child; 20, 21: the pipe";
    for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) close(fd);
    for (int k : {0, 2, 3}) adsmFree(objs[k]);
}

namespace {
sigjmp_buf g_jump;
std::atomic<int> g_app_faults{0};
void app_handler(int, siginfo_t *, void *) {
    g_app_faults++;
    siglongjmp(g_jump, 1);
}
}  // namespace

TEST(EdgeTest, TheApplicationsOwnFaultHandlerKeepsWorking) {
    struct sigaction sa = {}, old = {}, seen = {};
    sa.sa_sigaction = app_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
    ASSERT_EQ(sigaction(SIGSEGV, nullptr, &seen), 0);
    EXPECT_EQ(seen.sa_sigaction, app_handler) << "the application sees its own handler";

    // A fault outside shared memory reaches the application's handler...
    void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sigsetjmp(g_jump, 1) == 0) *static_cast<volatile int *>(page) = 1;
    EXPECT_EQ(g_app_faults.load(), 1);

    // ...while faults on shared memory stay the runtime's.
    auto *v = static_cast<uint8_t *>(adsmAlloc(8192));
    device_fill(v, 8192, 1);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(v[100], static_cast<uint8_t>(101));
    v[5000] = 3;
    EXPECT_EQ(g_app_faults.load(), 1);

    ASSERT_EQ(sigaction(SIGSEGV, &old, nullptr), 0);
    munmap(page, 4096);
    adsmFree(v);
}

namespace {
jmp_buf g_plain_jump;
volatile sig_atomic_t g_resethand_runs = 0;
void resethand_handler(int) {
    g_resethand_runs = g_resethand_runs + 1;
    if (g_resethand_runs > 1) _exit(3);  // run again: the action was not given back
}
void plain_jump_handler(int) { longjmp(g_plain_jump, 1); }
}  // namespace

// The program's own handlers for faults outside shared memory run as the
// kernel would run them, the runtime's handler in between.
TEST(EdgeDeathTest, AResetHandHandlerRunsOnceAndTheFaultThenTakesItsDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            adsmFree(adsmAlloc(4096));  // the runtime (and its handler) first
            struct sigaction sa = {};
            sa.sa_handler = resethand_handler;
            sa.sa_flags = SA_RESETHAND;
            sigaction(SIGSEGV, &sa, nullptr);
            void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            *static_cast<volatile int *>(page) = 1;  // handled, retried, then the default
            _exit(4);
        },
        testing::KilledBySignal(SIGSEGV), "");
}

TEST(EdgeDeathTest, AFaultHandlerThatJumpsAwayLeavesTheMaskTheKernelWouldGive) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            adsmFree(adsmAlloc(4096));
            struct sigaction sa = {};
            sa.sa_handler = plain_jump_handler;
            sigemptyset(&sa.sa_mask);
            sigaddset(&sa.sa_mask, SIGUSR2);
            sigaction(SIGSEGV, &sa, nullptr);
            sigset_t none;
            sigemptyset(&none);
            pthread_sigmask(SIG_SETMASK, &none, nullptr);
            void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (setjmp(g_plain_jump) == 0) *static_cast<volatile int *>(page) = 1;
            // longjmp keeps the handler's mask: its sa_mask and the signal
            // itself, nothing of the runtime's own.
            sigset_t now;
            pthread_sigmask(SIG_BLOCK, nullptr, &now);
            int code = 0;
            if (sigismember(&now, SIGUSR1) || sigismember(&now, SIGALRM) || sigismember(&now, SIGCHLD)) code |= 1;
            if (!sigismember(&now, SIGUSR2) || !sigismember(&now, SIGSEGV)) code |= 2;
            _exit(code);
        },
        testing::ExitedWithCode(0), "");
}

TEST(EdgeDeathTest, ASentFaultSignalTheProgramIgnoresIsIgnored) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            adsmFree(adsmAlloc(4096));
            signal(SIGSEGV, SIG_IGN);
            kill(getpid(), SIGSEGV);
            raise(SIGSEGV);
            _exit(0);
        },
        testing::ExitedWithCode(0), "");
}
