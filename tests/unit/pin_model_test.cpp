// The simulated device's model of pinning the host mirror: the bytes it
// charges, and when, must be the pages the cuda back-end pins at the same
// moments (gpu/granules.h), or its predictions drift from the GPU's.
#include <gtest/gtest.h>

#include <vector>

#include "backend/sim/pin_model.h"
#include "os/clock.h"
#include "support/stats.h"

using adsm::Counter;
using adsm::Device;
using adsm::PinModel;

namespace {

constexpr uintptr_t kPinBase = 0x500000000000;
constexpr uint64_t kPiece = PinModel::kPiece;
constexpr uint64_t kKiB = 1024;

struct Fixture : ::testing::Test {
    std::vector<uint8_t> alias = std::vector<uint8_t>(8 * kPiece);
    PinModel m;
    void SetUp() override { m.init(1000, kPinBase, alias.size(), alias.data()); }  // 1 ms per MiB
    uint64_t pinned() const { return adsm::stats().get(Counter::pinned_bytes); }
    // Bytes charged by fn, and they cost their time.
    template <class Fn>
    uint64_t charged(Fn fn) {
        uint64_t before = pinned(), t0 = adsm::os::now_ns();
        fn();
        uint64_t bytes = pinned() - before, took = adsm::os::now_ns() - t0;
        EXPECT_GE(took + 1000, bytes * 1000 * 1000 / (1 << 20)) << "1 ms per MiB, spent";
        return bytes;
    }
    const uint8_t *host(uintptr_t a) const { return alias.data() + (a - kPinBase); }
};

TEST(PinModelTest, OffChargesNothing) {
    PinModel m;
    std::vector<uint8_t> alias(kPiece);
    m.init(0, kPinBase, alias.size(), alias.data());
    EXPECT_FALSE(m.enabled());
    m.committed(kPinBase, kPiece);
    uint64_t before = adsm::stats().get(Counter::pinned_bytes);
    m.use_for_copy(alias.data(), kPiece);
    uintptr_t start = kPinBase;
    uint64_t len = 4096;
    EXPECT_EQ(m.use_for_cpu(kPinBase, kPinBase + kPiece, &start, &len), Device::MirrorUse::not_pinned);
    EXPECT_EQ(adsm::stats().get(Counter::pinned_bytes), before);
}

// A small object alone in its piece pins its own pages, once.
TEST_F(Fixture, AFirstCopyPinsTheAllocatedPagesOfItsPiecesOnce) {
    m.committed(kPinBase, 400 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase), 4096); }), 400 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase), 400 * kKiB); }), 0u);
    // Named by its window address too, as a copy may name it.
    m.committed(kPinBase + kPiece, kPiece);
    EXPECT_EQ(charged([&] { m.use_for_copy(reinterpret_cast<const void *>(kPinBase + kPiece + 8), 8); }), kPiece);
    // Memory outside the mirror is the caller's: a pageable copy, unpinned.
    std::vector<uint8_t> own(4096);
    EXPECT_EQ(charged([&] { m.use_for_copy(own.data(), own.size()); }), 0u);
}

// The first use of a piece pins every allocation in it; one allocated
// there later is pinned by its own first use; pages freed while the piece
// lives stay pinned, and a piece with no allocation left is gone.
TEST_F(Fixture, APieceIsPinnedWholeAtFirstUseAndForgottenWhenEmpty) {
    m.committed(kPinBase, 100 * kKiB);
    m.committed(kPinBase + 100 * kKiB, 200 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase), 8); }), 300 * kKiB);
    m.committed(kPinBase + 300 * kKiB, 50 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase + 300 * kKiB), 8); }), 50 * kKiB);
    m.decommitted(kPinBase + 100 * kKiB, 200 * kKiB);
    m.committed(kPinBase + 100 * kKiB, 200 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase), 8); }), 0u) << "still registered";
    m.decommitted(kPinBase, 350 * kKiB);
    m.committed(kPinBase, 100 * kKiB);
    EXPECT_EQ(charged([&] { m.use_for_copy(host(kPinBase), 8); }), 100 * kKiB) << "a new piece";
}

// The CPU's first fault in a piece pins it and widens the range to the
// pieces it touches within the object; the first such use of each piece is
// `first` (the caller enters the pages into the view), later ones `again`,
// also where a copy pinned the piece before.
TEST_F(Fixture, TheCpusFirstUseOfAPieceIsFirstAndWidensWithinTheObject) {
    const uintptr_t lo = kPinBase + kPiece / 2, hi = kPinBase + 3 * kPiece;  // an object over pieces 0 to 2
    m.committed(lo, hi - lo);
    m.use_for_copy(host(lo), 8);  // piece 0 pinned by a copy
    uintptr_t start = kPinBase + kPiece + 4096;
    uint64_t len = 4096;
    uint64_t bytes = charged([&] { EXPECT_EQ(m.use_for_cpu(lo, hi, &start, &len), Device::MirrorUse::first); });
    EXPECT_EQ(bytes, kPiece);
    EXPECT_EQ(start, kPinBase + kPiece);
    EXPECT_EQ(len, kPiece);
    start = lo, len = 4096;
    EXPECT_EQ(m.use_for_cpu(lo, hi, &start, &len), Device::MirrorUse::first) << "the CPU's first use of piece 0";
    EXPECT_EQ(start, lo) << "within the object";
    EXPECT_EQ(len, kPiece / 2);
    start = lo + 8192, len = 4096;
    EXPECT_EQ(m.use_for_cpu(lo, hi, &start, &len), Device::MirrorUse::again);
    start = hi - 4096, len = 4096;
    EXPECT_EQ(charged([&] { EXPECT_EQ(m.use_for_cpu(lo, hi, &start, &len), Device::MirrorUse::first); }), kPiece);
}

}  // namespace
