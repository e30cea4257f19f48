// The list of freed malloc blocks kept for reuse (memory/kept_blocks.h):
// which block a malloc gets, and which ones the bounds push out.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "memory/kept_blocks.h"
#include "memory/region.h"
#include "support/stats.h"

using adsm::KeptBlocks;

namespace {

constexpr uint64_t kMiB = 1 << 20;

// Stand-ins: the list only compares the pointers.
adsm::Region *region(int i) { return reinterpret_cast<adsm::Region *>(uintptr_t{0x1000} * (i + 1)); }
adsm::Context *context(int i) { return reinterpret_cast<adsm::Context *>(uintptr_t{0x100000} * (i + 1)); }
const adsm::Device *device(int i) { return reinterpret_cast<const adsm::Device *>(uintptr_t{0x10000000} * (i + 1)); }

// (Contexts 0 and 1 on device 0, context 2 on device 1.)
const adsm::Device *device_of(int owner) { return device(owner == 2 ? 1 : 0); }
KeptBlocks::Entry block(int i, uint64_t span, int owner = 0) {
    return {region(i), 1, context(owner), span, device_of(owner)};
}
bool take(KeptBlocks &k, int owner, uint64_t span, KeptBlocks::Entry *e) {
    return k.take(context(owner), device_of(owner), span, e);
}

}  // namespace

TEST(KeptBlocksTest, AMallocGetsTheSmallestOfItsOwnersBlocksThatHoldsIt) {
    KeptBlocks k(64 * kMiB);
    KeptBlocks::Entry out[KeptBlocks::kMax];
    EXPECT_EQ(k.add(block(0, 8 * kMiB), out), 0);
    EXPECT_EQ(k.add(block(1, 5 * kMiB), out), 0);
    EXPECT_EQ(k.add(block(2, 4 * kMiB, 1), out), 0);  // another context's
    EXPECT_EQ(k.add(block(3, 6 * kMiB), out), 0);
    KeptBlocks::Entry e;
    ASSERT_TRUE(take(k, 0, 4 * kMiB, &e));
    EXPECT_EQ(e.r, region(1)) << "5 MiB: the smallest of its own that holds 4, before another context's 4";
    ASSERT_TRUE(take(k, 0, 4 * kMiB, &e));
    EXPECT_EQ(e.r, region(3));
    ASSERT_TRUE(take(k, 0, 4 * kMiB + 4096, &e));
    EXPECT_EQ(e.r, region(0));
    ASSERT_TRUE(take(k, 1, 4 * kMiB, &e));
    EXPECT_EQ(e.r, region(2));
    EXPECT_FALSE(take(k, 1, 4 * kMiB, &e)) << "each block is taken once";
    EXPECT_EQ(k.add(block(4, 8 * kMiB), out), 0);
    EXPECT_FALSE(take(k, 0, 4 * kMiB, &e)) << "8 MiB is twice 4 or more: a new block gives its pages back";
}

TEST(KeptBlocksTest, AnotherContextsBlockOnTheSameDeviceIsTakenWhenItsOwnHasNone) {
    KeptBlocks k(64 * kMiB);
    KeptBlocks::Entry out[KeptBlocks::kMax];
    EXPECT_EQ(k.add(block(0, 4 * kMiB, 1), out), 0);  // context 1's, device 0
    EXPECT_EQ(k.add(block(1, 3 * kMiB, 2), out), 0);  // context 2's, device 1
    EXPECT_EQ(k.add(block(2, 5 * kMiB, 1), out), 0);
    KeptBlocks::Entry e;
    ASSERT_TRUE(take(k, 0, 3 * kMiB, &e)) << "a thread that frees what another mallocs";
    EXPECT_EQ(e.r, region(0)) << "the smallest on its device that holds it, not device 1's 3 MiB";
    EXPECT_EQ(e.owner, context(1));
    ASSERT_TRUE(take(k, 0, 3 * kMiB, &e));
    EXPECT_EQ(e.r, region(2));
    EXPECT_FALSE(take(k, 0, 3 * kMiB, &e)) << "never another device's";
    ASSERT_TRUE(take(k, 2, 3 * kMiB, &e));
    EXPECT_EQ(e.r, region(1));
}

TEST(KeptBlocksTest, TheOldestGoWhenTheBoundsWouldBePassed) {
    KeptBlocks k(10 * kMiB);
    KeptBlocks::Entry out[KeptBlocks::kMax];
    EXPECT_EQ(k.add(block(0, 4 * kMiB), out), 0);
    EXPECT_EQ(k.add(block(1, 4 * kMiB), out), 0);
    ASSERT_EQ(k.add(block(2, 4 * kMiB), out), 1) << "12 MiB kept would pass 10";
    EXPECT_EQ(out[0].r, region(0));
    ASSERT_EQ(k.add(block(3, 10 * kMiB), out), 2);
    EXPECT_EQ(out[0].r, region(1));
    EXPECT_EQ(out[1].r, region(2));
    EXPECT_FALSE(k.takes(10 * kMiB + 1)) << "a block larger than the bound is never kept";
    EXPECT_TRUE(k.takes(10 * kMiB));

    KeptBlocks many(64 * kMiB);
    for (int i = 0; i < KeptBlocks::kMax; ++i) EXPECT_EQ(many.add(block(i, kMiB), out), 0);
    ASSERT_EQ(many.add(block(KeptBlocks::kMax, kMiB), out), 1) << "at most kMax blocks";
    EXPECT_EQ(out[0].r, region(0));
}

TEST(KeptBlocksTest, TakeAllEmptiesTheList) {
    KeptBlocks k(64 * kMiB);
    KeptBlocks::Entry out[KeptBlocks::kMax];
    EXPECT_EQ(k.add(block(0, kMiB), out), 0);
    EXPECT_EQ(k.add(block(1, 2 * kMiB, 1), out), 0);
    ASSERT_EQ(k.take_all(out), 2);
    EXPECT_EQ(out[0].r, region(0));
    EXPECT_EQ(out[1].r, region(1));
    KeptBlocks::Entry e;
    EXPECT_FALSE(take(k, 0, kMiB, &e));
    EXPECT_EQ(k.take_all(out), 0);
    for (int i = 0; i < KeptBlocks::kMax; ++i) EXPECT_EQ(k.add(block(i, 8 * kMiB), out), 0) << "its bytes were reset";
}

TEST(KeptBlocksTest, NoneKeptWithABoundOfZero) {
    KeptBlocks k(0);
    EXPECT_FALSE(k.takes(4096));
}

// The statistics' busiest regions: a kept block is a freed one, with its
// pages' size (its traffic is that of every object it held), said to be kept.
TEST(KeptBlocksTest, TheStatisticsShowAKeptBlockAsFreedAndKept) {
    adsm::Region r;
    r.host = 0x300000000000;
    r.span = 4 * kMiB;
    r.size = 0;
    r.stats.h2d_bytes.store(8 * kMiB);  // (regions that moved nothing are not listed)
    const auto s = r.summary<adsm::RegionSummary>(false);
    EXPECT_TRUE(s.kept);
    EXPECT_TRUE(s.freed);
    EXPECT_EQ(s.size, 4 * kMiB);
    r.size = 100;
    EXPECT_FALSE(r.summary<adsm::RegionSummary>(false).kept);
    char *text = nullptr;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ASSERT_NE(out, nullptr);
    adsm::Stats().print(out, "test", {s});
    fclose(out);
    EXPECT_NE(std::string(text).find("4194304"), std::string::npos) << text;
    EXPECT_NE(std::string(text).find("(freed, kept for reuse)"), std::string::npos) << text;
    free(text);
}
