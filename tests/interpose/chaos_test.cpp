#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "helpers.h"

using namespace interpose_test;

namespace {

// Runs this test again in a process with chaos; returns the cycles it forced.
long run_with_chaos(const char *seed) {
    char out[] = "/tmp/adsm-chaos-XXXXXX";
    int fd = mkstemp(out);
    close(fd);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("ADSM_CHAOS_RELEASE_EVERY", "3", 1);
        setenv("ADSM_CHAOS_SEED", seed, 1);
        setenv("ADSM_TEST_CHAOS_OUT", out, 1);
        execl("/proc/self/exe", "interpose_tests", "--gtest_filter=ChaosTest.ForcedCyclesKeepEveryByte",
              static_cast<char *>(nullptr));
        _exit(127);
    }
    int st = 0;
    long cycles = -1;
    EXPECT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the run with chaos failed";
    if (FILE *f = fopen(out, "r")) {
        if (fscanf(f, "%ld", &cycles) != 1) cycles = -1;
        fclose(f);
    }
    unlink(out);
    return cycles;
}

}  // namespace

// Chaos mode forces release/acquire cycles at interposed calls; a program
// that checks its own data sees nothing but the right bytes.
TEST(ChaosTest, ForcedCyclesKeepEveryByte) {
    if (!getenv("ADSM_CHAOS_RELEASE_EVERY")) {
        // This process has no chaos; run the test again in one that has.
        EXPECT_GT(run_with_chaos("99"), 10);
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
    if (const char *out = getenv("ADSM_TEST_CHAOS_OUT")) {
        if (FILE *f = fopen(out, "w")) {
            fprintf(f, "%llu\n", static_cast<unsigned long long>(counter(adsm::Counter::chaos_cycles)));
            fclose(f);
        }
    }
}

// A failure found with a seed must be replayable: the same seed forces the
// same cycles at the same calls.
TEST(ChaosTest, TheSameSeedRepeatsTheRun) {
    long first = run_with_chaos("7"), second = run_with_chaos("7"), third = run_with_chaos("7");
    EXPECT_GT(first, 10);
    EXPECT_EQ(first, second);
    EXPECT_EQ(first, third);
}
