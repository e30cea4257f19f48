// os::for_each_data_run and os::data_runs: the runs of a range of the host
// mirror's file that hold data, exact at both ends of the range whatever
// lies beside it, pages out of memory (as swapped-out ones are) found by
// the file, and everything counted as data where the kernel will not say.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>

#include "memfd_mapping.h"
#include "os/data_runs.h"

namespace {

using adsm::os::Runs;
constexpr uint64_t kDataPage = 4096;
// More pages than one mincore call is asked about (512).
constexpr uint64_t kDataPages = 1300;

Runs data_runs_of(int fd, const void *view, uint64_t off, uint64_t len, bool *told = nullptr) {
    Runs runs;
    const bool all = adsm::os::for_each_data_run(
        fd, view, off, len, [](void *p, uint64_t b, uint64_t e) { static_cast<Runs *>(p)->emplace_back(b, e); },
        &runs);
    if (told) *told = all;
    return runs;
}

Runs page_runs(std::initializer_list<std::pair<uint64_t, uint64_t>> page_runs) {
    Runs r;
    for (auto [b, e] : page_runs) r.emplace_back(b * kDataPage, e * kDataPage);
    return r;
}

class DataRunsTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(file_.ok()); }
    void make(uint64_t first, uint64_t last) {
        for (uint64_t p = first; p < last; ++p) file_.data()[p * kDataPage + 11] = 1;
    }
    uint8_t *view(uint64_t page) { return file_.data() + page * kDataPage; }
    MemfdMapping file_{"data-runs-test", kDataPages * kDataPage};
};

TEST_F(DataRunsTest, RunsAreExactAndJoinedAcrossTheBatchesMincoreIsAskedIn) {
    make(0, 3);
    make(9, 10);
    make(500, 530);  // across the first batch's end
    make(1290, kDataPages);
    bool told = false;
    EXPECT_EQ(data_runs_of(file_.fd(), view(0), 0, kDataPages * kDataPage, &told),
              page_runs({{0, 3}, {9, 10}, {500, 530}, {1290, kDataPages}}));
    EXPECT_TRUE(told);
    // Relative to the range's start, clipped to its length (a part page too).
    EXPECT_EQ(data_runs_of(file_.fd(), view(2), 2 * kDataPage, 508 * kDataPage + 100), (Runs{{0, kDataPage}, {7 * kDataPage, 8 * kDataPage},
                                                                                {498 * kDataPage, 508 * kDataPage + 100}}));
    Runs collected;
    ASSERT_TRUE(adsm::os::data_runs(file_.fd(), view(500), 500 * kDataPage, 40 * kDataPage, &collected));
    EXPECT_EQ(collected, page_runs({{0, 30}}));
}

TEST_F(DataRunsTest, ARangeBesideDataEndsWhereItEnds) {
    // Objects side by side make one run of data in the file; each one's
    // answer is its own range, whole, and nothing of its neighbours'.
    make(0, kDataPages);
    for (uint64_t p = 0; p < kDataPages; p += 100)
        EXPECT_EQ(data_runs_of(file_.fd(), view(p), p * kDataPage, 3 * kDataPage), page_runs({{0, 3}})) << "page " << p;
    // A range of holes between data on both sides has none.
    ASSERT_EQ(fallocate(file_.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 600 * kDataPage, 50 * kDataPage), 0);
    EXPECT_EQ(data_runs_of(file_.fd(), view(600), 600 * kDataPage, 50 * kDataPage), Runs{});
    EXPECT_EQ(data_runs_of(file_.fd(), view(590), 590 * kDataPage, 70 * kDataPage), page_runs({{0, 10}, {60, 70}}));
}

TEST_F(DataRunsTest, PagesOutOfMemoryAreFoundByTheFile) {
    // A view whose pages are not in memory, as a swapped-out page of the
    // mirror is not: mincore says nothing of them, the file says which
    // hold data.
    make(4, 6);
    make(700, 703);
    make(1000, 1001);
    void *absent = mmap(nullptr, kDataPages * kDataPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(absent, MAP_FAILED);
    bool told = false;
    EXPECT_EQ(data_runs_of(file_.fd(), absent, 0, kDataPages * kDataPage, &told), page_runs({{4, 6}, {700, 703}, {1000, 1001}}));
    EXPECT_TRUE(told);
    // Mixed: the view in memory for some pages, not for others.
    auto *half = static_cast<uint8_t *>(absent);
    ASSERT_EQ(mprotect(half, kDataPages * kDataPage, PROT_READ | PROT_WRITE), 0);
    half[5 * kDataPage] = 1;  // in memory where the file has data too
    half[6 * kDataPage] = 1;  // and where the file has none: the view says data
    EXPECT_EQ(data_runs_of(file_.fd(), absent, 0, 710 * kDataPage), page_runs({{4, 7}, {700, 703}}));
    munmap(absent, kDataPages * kDataPage);
}

TEST_F(DataRunsTest, WhereTheKernelWillNotSayTheRestCountsAsData) {
    make(0, 2);
    // A view with a gap in it: mincore fails there.
    void *gap = mmap(nullptr, 64 * kDataPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(gap, MAP_FAILED);
    auto *g = static_cast<uint8_t *>(gap);
    ASSERT_EQ(munmap(g + 8 * kDataPage, 56 * kDataPage), 0);
    bool told = true;
    // (The first batch asked about runs into the gap: all of it counts.)
    EXPECT_EQ(data_runs_of(file_.fd(), g, 0, 20 * kDataPage, &told), page_runs({{0, 20}}));
    EXPECT_FALSE(told);
    Runs untouched = {{1, 2}};
    EXPECT_FALSE(adsm::os::data_runs(file_.fd(), g, 0, 20 * kDataPage, &untouched));
    EXPECT_EQ(untouched, (Runs{{1, 2}}));
    munmap(g, 8 * kDataPage);
}

}  // namespace
