// The eviction candidates kept between evictions (memory/victims.h): the
// order they come in, and when the list must be looked at again.
#include <gtest/gtest.h>

#include <vector>

#include "memory/victims.h"

using adsm::Region;
using adsm::VictimList;

namespace {

struct Objects {
    std::vector<Region> r = std::vector<Region>(6);
    // Lists r[i] with priority prio[i] and its current last_release.
    void list(VictimList &l, const std::vector<int> &prio) {
        std::vector<VictimList::Victim> v;
        for (size_t i = 0; i < prio.size(); ++i) v.push_back({prio[i], r[i].last_release, &r[i]});
        l.refill(std::move(v));
    }
};

}  // namespace

TEST(VictimListTest, ColdestFirstLowerPrioritiesBeforeOlderReleases) {
    Objects o;
    for (size_t i = 0; i < o.r.size(); ++i) o.r[i].last_release = 100 - i;  // r[5] released first
    VictimList l;
    o.list(l, {0, 0, 0, 1, 1, 1});
    VictimList::Victim v;
    ASSERT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[2]) << "the least recently released of the lowest priority";
    ASSERT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[1]);
    ASSERT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[0]);
    EXPECT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::look_again) << "priority 1 next: a lower one may have come";
    EXPECT_EQ(l.take(0, false, &v), VictimList::Take::none) << "nothing of priority 0 or lower is left";
}

TEST(VictimListTest, ObjectsReleasedSinceListingArePassedOver) {
    Objects o;
    for (size_t i = 0; i < 3; ++i) o.r[i].last_release = 10 + i;
    VictimList l;
    o.list(l, {0, 0, 0});
    o.r[0].last_release = 50;  // a call used it after the listing
    VictimList::Victim v;
    ASSERT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[1]);
    ASSERT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[2]);
    EXPECT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::none);
    l.clear();
    EXPECT_EQ(l.take(INT32_MAX, false, &v), VictimList::Take::none);
}

TEST(VictimListTest, AFreshListHandsOutItsFirstWhateverItsPriority) {
    Objects o;
    VictimList l;
    o.list(l, {3, 4});
    VictimList::Victim v;
    EXPECT_EQ(l.take(2, false, &v), VictimList::Take::none) << "above the caller's priority";
    ASSERT_EQ(l.take(3, false, &v), VictimList::Take::got);
    EXPECT_EQ(v.r, &o.r[0]);
    EXPECT_EQ(l.take(4, false, &v), VictimList::Take::look_again);
    ASSERT_EQ(l.take(4, true, &v), VictimList::Take::got) << "the caller has just refilled it";
    EXPECT_EQ(v.r, &o.r[1]);
}

TEST(VictimListTest, AThreadCanTellOthersEmptiedTheListItFilled) {
    Objects o;
    VictimList l;
    std::vector<VictimList::Victim> v{{0, 0, &o.r[0]}, {0, 0, &o.r[1]}};
    const uint64_t mine = l.refill(v);
    VictimList::Victim got;
    ASSERT_EQ(l.take(INT32_MAX, true, &got), VictimList::Take::got);
    EXPECT_EQ(l.changes() - mine, 1u) << "only its own take since its refill";
    l.clear();  // another thread: its candidates were busy
    EXPECT_EQ(l.take(INT32_MAX, true, &got), VictimList::Take::none);
    EXPECT_GT(l.changes() - mine, 1u) << "the list it filled went dry under it: look again";
    const uint64_t again = l.refill(v);
    ASSERT_EQ(l.take(INT32_MAX, true, &got), VictimList::Take::got);
    ASSERT_EQ(l.take(INT32_MAX, true, &got), VictimList::Take::got);
    EXPECT_EQ(l.take(INT32_MAX, true, &got), VictimList::Take::none);
    EXPECT_EQ(l.changes() - again, 2u) << "it took every candidate itself: nothing was left untried";
}
