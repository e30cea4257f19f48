// Sequential read-ahead's window (protocols/read_ahead.h): when it opens,
// how it grows and where it stops.  The protocol sets the marker (the
// first block it fetches); the tests do as it does.
#include <gtest/gtest.h>

#include <algorithm>

#include "protocols/read_ahead.h"

using adsm::ReadAhead;

namespace {

struct Window {
    uint32_t first = 0, end = 0;
};

// A fault that needed block k; the window it asks for, marked as the
// protocol would (at its first block).
bool fault(ReadAhead &a, uint32_t k, Window *w, uint32_t nblocks = 1000, uint32_t start = 4, uint32_t most = 32) {
    if (!adsm::plan_read_ahead(a, k, nblocks, start, most, &w->first, &w->end)) return false;
    a.marker = w->first;
    return true;
}

}  // namespace

TEST(ReadAheadTest, OneFaultIsNoPatternTwoInOrderAre) {
    ReadAhead a;
    Window w;
    EXPECT_FALSE(fault(a, 7, &w));
    ASSERT_TRUE(fault(a, 8, &w));
    EXPECT_EQ(w.first, 9u);
    EXPECT_EQ(w.end, 13u);  // the starting window: 4 blocks
}

TEST(ReadAheadTest, TheWindowDoublesAtEachMarkerUpToItsMost) {
    ReadAhead a;
    Window w;
    fault(a, 0, &w);
    ASSERT_TRUE(fault(a, 1, &w));
    uint32_t expect = 4;
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(w.end - w.first, expect) << "window " << i;
        const uint32_t marker = a.marker;
        ASSERT_TRUE(fault(a, marker, &w)) << "the CPU reached the marker";
        EXPECT_EQ(w.first, marker + 1);
        expect = std::min(expect * 2, 32u);
    }
    EXPECT_EQ(w.end - w.first, 32u);
}

TEST(ReadAheadTest, AFaultOutOfOrderEndsIt) {
    ReadAhead a;
    Window w;
    fault(a, 10, &w);
    ASSERT_TRUE(fault(a, 11, &w));
    EXPECT_FALSE(fault(a, 3, &w));
    EXPECT_EQ(a.blocks, 0u);
    EXPECT_EQ(a.marker, ReadAhead::kNone);
    // Backwards is out of order too.
    EXPECT_FALSE(fault(a, 2, &w));
    // And in order again starts afresh.
    ASSERT_TRUE(fault(a, 3, &w));
    EXPECT_EQ(w.end - w.first, 4u);
}

TEST(ReadAheadTest, TheWindowEndsAtTheObjectsEnd) {
    ReadAhead a;
    Window w;
    fault(a, 5, &w, 8);
    ASSERT_TRUE(fault(a, 6, &w, 8));
    EXPECT_EQ(w.first, 7u);
    EXPECT_EQ(w.end, 8u);
    EXPECT_FALSE(fault(a, 7, &w, 8)) << "the last block has nothing after it";
}

TEST(ReadAheadTest, NoneWhenItsMostIsZero) {
    ReadAhead a;
    Window w;
    fault(a, 0, &w, 1000, 4, 0);
    EXPECT_FALSE(fault(a, 1, &w, 1000, 4, 0));
    EXPECT_EQ(a.blocks, 0u);
}

TEST(ReadAheadTest, ALargeBlockStartsWithOneAndTheMostBounds) {
    ReadAhead a;
    Window w;
    fault(a, 0, &w, 1000, 0, 2);
    ASSERT_TRUE(fault(a, 1, &w, 1000, 0, 2));
    EXPECT_EQ(w.end - w.first, 1u);
    ASSERT_TRUE(fault(a, a.marker, &w, 1000, 0, 2));
    EXPECT_EQ(w.end - w.first, 2u);
    ASSERT_TRUE(fault(a, a.marker, &w, 1000, 0, 2));
    EXPECT_EQ(w.end - w.first, 2u);
}
