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
