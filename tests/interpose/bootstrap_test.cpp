// The malloc family's bootstrap arena (used while the table of real
// functions is being resolved, so unseen afterwards): its blocks are
// measured, resized out of it and freed by the interposers like any other.
#include <errno.h>
#include <malloc.h>

#include <cstdint>
#include <cstring>

#include "helpers.h"
#include "interpose/bootstrap_arena.h"

using namespace interpose_test;
using namespace adsm::interpose;

TEST(BootstrapArenaTest, BlocksAreZeroedAlignedAndMeasured) {
    auto *p = static_cast<uint8_t *>(bootstrap_alloc(100, 64));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(in_bootstrap_arena(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(p[i], 0);
    EXPECT_EQ(bootstrap_size(p), 100u);
    EXPECT_EQ(malloc_usable_size(opaque(p)), 100u);
    auto *page = bootstrap_alloc(10, 4096);
    ASSERT_NE(page, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(page) % 4096, 0u);
}

TEST(BootstrapArenaTest, FreeIgnoresItsBlocks) {
    auto *p = static_cast<char *>(bootstrap_alloc(16));
    ASSERT_NE(p, nullptr);
    strcpy(p, "still here");
    free(opaque(p));
    EXPECT_STREQ(p, "still here");
}

TEST(BootstrapArenaTest, ReallocMovesBlocksOut) {
    auto *p = static_cast<char *>(bootstrap_alloc(32));
    ASSERT_NE(p, nullptr);
    strcpy(p, "moved out of the arena");
    auto *q = static_cast<char *>(realloc(opaque(p), 4000));
    ASSERT_NE(q, nullptr);
    EXPECT_FALSE(in_bootstrap_arena(q));
    EXPECT_STREQ(q, "moved out of the arena");
    EXPECT_GE(malloc_usable_size(q), 4000u);
    free(q);
}

TEST(BootstrapArenaTest, RefusesWhatDoesNotFit) {
    errno = 0;
    EXPECT_EQ(bootstrap_alloc(size_t{1} << 20), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_FALSE(in_bootstrap_arena(opaque(&errno)));
}
