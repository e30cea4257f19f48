#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "helpers.h"

using namespace interpose_test;

// Chaos mode forces release/acquire cycles at interposed calls; a program
// that checks its own data sees nothing but the right bytes.
TEST(ChaosTest, ForcedCyclesKeepEveryByte) {
    if (!getenv("ADSM_CHAOS_RELEASE_EVERY")) {
        // This process has no chaos; run the test again in one that has.
        pid_t pid = fork();
        if (pid == 0) {
            setenv("ADSM_CHAOS_RELEASE_EVERY", "3", 1);
            setenv("ADSM_CHAOS_SEED", "99", 1);
            execl("/proc/self/exe", "interpose_tests", "--gtest_filter=ChaosTest.*", static_cast<char *>(nullptr));
            _exit(127);
        }
        int st = 0;
        ASSERT_EQ(waitpid(pid, &st, 0), pid);
        ASSERT_TRUE(WIFEXITED(st));
        EXPECT_EQ(WEXITSTATUS(st), 0);
        return;
    }
    std::vector<uint8_t *> bufs;
    std::vector<std::vector<uint8_t>> model;
    for (int round = 0; round < 200; ++round) {
        size_t n = kThreshold + static_cast<size_t>(round) * 1000;
        auto *p = static_cast<uint8_t *>(malloc(n));
        ASSERT_TRUE(shared(p));
        model.emplace_back(n);
        for (size_t i = 0; i < n; i += 17) p[i] = model.back()[i] = static_cast<uint8_t>(round + i);
        bufs.push_back(p);
        if (round % 3 == 0) {
            size_t k = static_cast<size_t>(round) / 2;
            for (size_t i = 0; i < model[k].size(); i += 17) ASSERT_EQ(bufs[k][i], model[k][i]) << round;
        }
    }
    EXPECT_GT(counter(adsm::Counter::chaos_cycles), 10u);
    for (auto *p : bufs) free(p);
}
