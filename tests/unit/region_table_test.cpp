#include <gtest/gtest.h>

#include "memory/owner_lock.h"
#include "memory/region_table.h"

using adsm::Region;
using adsm::RegionTable;

TEST(RegionTableTest, FindsAnyInteriorAddress) {
    RegionTable t;
    const uintptr_t base = 0x100000000000ull;
    ASSERT_EQ(t.init(base, 1ull << 30), adsmSuccess);
    Region *r = t.create();
    ASSERT_NE(r, nullptr);
    r->host = r->dev = base + 0x10000;
    r->span = 5 * 4096;
    r->size = 5 * 4096 - 100;
    r->live = true;
    t.map(*r, r->host, r->span);
    for (uintptr_t a = r->host; a < r->host + r->span; a += 777) EXPECT_EQ(t.find(a), r);
    EXPECT_EQ(t.find(r->host - 1), nullptr);
    EXPECT_EQ(t.find(r->host + r->span), nullptr);
    Region *out;
    EXPECT_EQ(t.lookup(base - 1, &out), RegionTable::Lookup::outside);
    EXPECT_EQ(t.lookup(base + (1ull << 30), &out), RegionTable::Lookup::outside);
    EXPECT_EQ(t.lookup(base, &out), RegionTable::Lookup::none);
}

TEST(RegionTableTest, FreedRangesAreRecognised) {
    RegionTable t;
    const uintptr_t base = 0x100000000000ull;
    ASSERT_EQ(t.init(base, 1ull << 30), adsmSuccess);
    Region *r = t.create();
    r->host = r->dev = base;
    r->span = 4096;
    r->live = true;
    t.map(*r, r->host, r->span);
    t.unmap_freed(r->host, r->span);
    t.destroy(r);
    Region *out;
    EXPECT_EQ(t.lookup(base + 5, &out), RegionTable::Lookup::freed);
    t.clear(base, 4096);
    EXPECT_EQ(t.lookup(base + 5, &out), RegionTable::Lookup::none);
}

TEST(RegionTableTest, SlotsAreReusedWithANewGeneration) {
    RegionTable t;
    ASSERT_EQ(t.init(0x100000000000ull, 1ull << 30), adsmSuccess);
    Region *a = t.create();
    uint32_t id = a->id, gen = a->generation;
    t.destroy(a);
    Region *b = t.create();
    EXPECT_EQ(b->id, id);
    EXPECT_EQ(b->generation, gen + 1);
    EXPECT_EQ(t.live_regions(), 1u);
}

// Two threads freeing one pointer: the second found the slot before the
// first freed it, and a third thread's allocation took the slot since, at
// another address.  Locked, the region is not the one looked up.
TEST(OwnerLockTest, ASlotTakenAgainByAnObjectElsewhereIsNotTheOneLookedUp) {
    RegionTable t;
    const uintptr_t base = 0x100000000000ull;
    ASSERT_EQ(t.init(base, 1ull << 30), adsmSuccess);
    adsm::Context owner;
    Region *r = t.create();
    r->host = r->dev = base + 0x10000;
    r->size = r->span = 3 * 4096;
    r->group = &owner;
    r->live = true;
    {
        adsm::OwnerLock lock(r, reinterpret_cast<void *>(r->host + 4096), 4096);
        EXPECT_TRUE(lock.valid());
    }
    {
        adsm::OwnerLock past_the_end(r, reinterpret_cast<void *>(r->host + 4096), 2 * 4096 + 1);
        EXPECT_FALSE(past_the_end.valid());
    }
    const void *looked_up = reinterpret_cast<void *>(r->host);
    // Freed, and the slot taken again elsewhere, before the lock is built.
    r->live = false;
    t.destroy(r);
    Region *again = t.create();
    ASSERT_EQ(again, r);
    again->host = again->dev = base + 0x80000;
    again->size = again->span = 4096;
    again->group = &owner;
    again->live = true;
    {
        adsm::OwnerLock lock(again, looked_up);
        EXPECT_FALSE(lock.valid());
    }
    adsm::OwnerLock its_own(again, reinterpret_cast<void *>(again->host));
    EXPECT_TRUE(its_own.valid());
}
