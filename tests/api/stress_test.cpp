#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "test_kernels.h"

using namespace adsm_test;

// (ADSM_TEST_STRESS_CYCLES runs fewer where each allocation and free is a
// round trip to a device server.)
TEST(StressTest, HundredThousandAllocFreeCycles) {
    std::mt19937 rng(1);
    std::vector<void *> pool(64, nullptr);
    const char *cycles = getenv("ADSM_TEST_STRESS_CYCLES");
    const int n_cycles = cycles ? atoi(cycles) : 100000;
    for (int i = 0; i < n_cycles; ++i) {
        size_t k = rng() % pool.size();
        if (pool[k]) {
            ASSERT_EQ(adsmFree(pool[k]), adsmSuccess) << i;
            pool[k] = nullptr;
        }
        size_t n = (rng() % 4 == 0) ? 1 + rng() % (1 << 20) : 1 + rng() % 8192;
        pool[k] = adsmAlloc(n);
        ASSERT_NE(pool[k], nullptr) << i << ": " << detail();
        static_cast<volatile char *>(pool[k])[n - 1] = 1;
    }
    for (void *p : pool) {
        if (p) {
            ASSERT_EQ(adsmFree(p), adsmSuccess);
        }
    }
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
}

TEST(StressTest, AMillionLiveRegions) {
    const size_t n = 1000000;
    std::vector<char *> regions(n);
    for (size_t i = 0; i < n; ++i) {
        regions[i] = static_cast<char *>(adsmAlloc(64));
        ASSERT_NE(regions[i], nullptr) << i << ": " << detail();
    }
    // Any interior address finds its region, in constant time.
    std::mt19937_64 rng(3);
    auto t0 = std::chrono::steady_clock::now();
    for (int probe = 0; probe < 200000; ++probe) {
        size_t i = rng() % n;
        char *inner = regions[i] + rng() % 64;
        ASSERT_EQ(adsmSafe(inner), inner);
        ASSERT_EQ(adsmGetSize(regions[i]), 64u);
    }
    auto per_lookup = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 200000;
    RecordProperty("ns_per_lookup_pair", std::to_string(per_lookup));
    // A few are written and read back through the protocol.
    for (size_t i = 0; i < n; i += 9973) regions[i][0] = 'x';
    for (size_t i = 0; i < n; i += 9973) ASSERT_EQ(regions[i][0], 'x');
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(adsmFree(regions[i]), adsmSuccess) << i;
}
