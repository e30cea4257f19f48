#include <fstream>
#include <numeric>
#include <vector>

#include "test_kernels.h"

using namespace adsm_test;

TEST(ApiTest, OneAddressForCpuAndDevice) {
    void *p = adsmAlloc(10000);
    ASSERT_NE(p, nullptr) << detail();
    EXPECT_EQ(adsmSafe(p), p);
    EXPECT_EQ(adsmSafe(static_cast<char *>(p) + 9999), static_cast<char *>(p) + 9999);
    EXPECT_EQ(adsmGetSize(p), 10000u);
    EXPECT_EQ(adsmGetSize(static_cast<char *>(p) + 1), 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// libfabric (whose PSM provider's library sleeps 0.2 s and takes six
// signals when loaded) is loaded by the processes that use a remote device
// and by no other.
TEST(ApiTest, LibfabricIsLoadedOnlyForARemoteDevice) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool loaded = false;
    while (std::getline(maps, line)) loaded |= line.find("libfabric.so") != std::string::npos;
    EXPECT_EQ(loaded, on_remote());
}

TEST(ApiTest, KernelSeesCpuDataAndCpuSeesKernelData) {
    auto k = adsm_test::device_kernel<saxpy>("api.saxpy");
    const size_t n = 100000;
    adsm::shared_array<float> x(n), y(n);
    for (size_t i = 0; i < n; ++i) {
        x[i] = float(i);
        y[i] = 1.0f;
    }
    k(adsm::blocks_for(n, 128), 128, 3.0f, x.data(), y.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * float(i) + 1.0f) << i;
    // A second round trip sees the CPU's newer data.
    for (size_t i = 0; i < n; ++i) x[i] = 1.0f;
    k(adsm::blocks_for(n, 128), 128, -1.0f, x.data(), y.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * float(i)) << i;
}

TEST(ApiTest, EmbeddedPointersAcrossAllocations) {
    auto k = adsm_test::device_kernel<list_sum>("api.list_sum");
    // Nodes in many separate allocations, linked in a shuffled order.
    std::vector<Node *> nodes;
    for (int i = 0; i < 50; ++i) {
        auto *n = static_cast<Node *>(adsmAlloc(sizeof(Node)));
        ASSERT_NE(n, nullptr);
        n->value = uint64_t(i + 1) * 1000 + 7;
        nodes.push_back(n);
    }
    // Chain them in a shuffled order.
    std::vector<int> order(50);
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = 0; i < 50; ++i) std::swap(order[i], order[(i * 31 + 11) % 50]);
    for (size_t i = 0; i < 50; ++i) nodes[order[i]]->next = i + 1 < 50 ? nodes[order[i + 1]] : nullptr;
    adsm::shared_array<uint64_t> out(1);
    out[0] = 0;
    k(1, 1, nodes[order[0]], out.data());
    adsm::sync();
    uint64_t expected = 0;
    for (int i = 0; i < 50; ++i) expected += uint64_t(i + 1) * 1000 + 7;
    EXPECT_EQ(out[0], expected);
    for (Node *n : nodes) EXPECT_EQ(adsmFree(n), adsmSuccess);
}

TEST(ApiTest, GridAndBlockIndicesInThreeDimensions) {
    auto k = adsm_test::device_kernel<write_indices>("api.write_indices");
    adsm::dim3 grid(3, 4, 2), block(8, 2, 2);
    size_t total = 3 * 4 * 2 * 8 * 2 * 2;
    adsm::shared_array<uint32_t> out(total);
    for (auto &v : out) v = 0xffffffffu;
    k(grid, block, out.data());
    adsm::sync();
    size_t i = 0;
    for (unsigned bz = 0; bz < 2; ++bz)
        for (unsigned by = 0; by < 4; ++by)
            for (unsigned bx = 0; bx < 3; ++bx)
                for (unsigned t = 0; t < 32; ++t, ++i) EXPECT_EQ(out[i], bz << 24 | by << 16 | bx << 8 | (t % 8)) << i;
}

TEST(ApiTest, ArgumentsArePassedByValue) {
    auto k = adsm_test::device_kernel<by_value>("api.by_value");
    adsm::shared_array<Params> out(1);
    Params p{41, 2.5, "hello device"};
    k(1, 1, p, out.data());
    adsm::sync();
    EXPECT_EQ(out[0].a, 42);
    EXPECT_EQ(out[0].b, 2.5);
    EXPECT_STREQ(out[0].tag, "hello device");
    EXPECT_EQ(p.a, 41);
}

TEST(ApiTest, SeveralCallsThenOneSync) {
    auto k = adsm_test::device_kernel<increment>("api.increment");
    const size_t n = 5000;
    adsm::shared_array<uint32_t> v(n);
    for (auto &x : v) x = 10;
    for (int i = 0; i < 25; ++i) k(adsm::blocks_for(n, 256), 256, v.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 35u);
}

TEST(ApiTest, SafeAllocationsTranslate) {
    auto k = adsm_test::device_kernel<increment>("api.increment");
    const size_t n = 3000;
    auto *cpu = static_cast<uint32_t *>(adsmSafeAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(cpu, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) cpu[i] = uint32_t(i);
    auto *dev = static_cast<uint32_t *>(adsmSafe(cpu));
    ASSERT_NE(dev, nullptr);
    if (is_discrete()) {
        EXPECT_NE(dev, cpu) << "a safe allocation's device copy lives elsewhere on a discrete device";
    } else {
        EXPECT_EQ(dev, cpu) << "an integrated device shares the CPU's copy";
    }
    EXPECT_EQ(adsmSafe(cpu + 10), dev + 10);
    k(adsm::blocks_for(n, 64), 64, dev, n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(cpu[i], uint32_t(i) + 1);
    EXPECT_EQ(adsmFree(cpu), adsmSuccess);
}

TEST(ApiTest, MemsetAndMemcpyOnSharedMemory) {
    auto k = adsm_test::device_kernel<increment>("api.increment");
    const size_t n = 20000;
    adsm::shared_array<uint32_t> a(n), b(n);
    ASSERT_EQ(adsmMemset(a.data(), 0, n * sizeof(uint32_t)), adsmSuccess);
    std::vector<uint32_t> host(n);
    std::iota(host.begin(), host.end(), 5u);
    ASSERT_EQ(adsmMemcpy(b.data(), host.data(), n * sizeof(uint32_t)), adsmSuccess);
    ASSERT_EQ(adsmMemcpy(a.data() + 100, b.data(), 50 * sizeof(uint32_t)), adsmSuccess);
    k(adsm::blocks_for(n, 256), 256, a.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], (i >= 100 && i < 150 ? uint32_t(i - 100 + 5) : 0u) + 1) << i;
    std::vector<uint32_t> back(n);
    ASSERT_EQ(adsmMemcpy(back.data(), a.data(), n * sizeof(uint32_t)), adsmSuccess);
    EXPECT_EQ(back[120], 26u);
}

TEST(ApiTest, CallocZeroesEvenReusedMemory) {
    for (size_t size : {size_t(100), size_t(5000), size_t(300000)}) {
        for (int round = 0; round < 3; ++round) {
            auto *p = static_cast<unsigned char *>(adsmCalloc(size, 1));
            ASSERT_NE(p, nullptr);
            for (size_t i = 0; i < size; ++i) ASSERT_EQ(p[i], 0) << size << " " << i;
            memset(p, 0xab, size);
            ASSERT_EQ(adsmFree(p), adsmSuccess);
        }
    }
}

TEST(ApiTest, DeviceInfoDescribesTheBackend) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    // Device 0's, the calling thread's: the first of ADSM_DEVICE's list.
    std::string list = getenv("ADSM_DEVICE") ? getenv("ADSM_DEVICE") : "sim";
    std::string first = list.substr(0, list.find(','));
    const char *want = first.c_str();
    if (getenv("ADSM_VISIBLE_DEVICES")) want = info.name;  // the test below checks the renumbering
    EXPECT_STREQ(info.name, want);
    EXPECT_EQ(info.integrated, std::string(want) == "cpu");
    EXPECT_GT(info.memory_bytes, 0u);
    const char *protocol = getenv("ADSM_PROTOCOL") ? getenv("ADSM_PROTOCOL") : "delta";
    // (A list mixing kinds runs the protocol for its discrete devices.)
    EXPECT_STREQ(info.protocol, discrete_devices() == 0 ? "integrated" : protocol);
    std::string tracking = info.dirty_tracking;
    if (std::string(info.protocol) == "batch" || std::string(info.protocol) == "integrated") {
        EXPECT_EQ(tracking, "-");
    } else {
        const char *asked = getenv("ADSM_DIRTY_TRACKING");
        if (asked && std::string(asked) != "auto") EXPECT_EQ(tracking, asked);
        else EXPECT_TRUE(tracking == "uffd" || tracking == "mprotect") << tracking;
    }
    EXPECT_EQ(adsmGetDeviceInfo(nullptr), adsmErrorInvalidValue);
}

TEST(ApiTest, LargeAllocationsWork) {
    auto k = adsm_test::device_kernel<increment>("api.increment");
    const size_t n = (64u << 20) / sizeof(uint32_t);
    adsm::shared_array<uint32_t> v(n);
    for (size_t i = 0; i < n; i += 1024) v[i] = uint32_t(i);
    k(adsm::blocks_for(n, 1024), 1024, v.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; i += 1024) ASSERT_EQ(v[i], uint32_t(i) + 1);
}
