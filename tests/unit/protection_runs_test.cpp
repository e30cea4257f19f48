// Ranges given one protection together: neighbours, in either order, take
// one change (a hold over thousands of small adjacent objects made one
// mprotect each), the others one each, and a failed change is reported
// without keeping the rest from being made.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "kernel_may_write.h"
#include "os/fault_injection.h"
#include "protocols/protection.h"

namespace {

namespace inj = adsm::os::injection;
constexpr size_t kRunsPage = 4096;

class ProtectionRunsTest : public ::testing::Test {
protected:
    void SetUp() override {
        void *p = mmap(nullptr, 8 * kRunsPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        base_ = static_cast<uint8_t *>(p);
    }
    void TearDown() override {
        inj::arm(inj::Site::protect, 0);
        munmap(base_, 8 * kRunsPage);
    }
    uintptr_t page(int i) const { return reinterpret_cast<uintptr_t>(base_ + i * kRunsPage); }
    uint8_t *base_ = nullptr;
};

TEST_F(ProtectionRunsTest, NeighboursInEitherOrderTakeOneChange) {
    // A second change would fail: pages 2, 3 and then 1 must make one.
    inj::arm(inj::Site::protect, 2);
    const uint64_t before = inj::injected(inj::Site::protect);
    adsm::ProtectionRuns runs(PROT_READ);
    runs.add(page(2), kRunsPage);
    runs.add(page(3), kRunsPage);
    runs.add(page(1), kRunsPage);
    EXPECT_EQ(runs.flush(), adsmSuccess);
    EXPECT_EQ(inj::injected(inj::Site::protect), before);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(kernel_may_write(base_ + i * kRunsPage), i < 1 || i > 3) << "page " << i;
}

TEST_F(ProtectionRunsTest, RangesApartEachTakeTheirOwn) {
    adsm::ProtectionRuns runs(PROT_READ);
    runs.add(page(0), kRunsPage);
    runs.add(page(2), 2 * kRunsPage);
    runs.add(page(6), kRunsPage);
    EXPECT_EQ(runs.flush(), adsmSuccess);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(kernel_may_write(base_ + i * kRunsPage), i != 0 && i != 2 && i != 3 && i != 6) << i;
    // Flushed, nothing is pending: a second flush changes nothing.
    adsm::ProtectionRuns open(PROT_READ | PROT_WRITE);
    open.add(page(0), 8 * kRunsPage);
    EXPECT_EQ(open.flush(), adsmSuccess);
    EXPECT_EQ(open.flush(), adsmSuccess);
    for (int i = 0; i < 8; ++i) EXPECT_TRUE(kernel_may_write(base_ + i * kRunsPage)) << i;
}

TEST_F(ProtectionRunsTest, AFailedChangeIsReportedAndTheOthersAreMade) {
    inj::arm(inj::Site::protect, 1);  // the first run's change fails
    adsm::ProtectionRuns runs(PROT_READ);
    runs.add(page(0), 2 * kRunsPage);
    runs.add(page(4), kRunsPage);
    runs.add(page(6), kRunsPage);
    EXPECT_EQ(runs.flush(), adsmErrorMemoryAllocation);
    EXPECT_NE(std::string(adsm::last_detail()).find("cannot change the protection"), std::string::npos)
        << adsm::last_detail();
    for (int i = 0; i < 8; ++i) EXPECT_EQ(kernel_may_write(base_ + i * kRunsPage), i != 4 && i != 6) << i;
}

}  // namespace
