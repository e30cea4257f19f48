// Several devices in one process (ADSM_DEVICE=sim,sim): contexts on
// different devices, objects moving between them.  With one device the
// same tests check that asking for a second one is refused.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "support/stats.h"
#include "test_kernels.h"

using namespace adsm_test;

namespace {

int device_count() {
    int n = 0;
    EXPECT_EQ(adsmGetDeviceCount(&n), adsmSuccess) << detail();
    return n;
}

int current_device() {
    int d = -1;
    EXPECT_EQ(adsmGetDevice(&d), adsmSuccess) << detail();
    return d;
}

uint64_t used_on(int device) {
    adsmDeviceInfo info;
    EXPECT_EQ(adsmGetDeviceProperties(device, &info), adsmSuccess) << detail();
    return info.memory_used;
}

// Where the two sides of a rendezvous meet: a file both map.
void rendezvous_path(uint64_t key, char *out, size_t n) {
    snprintf(out, n, "/dev/shm/adsm-devices-test-%llu", static_cast<unsigned long long>(key));
}

// Two kernels, one per side, meet or fail: each raises its flag in the file
// and waits (10 s at most) for the other's, so they pass only if they run
// at the same time.  *met: 1 met, 2 the other never came, 3 no file.  Only
// system calls, no allocation: a kernel of the discrete device doubles runs
// in a process cloned from a threaded one, where an allocator lock another
// thread held at the clone stays held.
void rendezvous(const adsm::thread_index &t, uint64_t key, uint32_t side, uint32_t *met) {
    if (adsm::global_x(t) != 0) return;
    char path[96];
    rendezvous_path(key, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    void *page = fd >= 0 && ftruncate(fd, 4096) == 0 ? mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                     : MAP_FAILED;
    if (fd >= 0) close(fd);
    if (page == MAP_FAILED) {
        *met = 3;
        return;
    }
    auto *flags = static_cast<std::atomic<uint32_t> *>(page);
    flags[side].store(1);
    timespec now, deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 10;
    const timespec pause = {0, 1000 * 1000};
    do {
        if (flags[side ^ 1].load()) break;
        nanosleep(&pause, nullptr);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec < deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec < deadline.tv_nsec));
    *met = flags[side ^ 1].load() ? 1 : 2;
    munmap(page, 4096);
}

// A thread whose context lives on `device`, running `body` there.
template <class F>
void on_device(int device, F &&body) {
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(device), adsmSuccess) << detail();
        body();
    }).join();
}

}  // namespace

TEST(DevicesTest, CountAndPropertiesFollowTheDeviceList) {
    const char *list = getenv("ADSM_VISIBLE_DEVICES");
    if (!list || !*list) list = getenv("ADSM_DEVICE");
    int expected = 1;
    for (const char *p = list ? list : ""; *p; ++p) expected += *p == ',';
    int n = device_count();
    EXPECT_EQ(n, expected);
    EXPECT_EQ(adsm::device_count(), n);
    for (int d = 0; d < n; ++d) {
        adsmDeviceInfo info;
        ASSERT_EQ(adsmGetDeviceProperties(d, &info), adsmSuccess) << detail();
        EXPECT_GT(info.memory_bytes, 0u);
        EXPECT_STRNE(info.name, "");
    }
    adsmDeviceInfo info;
    EXPECT_EQ(adsmGetDeviceProperties(n, &info), adsmErrorInvalidDevice);
    EXPECT_EQ(adsmGetDeviceProperties(-1, &info), adsmErrorInvalidDevice);
    EXPECT_EQ(adsmGetDeviceCount(nullptr), adsmErrorInvalidValue);
    EXPECT_EQ(adsmSetDevice(n), adsmErrorInvalidDevice);
    EXPECT_NE(detail().find("does not exist"), std::string::npos) << detail();
    EXPECT_EQ(adsmSetDevice(-1), adsmErrorInvalidDevice);
    EXPECT_EQ(current_device(), 0) << "a refused move changes nothing";
}

TEST(DevicesTest, KernelsOnTwoDevicesRunAtTheSameTime) {
    if (device_count() < 2) return;  // one device: CountAndProperties checks the refusal
    const uint64_t key = static_cast<uint64_t>(getpid()) * 1000 + 1;
    uint32_t met[2] = {0, 0};
    auto meet = device_kernel<rendezvous>("devices.rendezvous");
    std::vector<std::thread> threads;
    for (uint32_t side = 0; side < 2; ++side)
        threads.emplace_back([&, side] {
            ASSERT_EQ(adsmSetDevice(static_cast<int>(side)), adsmSuccess) << detail();
            auto *out = static_cast<uint32_t *>(adsmAlloc(sizeof(uint32_t)));
            ASSERT_NE(out, nullptr) << detail();
            *out = 0;
            meet(1, 1, key, side, out);
            adsm::sync();
            met[side] = *out;
            adsmFree(out);
        });
    for (auto &t : threads) t.join();
    char path[96];
    rendezvous_path(key, path, sizeof path);
    unlink(path);
    EXPECT_EQ(met[0], 1u) << "the kernel on device 0 did not meet the one on device 1 (2: never came, 3: no file to meet in)";
    EXPECT_EQ(met[1], 1u);
}

TEST(DevicesTest, EachContextsObjectsLiveOnItsDevice) {
    const int n = device_count();
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 1 << 20;  // 4 MiB each
    std::vector<uint32_t *> arrays(n, nullptr);
    std::vector<uint64_t> before(n);
    for (int d = 0; d < n; ++d) before[d] = used_on(d);
    std::vector<std::thread> threads;
    for (int d = 0; d < n; ++d)
        threads.emplace_back([&, d] {
            ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << detail();
            EXPECT_EQ(current_device(), d);
            auto *v = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
            ASSERT_NE(v, nullptr) << detail();
            for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i + d);
            for (int round = 0; round < 3; ++round) {
                inc(adsm::blocks_for(len, 256), 256, v, len);
                adsm::sync();
            }
            arrays[d] = v;
        });
    for (auto &t : threads) t.join();
    for (int d = 0; d < n; ++d) {
        ASSERT_NE(arrays[d], nullptr);
        for (size_t i = 0; i < len; i += 4099) ASSERT_EQ(arrays[d][i], static_cast<uint32_t>(i + d + 3)) << d;
        // On a discrete device the object took that device's memory only
        // (the other devices' use did not move by its size).
        if (is_discrete()) {
            EXPECT_GE(used_on(d), before[d] + len * sizeof(uint32_t)) << d;
        }
    }
    for (auto *v : arrays) EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

TEST(DevicesTest, MovingAContextTakesItsObjects) {
    const int n = device_count();
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 300000;  // several blocks
    std::thread([&] {
        auto *v = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
        ASSERT_NE(v, nullptr) << detail();
        for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i);
        inc(adsm::blocks_for(len, 256), 256, v, len);
        // Its kernel may still run: the context cannot move yet.
        if (n > 1) {
            EXPECT_EQ(adsmSetDevice(1), adsmErrorBusy);
            EXPECT_EQ(current_device(), 0);
        }
        adsm::sync();
        // Half the blocks written by the CPU since, half still as the kernel left them.
        for (size_t i = 0; i < len / 2; ++i) v[i] += 10;
        for (int d = n - 1; d >= 0; --d) {
            uint64_t used = used_on(d);
            ASSERT_NO_THROW(adsm::set_device(d));
            EXPECT_EQ(adsm::current_device(), d);
            if (n > 1 && d == n - 1 && is_discrete()) {
                EXPECT_GE(used_on(d), used + len * sizeof(uint32_t)) << "its object came along";
            }
            inc(adsm::blocks_for(len, 256), 256, v, len);
            adsm::sync();
        }
        for (size_t i = 0; i < len; ++i)
            ASSERT_EQ(v[i], static_cast<uint32_t>(i + 1 + (i < len / 2 ? 10 : 0) + n)) << i;
        EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
    }).join();
}

TEST(DevicesTest, AMigratedObjectIsReleasedByItsNewContext) {
    const int n = device_count();
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 100000;
    auto *v = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) v[i] = 7;
    inc(adsm::blocks_for(len, 256), 256, v, len);
    // The worker's context, on the last device, waits for the object.
    adsmContext_t worker = nullptr;
    std::atomic<int> step{0};
    std::thread t([&] {
        ASSERT_EQ(adsmSetDevice(n - 1), adsmSuccess) << detail();
        worker = adsmGetContext();
        step = 1;
        while (step != 2) std::this_thread::yield();
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        step = 3;
    });
    while (step != 1) std::this_thread::yield();
    EXPECT_EQ(adsmMigrate(v, worker), adsmErrorBusy) << "its kernel may still run";
    adsm::sync();
    EXPECT_EQ(adsmMigrate(v + 1, worker), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmMigrate(nullptr, worker), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmMigrate(v, reinterpret_cast<adsmContext_t>(uintptr_t(0xdead0000beef))), adsmErrorInvalidContext);
    v[0] = 100;  // a CPU write the new device must get
    ASSERT_EQ(adsmMigrate(v, worker), adsmSuccess) << detail();
    EXPECT_EQ(adsmMigrate(v, worker), adsmSuccess) << "already there: nothing to do";
    step = 2;
    while (step != 3) std::this_thread::yield();
    t.join();
    EXPECT_EQ(v[0], 101u);
    EXPECT_EQ(v[len - 1], 9u);
    // The object outlives the worker's thread: its context stays while it owns memory.
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

TEST(DevicesTest, AnObjectMovedToAFullDeviceWaitsOnTheHostAndLosesNothing) {
    const int n = device_count();
    // Only separate device memories can be full on one side.
    if (n < 2 || !is_discrete(0) || !is_discrete(1)) return;
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 1 << 18;
    auto *v = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i);
    inc(adsm::blocks_for(len, 256), 256, v, len);
    adsm::sync();
    adsmContext_t mine = adsmGetContext();
    on_device(1, [&] {
        adsmDeviceInfo info;
        ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
        // Device memory (which is never evicted) fills device 1 but for half
        // of what the object needs.
        void *filler = nullptr;
        ASSERT_EQ(adsmDeviceAlloc(&filler, info.memory_bytes - info.memory_used - len * sizeof(uint32_t) / 2),
                  adsmSuccess)
            << detail();
        ASSERT_EQ(adsmSetContext(mine), adsmSuccess);
        uint64_t used = used_on(1);
        uint64_t evictions = adsm::stats().get(adsm::Counter::migrations);
        ASSERT_EQ(adsmSetDevice(1), adsmSuccess) << "the object waits on the host: " << detail();
        EXPECT_EQ(current_device(), 1);
        EXPECT_GT(adsm::stats().get(adsm::Counter::migrations), evictions);
        EXPECT_EQ(used_on(1), used) << "it did not fit";
        // Host-only, the CPU uses it freely; a call that needs it cannot run.
        v[1] += 100;
        try {
            inc(adsm::blocks_for(len, 256), 256, v, len);
            ADD_FAILURE() << "a call whose object cannot reach its device ran";
        } catch (const adsm::error &e) {
            EXPECT_EQ(e.code(), adsmErrorMemoryAllocation) << e.what();
        }
        EXPECT_EQ(adsmDeviceFree(filler), adsmSuccess);
        // With room again, the call brings it in and runs.
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        EXPECT_GE(used_on(1), info.memory_used + len * sizeof(uint32_t)) << "it came in";
        ASSERT_EQ(adsmSetDevice(0), adsmSuccess) << detail();
        ASSERT_EQ(adsmSetContext(nullptr), adsmSuccess);
    });
    for (size_t i = 0; i < len; ++i) ASSERT_EQ(v[i], static_cast<uint32_t>(i + 2 + (i == 1 ? 100 : 0))) << i;
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

TEST(DevicesTest, DeviceMemoryMovesWithItsContextAllOrNothing) {
    const int n = device_count();
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 1 << 18;  // 1 MiB
    std::thread([&] {
        void *d = nullptr;
        ASSERT_EQ(adsmDeviceAlloc(&d, len * sizeof(uint32_t)), adsmSuccess) << detail();
        auto *dev = static_cast<uint32_t *>(d);
        std::vector<uint32_t> in(len), out(len);
        for (size_t i = 0; i < len; ++i) in[i] = static_cast<uint32_t>(i * 3);
        ASSERT_EQ(adsmCopyToDevice(d, in.data(), len * sizeof(uint32_t)), adsmSuccess) << detail();
        uint32_t rounds = 0;
        for (int to = n - 1; to >= 0; --to) {
            ASSERT_EQ(adsmSetDevice(to), adsmSuccess) << detail();
            // A kernel on the new device works on the same device memory.
            inc(adsm::blocks_for(len, 256), 256, dev, len);
            adsm::sync();
            ++rounds;
            ASSERT_EQ(adsmCopyToHost(out.data(), d, len * sizeof(uint32_t)), adsmSuccess) << detail();
            for (size_t i = 0; i < len; i += 509) ASSERT_EQ(out[i], in[i] + rounds) << "device " << to << ", " << i;
        }
        if (n > 1 && is_discrete()) {
            // It does not fit on a full device 1: the context stays where it is.
            void *filler = nullptr;
            std::thread([&] {
                ASSERT_EQ(adsmSetDevice(1), adsmSuccess);
                adsmDeviceInfo info;
                ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
                ASSERT_EQ(adsmDeviceAlloc(&filler, info.memory_bytes - info.memory_used - 4096), adsmSuccess) << detail();
            }).join();
            EXPECT_EQ(adsmSetDevice(1), adsmErrorMemoryAllocation);
            EXPECT_NE(detail().find("adsmDeviceAlloc"), std::string::npos) << detail();
            EXPECT_EQ(current_device(), 0);
            ASSERT_EQ(adsmCopyToHost(out.data(), d, len * sizeof(uint32_t)), adsmSuccess) << detail();
            for (size_t i = 0; i < len; i += 509) ASSERT_EQ(out[i], in[i] + rounds) << i;
            EXPECT_EQ(adsmDeviceFree(filler), adsmSuccess);
        }
        EXPECT_EQ(adsmDeviceFree(d), adsmSuccess);
    }).join();
}

// A list mixing kinds (ADSM_DEVICE=sim,cpu): on the integrated device an
// object is the host's own pages, never copied or protected; moved to the
// discrete one, the protocol takes it over with the host copy current; and
// back, the host copy is again the only one.
TEST(DevicesTest, AnObjectChangesMemoryKindWithItsContext) {
    const int n = device_count();
    int one = -1, apart = -1;
    for (int d = 0; d < n; ++d) (is_discrete(d) ? apart : one) = d;
    if (one < 0 || apart < 0) return;  // no mixed list
    auto inc = device_kernel<increment>("devices.increment");
    const size_t len = 1 << 20;  // 4 MiB
    const uint64_t bytes = len * sizeof(uint32_t);
    auto moved = [] {
        return adsm::stats().get(adsm::Counter::h2d_bytes) + adsm::stats().get(adsm::Counter::d2h_bytes);
    };
    auto faults = [] {
        return adsm::stats().get(adsm::Counter::read_faults) + adsm::stats().get(adsm::Counter::write_faults);
    };
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(one), adsmSuccess) << detail();
        uint64_t moved0 = moved(), faults0 = faults();
        auto *v = static_cast<uint32_t *>(adsmAlloc(bytes));
        ASSERT_NE(v, nullptr) << detail();
        for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i);
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        for (size_t i = 0; i < len; i += 4099) ASSERT_EQ(v[i], static_cast<uint32_t>(i + 1)) << i;
        EXPECT_EQ(moved(), moved0) << "one copy: nothing moves";
        EXPECT_EQ(faults(), faults0) << "one copy: nothing is protected";

        ASSERT_EQ(adsmSetDevice(apart), adsmSuccess) << detail();
        v[7] += 100;  // before the call: the protocol sees the CPU's write
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        EXPECT_GE(moved() - moved0, bytes) << "the discrete device got the host copy";
        for (size_t i = 0; i < len; i += 4099) ASSERT_EQ(v[i], static_cast<uint32_t>(i + 2)) << i;
        EXPECT_EQ(v[7], 109u);
        // This result is still the device's alone when the context moves.
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        ASSERT_EQ(adsmSetDevice(one), adsmSuccess) << detail();
        uint64_t moved1 = moved(), faults1 = faults();
        for (size_t i = 0; i < len; i += 4099) ASSERT_EQ(v[i], static_cast<uint32_t>(i + 3)) << i;
        v[7] += 100;
        inc(adsm::blocks_for(len, 256), 256, v, len);
        adsm::sync();
        EXPECT_EQ(v[7], 7u + 200 + 4);
        for (size_t i = 0; i < len; i += 4099) ASSERT_EQ(v[i], static_cast<uint32_t>(i + 4 + (i == 7 ? 200 : 0))) << i;
        EXPECT_EQ(moved(), moved1) << "back to one copy: nothing moves";
        EXPECT_EQ(faults(), faults1) << "back to one copy: nothing is protected";
        EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
    }).join();
}
