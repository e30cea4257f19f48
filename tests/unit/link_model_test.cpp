#include <gtest/gtest.h>

#include "backend/sim/link_model.h"

using adsm::Direction;
using adsm::LinkModel;

TEST(LinkModelTest, DisabledByDefault) {
    LinkModel l(0, 0);
    EXPECT_FALSE(l.enabled());
}

TEST(LinkModelTest, BandwidthAndLatencyAddUp) {
    LinkModel l(10.0, 5.0);  // 10 GB/s = 10 bytes/ns, 5 us
    ASSERT_TRUE(l.enabled());
    // 1 MB takes 100 us on the wire plus 5 us latency.
    EXPECT_EQ(l.reserve(Direction::to_device, 1000000, 1000), 1000u + 5000u + 100000u);
}

TEST(LinkModelTest, TransfersQueueOnOneDirectionOnly) {
    LinkModel l(1.0, 0);  // 1 byte per ns
    uint64_t a = l.reserve(Direction::to_device, 1000, 0);
    uint64_t b = l.reserve(Direction::to_device, 1000, 0);
    uint64_t c = l.reserve(Direction::to_host, 1000, 0);
    EXPECT_EQ(a, 1000u);
    EXPECT_EQ(b, 2000u);  // waited for a
    EXPECT_EQ(c, 1000u);  // the other direction is free (full duplex)
    // A transfer that starts after the link went idle does not wait.
    EXPECT_EQ(l.reserve(Direction::to_device, 10, 5000), 5010u);
}
