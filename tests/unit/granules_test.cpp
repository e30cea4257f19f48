// gpu::Granules against a driver that records what it is asked and refuses
// what the CUDA driver refuses (a registration overlapping another), over
// a real memfd mirror: device memory in granules shared by allocations,
// host pages pinned in registrations that may span granules and outlive
// some of them.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "backend/gpu/granules.h"
#include "support/stats.h"
#include "memfd_mapping.h"

namespace {

using adsm::Status;
using adsm::gpu::Granules;
using adsm::gpu::Pinning;

constexpr uint64_t kGranule = 2 << 20;
constexpr uintptr_t kBase = 0x300000000000;  // device addresses: never touched
constexpr uint64_t kWindow = 32 * kGranule;

class RecordingDriver final : public adsm::gpu::GranuleDriver {
public:
    Status back(uintptr_t, uint64_t, uint64_t *handle) override {
        if (room >= 0 && backed >= room) return adsmErrorMemoryAllocation;
        *handle = ++handles;
        ++backed;
        return adsmSuccess;
    }
    bool unback(uintptr_t va, uint64_t, uint64_t) override {
        if (refused_unmaps > 0) {
            --refused_unmaps;
            ++refused;
            return false;
        }
        --backed;
        unmapped.push_back(va);
        return true;
    }
    Status reserve_scratch(uint64_t size, uintptr_t *va) override {
        *va = 0x500000000000;
        scratch = size;
        return adsmSuccess;
    }
    void free_scratch(uintptr_t, uint64_t) override { scratch = 0; }
    Status remap(uintptr_t from, uintptr_t va, uint64_t, uint64_t) override {
        remapped.emplace_back(from, va);
        return adsmSuccess;
    }
    bool pin(void *host, uint64_t size) override {
        auto a = reinterpret_cast<uintptr_t>(host);
        for (auto [p, n] : pinned)
            if (a < p + n && p < a + size) return false;  // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
        pinned[a] = size;
        ++pins;
        return true;
    }
    void unpin(void *host) override {
        EXPECT_EQ(pinned.erase(reinterpret_cast<uintptr_t>(host)), 1u) << "unpinned what was not pinned";
        ++unpins;
    }
    uint64_t pinned_bytes() const {
        uint64_t b = 0;
        for (auto [p, n] : pinned) b += n;
        return b;
    }
    std::map<uintptr_t, uint64_t> pinned;
    std::vector<std::pair<uintptr_t, uintptr_t>> remapped;
    uint64_t handles = 0, scratch = 0;
    bool work_may_run() override { return working; }
    std::vector<uintptr_t> unmapped;
    int backed = 0, pins = 0, unpins = 0, refused_unmaps = 0, refused = 0;
    int room = -1;         // granules the device holds at most (-1: no limit)
    bool working = false;  // a kernel may be running
};

class GranulesTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(mirror_.ok());
        alias_ = mirror_.data();
    }
    void start(Pinning p) {
        g_.set_pinning(p);
        g_.init(&driver_, kGranule, kBase, mirror_.fd(), alias_);
    }
    bool page_exists(uint64_t off) { return mirror_.page_exists(off); }
    MemfdMapping mirror_{"granules-test", kWindow};
    RecordingDriver driver_;
    Granules g_;
    uint8_t *alias_ = nullptr;
};

TEST_F(GranulesTest, AFirstUseOfManyGranulesIsOneRegistration) {
    start(Pinning::lazy);
    const uint64_t x = 7 << 20, y = 3 << 20;  // x ends inside granule 3, y starts there
    ASSERT_EQ(g_.commit(kBase, x), adsmSuccess);
    ASSERT_EQ(g_.commit(kBase + x, y), adsmSuccess);
    uintptr_t start = kBase;
    uint64_t len = x;  // lazy's block: the whole object
    EXPECT_TRUE(g_.pin_for_cpu(kBase, kBase + x, &start, &len));
    EXPECT_EQ(driver_.pins, 1);
    // Granules 0-3 whole: x's pages and y's in the granule they share.
    EXPECT_EQ(driver_.pinned_bytes(), 4 * kGranule);
    g_.decommit(kBase + x, y);
    g_.decommit(kBase, x);
    EXPECT_EQ(driver_.unpins, 1);
    EXPECT_EQ(driver_.pinned_bytes(), 0u);
    EXPECT_EQ(driver_.backed, 0);
}

TEST_F(GranulesTest, ARegistrationOutlivesTheGranulesItSpansUntilTheLastGoes) {
    start(Pinning::lazy);
    const uint64_t x = 7 << 20, y = 3 << 20;
    ASSERT_EQ(g_.commit(kBase, x), adsmSuccess);
    ASSERT_EQ(g_.commit(kBase + x, y), adsmSuccess);
    g_.pin_for_copy(alias_, x);  // a first copy pins as a first fault does
    ASSERT_EQ(driver_.pins, 1);
    alias_[4096] = 7;
    // x goes: its granules 0-2 go, granule 3 stays for y, and so does the
    // registration, with granules 0-2's pages (pinned, not given back).
    g_.decommit(kBase, x);
    EXPECT_EQ(driver_.unpins, 0);
    EXPECT_EQ(driver_.backed, 2);
    EXPECT_TRUE(page_exists(4096));
    EXPECT_EQ(alias_[4096], 7);
    // z takes granules 0-2 again: their pages are pinned already, and a
    // copy through them registers nothing (the driver would refuse it).
    ASSERT_EQ(g_.commit(kBase, x), adsmSuccess);
    g_.pin_for_copy(alias_, x);
    EXPECT_EQ(driver_.pins, 1);
    EXPECT_TRUE(g_.pinned());
    // Once y and z are gone, so is the registration; freed, their pages go.
    g_.decommit(kBase + x, y);
    g_.forget_host(kBase + x, y);
    EXPECT_EQ(driver_.unpins, 0);
    EXPECT_TRUE(page_exists(4096)) << "still pinned for z";
    g_.decommit(kBase, x);
    EXPECT_EQ(driver_.unpins, 1);
    EXPECT_EQ(driver_.pinned_bytes(), 0u);
    g_.forget_host(kBase, x);
    EXPECT_FALSE(page_exists(4096));
    EXPECT_FALSE(page_exists(x));
}

// Device memory that goes for an eviction (or a move to another device)
// leaves the host copy whole: it is the object's only copy then.
TEST_F(GranulesTest, AnEvictedObjectKeepsItsHostPagesUntilItIsFreed) {
    start(Pinning::lazy);
    ASSERT_EQ(g_.commit(kBase, 3 * kGranule), adsmSuccess);
    g_.pin_for_copy(alias_, 3 * kGranule);
    for (uint64_t off = 0; off < 3 * kGranule; off += 4096) alias_[off] = static_cast<uint8_t>(off / 4096);
    g_.decommit(kBase, 3 * kGranule);
    EXPECT_EQ(driver_.backed, 0);
    EXPECT_EQ(driver_.unpins, 1);
    for (uint64_t off = 0; off < 3 * kGranule; off += 4096)
        ASSERT_EQ(alias_[off], static_cast<uint8_t>(off / 4096)) << "host copy lost at " << off;
    g_.forget_host(kBase, 3 * kGranule);
    EXPECT_FALSE(page_exists(0));
    EXPECT_FALSE(page_exists(3 * kGranule - 4096));
}

// What a commit costs the device is its granules not backed yet, whole:
// a small object in a backed granule costs nothing, one across a boundary
// into a fresh granule costs that granule.
// A granule the driver would not unmap keeps its memory (releasing it while
// mapped would leave the window's addresses on freed memory) and is tried
// again before the next granule is made and when its device goes.
TEST_F(GranulesTest, AGranuleTheDriverWouldNotUnmapIsTriedAgain) {
    start(Pinning::lazy);
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    driver_.refused_unmaps = 1;
    g_.decommit(kBase, kGranule);
    EXPECT_EQ(driver_.refused, 1);
    EXPECT_EQ(driver_.backed, 1) << "its memory went while it was still mapped";
    // The next granule made, here at the same addresses, unmaps it first.
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    ASSERT_EQ(driver_.unmapped.size(), 1u);
    EXPECT_EQ(driver_.unmapped[0], kBase);
    EXPECT_EQ(driver_.backed, 1);
    // Refused again as the device goes: its release tries once more.
    driver_.refused_unmaps = 1;
    g_.decommit(kBase, kGranule);
    EXPECT_EQ(driver_.backed, 1);
    g_.release(&driver_);
    EXPECT_EQ(driver_.backed, 0);
    EXPECT_EQ(driver_.unmapped.size(), 2u);
}

// A granule given up while a kernel may run stays mapped (CUDA's unmap
// would wait for the kernel: a collection giving a chunk back did).
TEST_F(GranulesTest, AGranuleGivenUpWhileTheDeviceWorksIsUnmappedOnceItIsIdle) {
    start(Pinning::off);
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    driver_.working = true;
    g_.decommit(kBase, kGranule);
    EXPECT_TRUE(driver_.unmapped.empty()) << "unmapped while the device's work may run";
    EXPECT_EQ(g_.used(), 0u) << "no allocation uses it";
    ASSERT_EQ(g_.commit(kBase + 2 * kGranule, 4096), adsmSuccess);
    EXPECT_TRUE(driver_.unmapped.empty());
    driver_.working = false;
    g_.decommit(kBase + 2 * kGranule, 4096);  // looks at the idle granules first
    ASSERT_EQ(driver_.unmapped.size(), 2u);
    EXPECT_EQ(driver_.unmapped[0], kBase);
    EXPECT_EQ(driver_.backed, 0);
}

TEST_F(GranulesTest, AnIdleGranuleServesTheNextCommitAtItsAddresses) {
    start(Pinning::off);
    ASSERT_EQ(g_.commit(kBase, 4096), adsmSuccess);
    driver_.working = true;
    g_.decommit(kBase, 4096);
    ASSERT_EQ(g_.commit(kBase + 8192, 4096), adsmSuccess);
    EXPECT_EQ(driver_.handles, 1u) << "a second granule was made where the first still was";
    EXPECT_TRUE(driver_.unmapped.empty());
    EXPECT_EQ(g_.used(), kGranule);
    driver_.working = false;
    g_.decommit(kBase + 8192, 4096);
    EXPECT_EQ(driver_.backed, 0);
}

TEST_F(GranulesTest, DeviceMemoryRunningShortUnmapsIdleGranulesFirst) {
    start(Pinning::off);
    driver_.room = 1;
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    driver_.working = true;
    g_.decommit(kBase, kGranule);
    // The device is full of the idle granule: it goes, its work waited for.
    ASSERT_EQ(g_.commit(kBase + 4 * kGranule, kGranule), adsmSuccess);
    ASSERT_EQ(driver_.unmapped.size(), 1u);
    EXPECT_EQ(driver_.unmapped[0], kBase);
    g_.decommit(kBase + 4 * kGranule, kGranule);
    // And the device's release takes every idle granule with it.
    g_.release(&driver_);
    EXPECT_EQ(driver_.backed, 0);
}

// A lost device goes without its memory given back: no later commit of
// another GPU's asks its driver anything (it is gone).
TEST_F(GranulesTest, ALostDevicesIdleGranulesAreNeverAskedForAgain) {
    start(Pinning::off);
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    driver_.working = true;
    g_.decommit(kBase, kGranule);
    g_.abandon(&driver_);
    driver_.working = false;
    RecordingDriver other;
    ASSERT_EQ(g_.commit(kBase + 4 * kGranule, kGranule, &other), adsmSuccess);
    g_.decommit(kBase + 4 * kGranule, kGranule, &other);
    EXPECT_TRUE(driver_.unmapped.empty()) << "the lost device's driver was asked to unmap";
    EXPECT_EQ(other.backed, 0);
}

TEST_F(GranulesTest, ACommitCostsTheGranulesItBacksWhole) {
    start(Pinning::off);
    EXPECT_EQ(g_.unbacked(kBase, 4096), kGranule);
    EXPECT_EQ(g_.unbacked(kBase + kGranule - 4096, 8192), 2 * kGranule);
    ASSERT_EQ(g_.commit(kBase, 4096), adsmSuccess);
    EXPECT_EQ(g_.unbacked(kBase + 8192, 4096), 0u);
    EXPECT_EQ(g_.unbacked(kBase + kGranule - 4096, 8192), kGranule);
    EXPECT_EQ(g_.unbacked(kBase + 3 * kGranule, 1), kGranule);
    g_.decommit(kBase, 4096);
    EXPECT_EQ(g_.unbacked(kBase + 8192, 4096), kGranule) << "the granule went with its last object";
}

TEST_F(GranulesTest, PagesOutsideEveryRegistrationGoWhenFreed) {
    start(Pinning::lazy);
    ASSERT_EQ(g_.commit(kBase, 4096), adsmSuccess);
    alias_[0] = 1;
    alias_[8192] = 1;  // a page of no allocation, never pinned
    g_.pin_for_copy(alias_, 4096);
    EXPECT_EQ(driver_.pinned_bytes(), 4096u);
    g_.decommit(kBase, 4096);
    EXPECT_EQ(driver_.unpins, 1);
    EXPECT_TRUE(page_exists(0)) << "an evicted object's host copy";
    g_.forget_host(kBase, 3 * 4096);
    EXPECT_FALSE(page_exists(0));
    EXPECT_FALSE(page_exists(8192));
}

// Helpers make a first use's pages before one registration pins them all;
// that time is a statistic of its own, not pinning, so that a GPU's
// breakdown compares with the simulated device's pin model.  (The recording
// driver's registration makes no page.)
class PageMakingTest : public GranulesTest {
protected:
    static constexpr uint64_t kObject = 4 * kGranule;
    // The CPU's first use of a 4-granule object with `makers` helpers: the
    // time counted as page making.
    uint64_t first_cpu_use(unsigned makers) {
        g_.set_page_makers(makers);
        start(Pinning::lazy);
        EXPECT_EQ(g_.commit(kBase, kObject), adsmSuccess);
        const uint64_t before = adsm::stats().get(adsm::Counter::prefault_ns);
        uintptr_t start = kBase;
        uint64_t len = kObject;
        EXPECT_TRUE(g_.pin_for_cpu(kBase, kBase + kObject, &start, &len));
        EXPECT_EQ(driver_.pins, 1);
        EXPECT_EQ(driver_.pinned_bytes(), kObject);
        return adsm::stats().get(adsm::Counter::prefault_ns) - before;
    }
    void TearDown() override { g_.decommit(kBase, kObject); }
};

TEST_F(PageMakingTest, PagesMadeAheadAreCountedApartFromPinning) {
    EXPECT_GT(first_cpu_use(2), 0u);
    EXPECT_TRUE(page_exists(0));
    EXPECT_TRUE(page_exists(kObject - 4096));
}

TEST_F(PageMakingTest, OnePageMakerLeavesPagesToTheRegistration) {
    EXPECT_EQ(first_cpu_use(1), 0u);
    EXPECT_FALSE(page_exists(0));
}

TEST_F(GranulesTest, EagerPinningRegistersACommitInOneCall) {
    start(Pinning::eager);
    ASSERT_EQ(g_.commit(kBase + 4096, 5 * kGranule), adsmSuccess);
    EXPECT_EQ(driver_.pins, 1);
    EXPECT_EQ(driver_.pinned_bytes(), 5 * kGranule);
    ASSERT_EQ(g_.commit(kBase + 4096 + 5 * kGranule, 4096), adsmSuccess);
    EXPECT_EQ(driver_.pins, 2);
    g_.decommit(kBase + 4096, 5 * kGranule);
    EXPECT_EQ(driver_.unpins, 0) << "granule 5 lives on, with the second allocation";
    g_.decommit(kBase + 4096 + 5 * kGranule, 4096);
    EXPECT_EQ(driver_.unpins, 2);
    EXPECT_EQ(driver_.backed, 0);
}

TEST_F(GranulesTest, ADriverThatCannotPinLeavesCopiesPageable) {
    start(Pinning::lazy);
    ASSERT_EQ(g_.commit(kBase, kGranule), adsmSuccess);
    driver_.pinned[reinterpret_cast<uintptr_t>(alias_)] = 4096;  // someone else's registration there
    g_.pin_for_copy(alias_, kGranule);
    EXPECT_FALSE(g_.pinned());
    driver_.pinned.clear();
    g_.decommit(kBase, kGranule);
    EXPECT_EQ(driver_.unpins, 0);
}

// Two GPUs of one address space share the table: a granule is one's or
// the other's, and an object's granules change hands whole.
TEST_F(GranulesTest, GranulesOfTwoGpusNeverMixAndChangeHandsWhole) {
    start(Pinning::lazy);
    RecordingDriver other;
    ASSERT_EQ(g_.commit(kBase, 4096, &driver_), adsmSuccess);
    EXPECT_EQ(g_.commit(kBase + 8192, 4096, &other), adsmErrorInvalidValue) << "the first GPU's granule";
    EXPECT_EQ(other.backed, 0);
    g_.decommit(kBase, 4096, &other);  // not its memory: nothing happens
    EXPECT_EQ(driver_.backed, 1);
    EXPECT_EQ(g_.used_by(&driver_), kGranule);
    EXPECT_EQ(g_.used_by(&other), 0u);
    // Another allocation in the granule would move along: refused.
    ASSERT_EQ(g_.commit(kBase + 8192, 4096, &driver_), adsmSuccess);
    auto copy = [&](uintptr_t, uintptr_t, uint64_t) { return adsmSuccess; };
    EXPECT_EQ(g_.hand_over(kBase, 4096, &driver_, &other, copy), adsmErrorInvalidValue);
    g_.decommit(kBase + 8192, 4096, &driver_);
    // A copy that fails leaves the memory where it was.
    auto broken = [&](uintptr_t, uintptr_t, uint64_t) { return adsmErrorLaunchFailure; };
    EXPECT_EQ(g_.hand_over(kBase, 4096, &driver_, &other, broken), adsmErrorLaunchFailure);
    EXPECT_EQ(other.backed, 0);
    EXPECT_EQ(other.scratch, 0u);
    EXPECT_EQ(g_.used_by(&driver_), kGranule);
    // Whole granules, copied from the window to the scratch memory.
    ASSERT_EQ(g_.commit(kBase + kGranule, kGranule, &driver_), adsmSuccess);
    std::vector<std::pair<uintptr_t, uint64_t>> copies;
    auto record = [&](uintptr_t scratch, uintptr_t from, uint64_t n) {
        EXPECT_EQ(scratch, 0x500000000000u);
        copies.emplace_back(from, n);
        return adsmSuccess;
    };
    ASSERT_EQ(g_.commit(kBase + 4096, 4096, &driver_), adsmSuccess);  // the same object's second page
    g_.decommit(kBase + 4096, 4096, &driver_);
    ASSERT_EQ(g_.hand_over(kBase, 4096, &driver_, &other, record), adsmSuccess);
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0], std::make_pair(kBase, kGranule));
    EXPECT_EQ(driver_.backed, 1) << "the other object's granule stays";
    EXPECT_EQ(other.backed, 1);
    EXPECT_EQ(other.remapped.size(), 1u);
    EXPECT_EQ(other.scratch, 0u);
    EXPECT_EQ(g_.used_by(&driver_), kGranule);
    EXPECT_EQ(g_.used_by(&other), kGranule);
    // Now the second GPU's: its owner frees it, the first cannot.
    g_.decommit(kBase, 4096, &driver_);
    EXPECT_EQ(other.backed, 1);
    g_.decommit(kBase, 4096, &other);
    EXPECT_EQ(other.backed, 0);
    g_.decommit(kBase + kGranule, kGranule, &driver_);
    EXPECT_EQ(driver_.backed, 0);
}

}  // namespace
