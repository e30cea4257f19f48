#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "memory/range_allocator.h"

using adsm::RangeAllocator;

TEST(RangeAllocatorTest, CarvesFromTheStart) {
    RangeAllocator a;
    a.init(0x1000000, 1 << 20, 0, 0);
    uint64_t x, y;
    ASSERT_TRUE(a.allocate(4096, &x));
    ASSERT_TRUE(a.allocate(8192, &y));
    EXPECT_EQ(x, 0x1000000u);
    EXPECT_EQ(y, 0x1001000u);
    EXPECT_EQ(a.free_bytes(), (1u << 20) - 12288);
}

TEST(RangeAllocatorTest, CoalescesNeighbours) {
    RangeAllocator a;
    a.init(0, 16 * 4096, 0, 0);
    std::vector<uint64_t> r(4);
    for (auto &v : r) ASSERT_TRUE(a.allocate(4 * 4096, &v));
    uint64_t none;
    EXPECT_FALSE(a.allocate(4096, &none));
    a.release(r[1], 4 * 4096);
    a.release(r[2], 4 * 4096);
    EXPECT_EQ(a.free_ranges(), 1u);
    a.release(r[0], 4 * 4096);
    a.release(r[3], 4 * 4096);
    EXPECT_EQ(a.free_ranges(), 1u);
    uint64_t all;
    ASSERT_TRUE(a.allocate(16 * 4096, &all));
    EXPECT_EQ(all, 0u);
}

TEST(RangeAllocatorTest, BestFitPrefersTheSmallestHole) {
    RangeAllocator a;
    a.init(0, 100 * 4096, 0, 0);
    uint64_t r[5];
    uint64_t sizes[5] = {8, 1, 3, 1, 87};
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.allocate(sizes[i] * 4096, &r[i]));
    a.release(r[0], 8 * 4096);  // hole of 8
    a.release(r[2], 3 * 4096);  // hole of 3
    uint64_t x;
    ASSERT_TRUE(a.allocate(2 * 4096, &x));
    EXPECT_EQ(x, r[2]);
}

TEST(RangeAllocatorTest, QuarantineDelaysReuse) {
    RangeAllocator a;
    a.init(0, 1 << 30, 4, 1 << 30);
    uint64_t first;
    ASSERT_TRUE(a.allocate(4096, &first));
    a.release(first, 4096);
    // While quarantined, the freed range is not handed out again.
    for (int i = 0; i < 3; ++i) {
        uint64_t x;
        ASSERT_TRUE(a.allocate(4096, &x));
        EXPECT_NE(x, first);
        a.release(x, 4096);
    }
    EXPECT_EQ(a.quarantined_bytes(), 4u * 4096);
}

TEST(RangeAllocatorTest, QuarantineIsUsedRatherThanFailing) {
    RangeAllocator a;
    a.init(0, 4 * 4096, 100, 1 << 30);
    uint64_t x[4];
    for (auto &v : x) ASSERT_TRUE(a.allocate(4096, &v));
    for (auto v : x) a.release(v, 4096);
    uint64_t big;
    ASSERT_TRUE(a.allocate(4 * 4096, &big));
    EXPECT_EQ(big, 0u);
}

TEST(RangeAllocatorTest, RandomisedAgainstAModel) {
    RangeAllocator a;
    const uint64_t pages = 4096;
    a.init(0, pages * 4096, 8, 64 * 4096);
    std::vector<std::pair<uint64_t, uint64_t>> live;
    std::vector<bool> used(pages, false);
    std::mt19937_64 rng(7);
    for (int step = 0; step < 20000; ++step) {
        if (live.empty() || rng() % 3 != 0) {
            uint64_t n = 1 + rng() % 16;
            uint64_t at;
            if (!a.allocate(n * 4096, &at)) continue;
            ASSERT_EQ(at % 4096, 0u);
            for (uint64_t p = at / 4096; p < at / 4096 + n; ++p) {
                ASSERT_LT(p, pages);
                ASSERT_FALSE(used[p]) << "page handed out twice";
                used[p] = true;
            }
            live.emplace_back(at, n);
        } else {
            size_t i = rng() % live.size();
            auto [at, n] = live[i];
            for (uint64_t p = at / 4096; p < at / 4096 + n; ++p) used[p] = false;
            a.release(at, n * 4096);
            live[i] = live.back();
            live.pop_back();
        }
    }
    uint64_t in_use = 0;
    for (auto &l : live) in_use += l.second * 4096;
    EXPECT_EQ(a.free_bytes() + a.quarantined_bytes() + in_use, pages * 4096);
}
