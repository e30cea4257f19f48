// Memory kinds (adsmAllocEx's place): host-resident objects that kernels
// reach in host memory, and read-mostly objects with a copy on every device.
// On an integrated device there is one memory: every kind behaves as the
// default and the tests check only the results.
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "counters.h"
#include "test_kernels.h"

using namespace adsm_test;

namespace {

int device_count() {
    int n = 0;
    EXPECT_EQ(adsmGetDeviceCount(&n), adsmSuccess) << detail();
    return n;
}

uint64_t used_on(int device) {
    adsmDeviceInfo info;
    EXPECT_EQ(adsmGetDeviceProperties(device, &info), adsmSuccess) << detail();
    return info.memory_used;
}

adsmAllocAttr placed(int place, int spill = ADSM_SPILL_DEFAULT) {
    adsmAllocAttr a{};
    a.place = place;
    a.spill = spill;
    return a;
}

}  // namespace

TEST(PlacementTest, HostResidentMemoryIsNeverCopied) {
    auto inc = device_kernel<increment>("placement.increment");
    const size_t len = 200000;
    adsmAllocAttr host = placed(ADSM_PLACE_HOST);
    auto *v = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &host));
    if (host_resident_refused()) {
        EXPECT_EQ(v, nullptr);
        EXPECT_EQ(adsmGetLastError(), adsmErrorNotSupported);
        EXPECT_NE(detail().find("host-resident"), std::string::npos) << detail();
        return;
    }
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i);
    const uint64_t h2d = counter(adsm::Counter::h2d_bytes), d2h = counter(adsm::Counter::d2h_bytes);
    for (int round = 0; round < 3; ++round) {
        inc(adsm::blocks_for(len, 256), 256, v, len);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        for (size_t i = 1; i < len; i += 997) ASSERT_EQ(v[i], static_cast<uint32_t>(i + round + 1)) << i;
        v[0] += 100;  // the CPU's write is what the next kernel reads
    }
    EXPECT_EQ(v[0], 303u);
    // The kernels worked on the host's pages: nothing of the object moved.
    EXPECT_LE(counter(adsm::Counter::h2d_bytes) - h2d, 64u * 1024) << "only other objects' bytes may move";
    EXPECT_LE(counter(adsm::Counter::d2h_bytes) - d2h, 64u * 1024);
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

TEST(PlacementTest, HostResidentMemoryTakesNoDeviceMemory) {
    if (!is_discrete() || host_resident_refused()) return;  // one memory; or refused (above)
    const uint64_t before = used_on(0);
    const uint64_t allocs = counter(adsm::Counter::host_resident_allocs);
    adsmAllocAttr host = placed(ADSM_PLACE_HOST);
    void *p = adsmAllocEx(8u << 20, &host);
    ASSERT_NE(p, nullptr) << detail();
    EXPECT_LT(used_on(0), before + (1u << 20)) << "its 8 MiB are the host's";
    EXPECT_EQ(counter(adsm::Counter::host_resident_allocs), allocs + 1);
    EXPECT_EQ(adsmFree(p), adsmSuccess) << detail();
}

// A range given back to device memory after a host-resident object is
// freed: an object allocated there afterwards has device memory again, and
// its data moves as any other object's (if the device still reached the
// host's pages, the kernel's result would be overwritten by the acquire).
TEST(PlacementTest, FreedHostResidentRangeIsDeviceMemoryAgain) {
    if (host_resident_refused()) return;
    auto inc = device_kernel<increment>("placement.increment");
    // An odd size between two live objects: once out of quarantine, the
    // hole it leaves is the only one of its size.
    const size_t len = 1531 * 4096 / sizeof(uint32_t);
    void *before = adsmAlloc(len * sizeof(uint32_t));
    adsmAllocAttr host = placed(ADSM_PLACE_HOST);
    auto *h = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &host));
    void *after = adsmAlloc(len * sizeof(uint32_t));
    ASSERT_TRUE(before && h && after) << detail();
    inc(adsm::blocks_for(len, 256), 256, h, len);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    // 1100 frees after its own push it out of quarantine; no allocation
    // comes between to take a piece of its hole.
    std::vector<void *> small(1100);
    for (void *&p : small) ASSERT_NE(p = adsmAlloc(4096), nullptr) << detail();
    ASSERT_EQ(adsmFree(h), adsmSuccess) << detail();
    for (void *p : small) ASSERT_EQ(adsmFree(p), adsmSuccess) << detail();
    // Holes of this size or larger that earlier tests left (frees deferred
    // behind their kernels land when those end) may come first: take them
    // until the window gives this range out again.
    std::vector<void *> elsewhere;
    uint32_t *v = nullptr;
    for (int tries = 0; tries < 64; ++tries) {
        v = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
        ASSERT_NE(v, nullptr) << detail();
        if (v == h) break;
        elsewhere.push_back(v);
    }
    ASSERT_EQ(v, h) << "the window never gave the range out again";
    const uint64_t h2d = counter(adsm::Counter::h2d_bytes);  // (rolling sends while the CPU writes)
    for (size_t i = 0; i < len; ++i) v[i] = 7;
    inc(adsm::blocks_for(len, 256), 256, v, len);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (size_t i = 0; i < len; i += 101) ASSERT_EQ(v[i], 8u) << i;
    if (is_discrete()) {
        EXPECT_GE(counter(adsm::Counter::h2d_bytes) - h2d, len * sizeof(uint32_t)) << "it was sent as device memory";
    }
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
    for (void *p : elsewhere) EXPECT_EQ(adsmFree(p), adsmSuccess) << detail();
    EXPECT_EQ(adsmFree(before), adsmSuccess) << detail();
    EXPECT_EQ(adsmFree(after), adsmSuccess) << detail();
}

TEST(PlacementTest, HostResidentObjectsFollowAMovedContext) {
    const int n = device_count();
    if (n < 2 || on_gpu()) return;
    auto inc = device_kernel<increment>("placement.increment");
    const size_t len = 50000;
    std::thread([&] {
        adsmAllocAttr host = placed(ADSM_PLACE_HOST);
        auto *v = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &host));
        ASSERT_NE(v, nullptr) << detail();
        for (size_t i = 0; i < len; ++i) v[i] = 1;
        for (int d = 0; d < n; ++d) {
            ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << detail();
            inc(adsm::blocks_for(len, 256), 256, v, len);
            ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        }
        for (size_t i = 0; i < len; i += 333) ASSERT_EQ(v[i], static_cast<uint32_t>(1 + n)) << i;
        EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
    }).join();
}

// Every context on every device reads the same replicated table; a replica
// is sent again only after the CPU changed the object.
// GPUs of one address space refuse replicas (the three tests after this
// one check them where devices have memories of their own).
TEST(PlacementTest, GpusOfOneAddressSpaceRefuseReplicas) {
    if (!gpus_share_addresses()) return;
    adsmAllocAttr every = placed(ADSM_PLACE_EVERY_DEVICE);
    EXPECT_EQ(adsmAllocEx(4096, &every), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorNotSupported);
    EXPECT_NE(detail().find("one address space"), std::string::npos) << detail();
}

TEST(PlacementTest, EveryDeviceReadsAReplicaSentOnlyWhenChanged) {
    if (gpus_share_addresses()) return;  // refused: GpusOfOneAddressSpaceRefuseReplicas
    const int n = device_count();
    auto add = device_kernel<add_into>("placement.add_into");
    const size_t len = 100000;
    adsmAllocAttr every = placed(ADSM_PLACE_EVERY_DEVICE);
    auto *table = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &every));
    ASSERT_NE(table, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) table[i] = static_cast<uint32_t>(3 * i);
    auto run_everywhere = [&](uint32_t expect_delta) {
        for (int d = 0; d < n; ++d)
            std::thread([&, d] {
                ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << detail();
                auto *out = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
                ASSERT_NE(out, nullptr) << detail();
                add(adsm::blocks_for(len, 256), 256, table, out, len, static_cast<uint32_t>(d));
                ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
                for (size_t i = 0; i < len; i += 557)
                    ASSERT_EQ(out[i], static_cast<uint32_t>(3 * i + expect_delta + d)) << "device " << d << " at " << i;
                EXPECT_EQ(adsmFree(out), adsmSuccess) << detail();
            }).join();
    };
    const uint64_t updates = counter(adsm::Counter::replica_updates);
    run_everywhere(0);
    // (An integrated device's replica is the host copy itself.)
    const uint64_t discrete = static_cast<uint64_t>(discrete_devices());
    const uint64_t first = counter(adsm::Counter::replica_updates) - updates;
    if (discrete) {
        EXPECT_EQ(first, discrete) << "one copy per discrete device";
    }
    run_everywhere(0);
    const uint64_t second = counter(adsm::Counter::replica_updates) - updates - first;
    const char *protocol = getenv("ADSM_PROTOCOL");
    if (discrete && !(protocol && std::string(protocol) == "batch")) {
        EXPECT_EQ(second, 0u) << "unchanged: no device needs it again";
    }
    table[len - 1] += 5;
    for (size_t i = 0; i < len - 1; ++i) table[i] += 5;
    run_everywhere(5);
    const uint64_t third = counter(adsm::Counter::replica_updates) - updates - first - second;
    if (discrete) {
        EXPECT_EQ(third, discrete) << "changed: every discrete device needs it again";
    }
    EXPECT_EQ(adsmFree(table), adsmSuccess) << detail();
}

TEST(PlacementTest, KernelWritesToAReplicaDoNotComeBack) {
    if (!is_discrete()) return;  // one memory: the kernel writes the only copy
    if (gpus_share_addresses()) return;  // refused: GpusOfOneAddressSpaceRefuseReplicas
    auto scrib = device_kernel<scribble>("placement.scribble");
    const size_t len = 4096;
    adsmAllocAttr every = placed(ADSM_PLACE_EVERY_DEVICE);
    auto *v = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &every));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) v[i] = 42;
    scrib(adsm::blocks_for(len, 256), 256, v, len);
    // The CPU may read and even write it while the kernel runs: the kernel
    // reads its own device's copy.
    EXPECT_EQ(v[1], 42u);
    v[2] = 43;
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(v[0], 42u);
    EXPECT_EQ(v[2], 43u);
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

TEST(PlacementTest, ANamedCallMayNameAnotherContextsReplica) {
    if (gpus_share_addresses()) return;  // refused: GpusOfOneAddressSpaceRefuseReplicas
    const int n = device_count();
    auto add = device_kernel<add_into>("placement.add_into");
    const size_t len = 3000;
    adsmAllocAttr every = placed(ADSM_PLACE_EVERY_DEVICE);
    auto *table = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &every));
    ASSERT_NE(table, nullptr) << detail();
    for (size_t i = 0; i < len; ++i) table[i] = static_cast<uint32_t>(i);
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(n - 1), adsmSuccess) << detail();
        auto *out = static_cast<uint32_t *>(adsmAlloc(len * sizeof(uint32_t)));
        ASSERT_NE(out, nullptr) << detail();
        adsmObjectUse uses[] = {{table, 1}, {out, 0}};
        const uint32_t *p_table = table;
        uint32_t *p_out = out;
        size_t count = len;
        uint32_t plus = 9;
        void *args[] = {&p_table, &p_out, &count, &plus};
        ASSERT_EQ(adsmCallWith(add.handle(), {static_cast<unsigned>((len + 127) / 128), 1, 1}, {128, 1, 1}, args,
                               uses, 2),
                  adsmSuccess)
            << detail();
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        for (size_t i = 0; i < len; i += 17) ASSERT_EQ(out[i], static_cast<uint32_t>(i + 9)) << i;
        EXPECT_EQ(adsmFree(out), adsmSuccess) << detail();
    }).join();
    EXPECT_EQ(adsmFree(table), adsmSuccess) << detail();
}

// An object on a preferred device stays there whatever device its
// context runs on: kernels elsewhere reach it over the peer link.
TEST(PlacementTest, APreferredDeviceHoldsTheObjectWhereverItsContextRuns) {
    const int n = device_count();
    auto inc = device_kernel<increment>("placement.increment");
    const size_t len = 1 << 20;  // 4 MiB
    const int home = n - 1;
    std::thread([&] {
        adsmAllocAttr attr{};
        attr.place = ADSM_PLACE_PREFERRED_DEVICE;
        attr.device = home;
        std::vector<uint64_t> before(n);
        for (int d = 0; d < n; ++d) before[d] = used_on(d);
        auto *v = static_cast<uint32_t *>(adsmAllocEx(len * sizeof(uint32_t), &attr));
        if (is_discrete(home) && discrete_devices() < n) {
            // An integrated device's kernels reach host memory only.
            EXPECT_EQ(v, nullptr);
            EXPECT_EQ(adsmGetLastError(), adsmErrorNotSupported);
            EXPECT_NE(detail().find("cannot reach"), std::string::npos) << detail();
            return;
        }
        ASSERT_NE(v, nullptr) << detail();
        if (is_discrete() && n > 1) {
            EXPECT_GE(used_on(home), before[home] + len * sizeof(uint32_t)) << "its memory is the preferred device's";
            EXPECT_LT(used_on(0), before[0] + len * sizeof(uint32_t)) << "the context's device holds none of it";
        }
        for (size_t i = 0; i < len; ++i) v[i] = static_cast<uint32_t>(i);
        const uint64_t migrations = counter(adsm::Counter::migrations);
        for (int d = 0; d < n; ++d) {
            ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << detail();
            inc(adsm::blocks_for(len, 256), 256, v, len);
            ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
            v[0] += 10;  // the CPU's part between the calls
        }
        EXPECT_EQ(counter(adsm::Counter::migrations), migrations) << "it never moved";
        EXPECT_EQ(v[0], static_cast<uint32_t>(n + 10 * n));
        for (size_t i = 1; i < len; i += 1009) ASSERT_EQ(v[i], static_cast<uint32_t>(i + n)) << i;
        // Prefetched to where it lives; not to another device.
        EXPECT_EQ(adsmPrefetch(v, len * sizeof(uint32_t), home), adsmSuccess) << detail();
        if (n > 1 && is_discrete()) {
            ASSERT_EQ(adsmSetDevice(0), adsmSuccess) << detail();
            EXPECT_EQ(adsmPrefetch(v, len * sizeof(uint32_t), 0), adsmErrorInvalidValue);
        }
        EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
        if (is_discrete()) {
            EXPECT_LE(used_on(home), before[home]) << "freed from the preferred device";
        }
    }).join();
}

TEST(PlacementTest, APreferredDeviceMustExist) {
    adsmAllocAttr attr{};
    attr.place = ADSM_PLACE_PREFERRED_DEVICE;
    attr.device = device_count();
    EXPECT_EQ(adsmAllocEx(4096, &attr), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidDevice);
    EXPECT_NE(detail().find("does not exist"), std::string::npos) << detail();
    attr.device = -1;
    EXPECT_EQ(adsmAllocEx(4096, &attr), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidDevice);
}

TEST(PlacementTest, BadPlacesAreRefused) {
    adsmAllocAttr bad = placed(7);
    EXPECT_EQ(adsmAllocEx(4096, &bad), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("adsmPlace"), std::string::npos) << detail();
    adsmAllocAttr negative = placed(-1);
    EXPECT_EQ(adsmAllocEx(4096, &negative), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
}
