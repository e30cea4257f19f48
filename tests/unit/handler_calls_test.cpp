// The helper threads that make a fault handler's driver calls
// (backend/gpu/handler_calls.h): every call runs once, on a helper, and
// hands back its own result, whether the helpers spin or sleep when it
// comes and whether it is quick or outlasts the poster's spinning.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backend/gpu/handler_calls.h"

using adsm::gpu::HandlerCalls;

namespace {

long thread_id() { return syscall(SYS_gettid); }

}  // namespace

TEST(HandlerCallsTest, ACallRunsOnAHelperAndReturnsItsResult) {
    HandlerCalls calls;
    ASSERT_EQ(calls.start(2), adsmSuccess);
    long poster = thread_id();
    long ran_on = calls.call([] { return thread_id(); });
    EXPECT_NE(ran_on, poster);
    EXPECT_EQ(calls.call([] { return 41; }) + 1, 42);
    int touched = 0;
    calls.call([&] { touched = 7; });
    EXPECT_EQ(touched, 7);
}

// Posts at every pace: back to back (a spinning helper takes them), after
// pauses longer than the helper's spin (asleep, woken), and calls longer
// than the poster's spin and yield (the poster sleeps, then is woken).
TEST(HandlerCallsTest, ThreadsPostingAtOnceEachGetTheirOwnResults) {
    HandlerCalls calls;
    ASSERT_EQ(calls.start(2), adsmSuccess);
    std::atomic<long> ran{0};
    std::vector<int> wrong(8, 0);
    std::vector<std::thread> posters;
    for (int t = 0; t < 8; ++t)
        posters.emplace_back([&, t] {
            for (int i = 0; i < 400; ++i) {
                bool slow = i % 97 == 0;
                int got = calls.call([&, i] {
                    ran.fetch_add(1);
                    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(3));
                    return t * 1000 + i;
                });
                wrong[t] += got != t * 1000 + i;
                if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
    for (auto &p : posters) p.join();
    EXPECT_EQ(ran.load(), 8 * 400) << "a call ran twice or not at all";
    for (int t = 0; t < 8; ++t) EXPECT_EQ(wrong[t], 0) << "poster " << t;
}

TEST(HandlerCallsTest, StopsWhetherTheHelpersSpinOrSleep) {
    for (int pause_ms : {0, 1, 20}) {
        HandlerCalls calls;
        ASSERT_EQ(calls.start(2), adsmSuccess);
        EXPECT_EQ(calls.call([] { return 1; }), 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        calls.stop();  // joins: a helper that missed the stop hangs here
        EXPECT_FALSE(calls.needed());
    }
}
