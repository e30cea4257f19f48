#include "support/range_set.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

namespace {

using Piece = std::tuple<uintptr_t, uintptr_t, bool>;

std::vector<Piece> pieces(const adsm::RangeSet &s, uintptr_t lo, uintptr_t hi) {
    std::vector<Piece> out;
    s.pieces(lo, hi, [&](uintptr_t b, uintptr_t e, bool in) { out.emplace_back(b, e, in); });
    return out;
}

}  // namespace

TEST(RangeSetTest, RangesThatTouchMergeAndARemovalSplitsThem) {
    adsm::RangeSet s;
    s.add(10, 20);
    s.add(30, 40);
    s.add(20, 30);  // fills the gap: one range
    EXPECT_EQ(pieces(s, 0, 50), (std::vector<Piece>{{0, 10, false}, {10, 40, true}, {40, 50, false}}));
    s.remove(15, 25);
    EXPECT_EQ(pieces(s, 0, 50),
              (std::vector<Piece>{{0, 10, false}, {10, 15, true}, {15, 25, false}, {25, 40, true}, {40, 50, false}}));
    s.remove(0, 100);
    EXPECT_TRUE(s.empty());
}

TEST(RangeSetTest, PiecesStartAndEndWhereAsked) {
    adsm::RangeSet s;
    s.add(10, 20);
    EXPECT_EQ(pieces(s, 12, 18), (std::vector<Piece>{{12, 18, true}}));
    EXPECT_EQ(pieces(s, 15, 25), (std::vector<Piece>{{15, 20, true}, {20, 25, false}}));
    EXPECT_EQ(pieces(s, 0, 5), (std::vector<Piece>{{0, 5, false}}));
    EXPECT_EQ(pieces(s, 20, 20), (std::vector<Piece>{}));
}

// Against a set of single addresses, after random adds and removes.
TEST(RangeSetTest, AgreesWithASetOfAddresses) {
    adsm::RangeSet s;
    std::set<uintptr_t> model;
    unsigned seed = 12345;
    auto next = [&] { return (seed = seed * 1103515245u + 12345u) >> 16; };
    for (int step = 0; step < 2000; ++step) {
        uintptr_t lo = next() % 200, hi = lo + next() % 30;
        bool add = next() % 3 != 0;
        if (add) s.add(lo, hi);
        else s.remove(lo, hi);
        for (uintptr_t a = lo; a < hi; ++a) {
            if (add) model.insert(a);
            else model.erase(a);
        }
        if (step % 50 == 0) {
            uintptr_t prev_end = 0;
            for (const Piece &p : pieces(s, 0, 240)) {
                auto [b, e, in] = p;
                ASSERT_EQ(b, prev_end);
                ASSERT_LT(b, e);
                prev_end = e;
                for (uintptr_t a = b; a < e; ++a) ASSERT_EQ(model.count(a) == 1, in) << a << " at step " << step;
            }
            ASSERT_EQ(prev_end, 240u);
            for (uintptr_t a = 0; a < 240; ++a) ASSERT_EQ(s.contains(a), model.count(a) == 1) << a;
        }
    }
}
