// The hold a fork puts on changes to shared memory (os/write_hold.h): it
// waits for the changes under way, stops new ones until it ends, gives up
// on a change that does not end in time, and stops nothing the holder
// itself does, nothing nested in a change already counted, and nothing
// while the collector has the world stopped.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "os/write_hold.h"

namespace {

namespace hold = adsm::os::write_hold;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSecond = 1'000'000'000ull;

// A thread that enters a change, says so, and leaves when told.
struct ChangingThread {
    std::atomic<bool> inside{false}, leave{false};
    std::thread t{[this] {
        hold::Change c;
        inside = true;
        while (!leave) std::this_thread::sleep_for(1ms);
    }};
    ~ChangingThread() {
        leave = true;
        t.join();
    }
};

TEST(WriteHoldTest, AChangeWaitsWhileTheHoldIsOnAndGoesOnAfter) {
    ASSERT_TRUE(hold::hold(kSecond));
    EXPECT_TRUE(hold::held());
    std::atomic<bool> done{false};
    std::thread other([&] {
        hold::Change c;
        done = true;
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(done) << "a change went on during the hold";
    hold::release();
    other.join();
    EXPECT_TRUE(done);
    EXPECT_FALSE(hold::held());
}

TEST(WriteHoldTest, TheHoldWaitsForAChangeUnderWay) {
    ChangingThread changing;
    while (!changing.inside) std::this_thread::sleep_for(1ms);
    std::thread leave_later([&] {
        std::this_thread::sleep_for(300ms);
        changing.leave = true;
    });
    const auto start = Clock::now();
    ASSERT_TRUE(hold::hold(5 * kSecond));
    EXPECT_GE(Clock::now() - start, 250ms) << "the hold began while a change was under way";
    hold::release();
    leave_later.join();
}

TEST(WriteHoldTest, AChangeThatDoesNotEndInTimeCostsTheHold) {
    ChangingThread changing;
    while (!changing.inside) std::this_thread::sleep_for(1ms);
    const auto start = Clock::now();
    EXPECT_FALSE(hold::hold(kSecond / 5));
    EXPECT_LT(Clock::now() - start, 2s);
    EXPECT_FALSE(hold::held()) << "a hold that gave up stayed on";
    // And new changes go on.
    std::thread other([] { hold::Change c; });
    other.join();
}

TEST(WriteHoldTest, NeitherTheHolderNorANestedChangeWaits) {
    std::atomic<bool> outer_in{false}, go_inner{false}, inner_done{false};
    std::thread nested([&] {
        hold::Change outer;
        outer_in = true;
        while (!go_inner) std::this_thread::sleep_for(1ms);
        hold::Change inner;  // counted already: waiting would wait for itself
        inner_done = true;
    });
    while (!outer_in) std::this_thread::sleep_for(1ms);
    // The hold cannot begin while the outer change runs: it gives up.
    EXPECT_FALSE(hold::hold(kSecond / 10));
    go_inner = true;
    nested.join();
    EXPECT_TRUE(inner_done);
    ASSERT_TRUE(hold::hold(kSecond));
    { hold::Change mine; }  // the holder's own change goes on
    hold::release();
}

// Two holders (two threads forking, or cycling in chaos mode) take turns:
// the first to end must not end the other's hold under it.
TEST(WriteHoldTest, OneHoldAtATime) {
    ASSERT_TRUE(hold::hold(kSecond));
    std::atomic<int> second{0};  // 1: held; -1: gave up
    std::atomic<bool> second_ending{false};
    std::thread other([&] {
        second = hold::hold(5 * kSecond) ? 1 : -1;
        if (second == 1) {
            std::this_thread::sleep_for(100ms);
            second_ending = true;
            hold::release();
        }
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(second.load(), 0) << "a second hold began while the first was on";
    hold::release();
    while (second == 0) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(second.load(), 1);
    // Its hold is still on: a change waits for it, not for the first's end.
    { hold::Change c; }
    EXPECT_TRUE(second_ending) << "a change went on during the second hold";
    other.join();
    EXPECT_FALSE(hold::held());
    // A hold that cannot have its turn in time gives up, and is not on.
    std::thread long_hold([] {
        ASSERT_TRUE(hold::hold(kSecond));
        std::this_thread::sleep_for(300ms);
        hold::release();
    });
    while (!hold::held()) std::this_thread::sleep_for(1ms);
    EXPECT_FALSE(hold::hold(kSecond / 20));
    long_hold.join();
    EXPECT_FALSE(hold::held());
}

// A thread inside a change cannot hold: it would wait for itself.
TEST(WriteHoldTest, NoHoldFromInsideAChange) {
    hold::Change c;
    auto start = Clock::now();
    EXPECT_FALSE(hold::hold(kSecond));
    EXPECT_LT(Clock::now() - start, 500ms) << "the hold waited for the holder's own change";
    EXPECT_FALSE(hold::held());
}

TEST(WriteHoldTest, ChangesGoOnWhileTheCollectorHasTheWorldStopped) {
    ASSERT_TRUE(hold::hold(kSecond));
    std::atomic<bool> done{false};
    std::thread waiting([&] {
        hold::Change c;
        done = true;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(done);
    // The collector (another thread, inside no change) waits for the hold
    // to end before it stops the world; this holder stops it itself.
    hold::world_stopping();
    waiting.join();
    EXPECT_TRUE(done) << "a change waited while the world was stopped";
    hold::world_started();
    hold::release();
}

TEST(WriteHoldTest, TheCollectorWaitsForTheHoldBeforeItStopsTheWorld) {
    ASSERT_TRUE(hold::hold(kSecond));
    std::atomic<bool> stopped{false};
    std::thread collector([&] {
        hold::world_stopping();
        stopped = true;
        hold::world_started();
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(stopped) << "the world stopped during the hold";
    hold::release();
    collector.join();
    EXPECT_TRUE(stopped);
}

}  // namespace
