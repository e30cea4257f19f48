// The record of a routed program's advice and prefetches, which the CUDA
// range queries answer from (interpose/range_advice.h): page by page, as
// the driver keeps it.
#include "interpose/range_advice.h"

#include <gtest/gtest.h>

namespace ra = adsm::interpose::range_advice;

namespace {

constexpr size_t kPage = 4096;
const ra::Location kHost{ra::Where::host, 0};
ra::Location device(int d) { return {ra::Where::device, d}; }

// An allocation of eight pages and a half, at an address no test shares,
// with no record yet (a repeated test finds none of its last run's).
ra::Allocation allocation(uintptr_t base, uint64_t identity = 1) {
    ra::forget(base);
    return {base, 8 * kPage + kPage / 2, identity};
}

TEST(RangeAdvice, NoAdviceIsNone) {
    ra::Allocation a = allocation(0x10000000);
    ra::Summary s = ra::summary(a, a.base, a.size);
    EXPECT_FALSE(s.read_mostly);
    EXPECT_EQ(s.preferred.where, ra::Where::none);
    EXPECT_EQ(s.last_prefetch.where, ra::Where::none);
    EXPECT_EQ(s.accessed_by, 0u);
}

TEST(RangeAdvice, ReadMostlyOnlyWhereEveryPageIs) {
    ra::Allocation a = allocation(0x20000000);
    ASSERT_TRUE(ra::advise(a, a.base + 2 * kPage, 3 * kPage, ra::Advice::read_mostly, {}));
    EXPECT_TRUE(ra::summary(a, a.base + 2 * kPage, 3 * kPage).read_mostly);
    EXPECT_TRUE(ra::summary(a, a.base + 3 * kPage + 100, 10).read_mostly) << "a byte range means its pages";
    EXPECT_FALSE(ra::summary(a, a.base + kPage, 2 * kPage).read_mostly);
    EXPECT_FALSE(ra::summary(a, a.base, a.size).read_mostly);
    ASSERT_TRUE(ra::advise(a, a.base + 3 * kPage, 1, ra::Advice::not_read_mostly, {}));
    EXPECT_FALSE(ra::summary(a, a.base + 2 * kPage, 3 * kPage).read_mostly);
    EXPECT_TRUE(ra::summary(a, a.base + 4 * kPage, kPage).read_mostly);
}

TEST(RangeAdvice, PreferredLocationIsCommonOrNone) {
    ra::Allocation a = allocation(0x30000000);
    ASSERT_TRUE(ra::advise(a, a.base, 4 * kPage, ra::Advice::prefer, device(0)));
    ASSERT_TRUE(ra::advise(a, a.base + 4 * kPage, a.size - 4 * kPage, ra::Advice::prefer, kHost));
    EXPECT_TRUE(ra::summary(a, a.base, 4 * kPage).preferred == device(0));
    EXPECT_TRUE(ra::summary(a, a.base + 8 * kPage, 10).preferred == kHost) << "the last, partial page";
    EXPECT_EQ(ra::summary(a, a.base, a.size).preferred.where, ra::Where::none);
    ASSERT_TRUE(ra::advise(a, a.base + kPage, kPage, ra::Advice::no_preference, {}));
    EXPECT_EQ(ra::summary(a, a.base, 4 * kPage).preferred.where, ra::Where::none);
    EXPECT_TRUE(ra::summary(a, a.base + 2 * kPage, 2 * kPage).preferred == device(0));
    ASSERT_TRUE(ra::advise(a, a.base, 4 * kPage, ra::Advice::prefer, device(1)));
    EXPECT_TRUE(ra::summary(a, a.base, 4 * kPage).preferred == device(1)) << "later advice replaces earlier";
}

TEST(RangeAdvice, AccessedByEveryPage) {
    ra::Allocation a = allocation(0x40000000);
    ASSERT_TRUE(ra::advise(a, a.base, a.size, ra::Advice::accessed_by, kHost));
    ASSERT_TRUE(ra::advise(a, a.base, a.size, ra::Advice::accessed_by, device(2)));
    ASSERT_TRUE(ra::advise(a, a.base + 5 * kPage, kPage, ra::Advice::not_accessed_by, device(2)));
    EXPECT_EQ(ra::summary(a, a.base, 5 * kPage).accessed_by, 1u | 2u << 2);
    EXPECT_EQ(ra::summary(a, a.base, a.size).accessed_by, 1u) << "device 2 is not on page 5";
    EXPECT_FALSE(ra::advise(a, a.base, kPage, ra::Advice::accessed_by, device(ra::kMaxDevices)));
    EXPECT_FALSE(ra::advise(a, a.base, kPage, ra::Advice::accessed_by, device(-3)));
}

TEST(RangeAdvice, LastPrefetchIsCommonOrNone) {
    ra::Allocation a = allocation(0x50000000);
    ra::prefetched(a, a.base, a.size, device(0));
    EXPECT_TRUE(ra::summary(a, a.base, a.size).last_prefetch == device(0));
    ra::prefetched(a, a.base + 6 * kPage, kPage, kHost);
    EXPECT_EQ(ra::summary(a, a.base, a.size).last_prefetch.where, ra::Where::none);
    EXPECT_TRUE(ra::summary(a, a.base + 6 * kPage, kPage).last_prefetch == kHost);
    EXPECT_TRUE(ra::summary(a, a.base, 6 * kPage).last_prefetch == device(0));
}

TEST(RangeAdvice, AnotherAllocationAtTheSameBaseStartsAnew) {
    ra::Allocation a = allocation(0x60000000, 7);
    ASSERT_TRUE(ra::advise(a, a.base, a.size, ra::Advice::read_mostly, {}));
    ra::Allocation later = {a.base, a.size, 8};  // (not forgotten first: replaced by its identity)
    EXPECT_FALSE(ra::summary(later, later.base, later.size).read_mostly);
    ASSERT_TRUE(ra::advise(later, later.base, kPage, ra::Advice::prefer, kHost));
    EXPECT_FALSE(ra::summary(later, later.base, kPage).read_mostly) << "the earlier allocation's advice is gone";
    EXPECT_FALSE(ra::summary(a, a.base, kPage).read_mostly);
}

TEST(RangeAdvice, ForgottenWhenFreed) {
    ra::Allocation a = allocation(0x70000000);
    ASSERT_TRUE(ra::advise(a, a.base, a.size, ra::Advice::prefer, kHost));
    ra::forget(a.base);
    EXPECT_EQ(ra::summary(a, a.base, a.size).preferred.where, ra::Where::none);
}

TEST(RangeAdvice, ManyPiecesAgreeWithAPageByPageModel) {
    // Advice on ranges that overlap in every way, against a plain array.
    ra::Allocation a = allocation(0x80000000);
    const int pages = 9;
    int model[pages];  // a device, 2 the host, -1 none
    for (int &m : model) m = -1;
    unsigned seed = 12345;
    for (int step = 0; step < 200; ++step) {
        seed = seed * 1103515245 + 12345;
        int first = static_cast<int>(seed >> 8) % pages, len = 1 + static_cast<int>(seed >> 20) % (pages - first);
        int d = static_cast<int>(seed >> 4) % 3;
        ra::Location at = d == 2 ? kHost : device(d);
        ASSERT_TRUE(ra::advise(a, a.base + first * kPage, len * kPage - 1, ra::Advice::prefer, at));
        for (int i = first; i < first + len; ++i) model[i] = d;
        for (int f = 0; f < pages; ++f)
            for (int l = 1; f + l <= pages; ++l) {
                bool same = true;
                for (int i = f; i < f + l; ++i) same = same && model[i] == model[f];
                ra::Location got = ra::summary(a, a.base + f * kPage, l * kPage).preferred;
                ra::Location want = !same || model[f] < 0 ? ra::Location{} : model[f] == 2 ? kHost : device(model[f]);
                ASSERT_TRUE(got == want) << "step " << step << ", pages " << f << "+" << l;
            }
    }
}

}  // namespace
