// The write tracker shared by two readers (the protocol and the collector):
// each finds every page written since it last asked, whichever of them
// armed the page again in between.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "os/uffd.h"
#include "os/vm.h"

namespace {

using adsm::os::UffdTracker;

constexpr size_t kPages = 192;
constexpr size_t kBytes = kPages * 4096;

class UffdReadersTest : public ::testing::Test {
protected:
    void SetUp() override {
        const char *why = "";
        if (!UffdTracker::available(&why)) GTEST_SKIP() << "no write tracking on this kernel: " << why;
        fd_ = adsm::os::memfd_sized("uffd-readers-test", kBytes);
        ASSERT_GE(fd_, 0);
        void *p = adsm::os::map_shared(fd_, 0, kBytes, PROT_READ | PROT_WRITE);
        ASSERT_NE(p, MAP_FAILED);
        base_ = static_cast<uint8_t *>(p);
        const char *step = "";
        ASSERT_EQ(t_.init(addr(0), kBytes, &step), 0) << step;
        ASSERT_EQ(t_.arm(addr(0), kBytes), 0);
    }
    void TearDown() override {
        if (base_) adsm::os::unmap(base_, kBytes);
        if (fd_ >= 0) close(fd_);
    }
    uintptr_t addr(size_t page) const { return reinterpret_cast<uintptr_t>(base_) + page * 4096; }
    void write(size_t page) { base_[page * 4096 + 8] = 1; }
    // The runs of pages `who` finds written in [first, first+n) pages, as
    // (first page, pages), arming them again.
    using Runs = std::vector<std::pair<size_t, size_t>>;
    Runs runs(UffdTracker::Reader who, size_t first = 0, size_t n = kPages) {
        Runs out;
        struct Arg {
            Runs *out;
            uintptr_t base;
        } arg{&out, addr(0)};
        EXPECT_EQ(t_.collect(addr(first), n * 4096,
                             [](void *a, uintptr_t start, size_t len) {
                                 auto *g = static_cast<Arg *>(a);
                                 g->out->emplace_back((start - g->base) / 4096, len / 4096);
                             },
                             &arg, who),
                  0);
        return out;
    }
    // The pages `who` finds written in the whole range.
    std::set<size_t> found(UffdTracker::Reader who) {
        std::set<size_t> pages;
        for (auto [first, n] : runs(who))
            for (size_t p = first; p < first + n; ++p) pages.insert(p);
        return pages;
    }

    int fd_ = -1;
    uint8_t *base_ = nullptr;
    UffdTracker t_;
};

using Pages = std::set<size_t>;

TEST_F(UffdReadersTest, AloneTheProtocolFindsWhatWasWrittenOnce) {
    write(3);
    write(9);
    EXPECT_EQ(found(UffdTracker::kProtocol), (Pages{3, 9}));
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{});
}

TEST_F(UffdReadersTest, ANewReaderFindsWhatWasWrittenSinceItJoined) {
    write(3);
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{3});
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    EXPECT_EQ(found(UffdTracker::kCollector), Pages{});
    write(5);
    EXPECT_EQ(found(UffdTracker::kCollector), Pages{5});
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{5});
}

TEST_F(UffdReadersTest, EachReaderFindsWritesTheOtherArmedAgain) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    write(1);
    write(2);
    EXPECT_EQ(found(UffdTracker::kProtocol), (Pages{1, 2}));
    write(2);
    write(7);
    EXPECT_EQ(found(UffdTracker::kCollector), (Pages{1, 2, 7}));
    EXPECT_EQ(found(UffdTracker::kProtocol), (Pages{2, 7}));
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{});
    EXPECT_EQ(found(UffdTracker::kCollector), Pages{});
}

TEST_F(UffdReadersTest, WritesTheKernelCannotSeeReachEveryReaderButTheProtocol) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    t_.note_unseen(addr(4) + 100, 5000);  // pages 4 and 5
    EXPECT_EQ(found(UffdTracker::kCollector), (Pages{4, 5}));
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{});
}

TEST_F(UffdReadersTest, ArmingForTheProtocolLeavesTheCollectorsWrites) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    write(6);
    ASSERT_EQ(t_.arm(addr(6), 4096), 0);
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{});
    EXPECT_EQ(found(UffdTracker::kCollector), Pages{6});
}

// A page the collector found written is logged for the protocol too; if
// its object is freed before a release asks, an object made later in the
// same range must not find it (its first release would send host bytes
// over what the device holds).
TEST_F(UffdReadersTest, ArmingForTheProtocolForgetsWhatTheCollectorLoggedForIt) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    write(6);
    write(7);
    write(40);
    EXPECT_EQ(found(UffdTracker::kCollector), (Pages{6, 7, 40}));
    ASSERT_EQ(t_.arm(addr(6), 2 * 4096), 0);
    EXPECT_EQ(found(UffdTracker::kProtocol), Pages{40});
    // (Arming counts the range as written for the other readers.)
    EXPECT_EQ(found(UffdTracker::kCollector), (Pages{6, 7}));
}

TEST_F(UffdReadersTest, ARangeInsideTheWindowReportsOnlyItsOwnPages) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    write(10);
    write(20);
    EXPECT_EQ(runs(UffdTracker::kCollector, 16, 8), (Runs{{20, 1}}));
    EXPECT_EQ(found(UffdTracker::kCollector), Pages{10});
    EXPECT_FALSE(t_.collecting());
    EXPECT_TRUE(t_.usable());
}

TEST_F(UffdReadersTest, RunsOfPagesCrossWordsWhole) {
    ASSERT_EQ(t_.add_reader(UffdTracker::kCollector), 0);
    found(UffdTracker::kCollector);
    for (size_t p = 60; p < 134; ++p) write(p);  // across two 64-page words
    write(140);
    write(191);
    // The protocol's report comes from its log once the collector reads too.
    EXPECT_EQ(runs(UffdTracker::kProtocol), (Runs{{60, 74}, {140, 1}, {191, 1}}));
}

}  // namespace
