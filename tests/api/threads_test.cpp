#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "test_kernels.h"

using namespace adsm_test;

TEST(ThreadsTest, EightThreadsAllocateAndLaunchAtOnce) {
    auto inc = adsm_test::device_kernel<increment>("threads.increment");
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            std::mt19937 rng(t);
            for (int round = 0; round < 30; ++round) {
                size_t n = 1000 + rng() % 50000;
                auto *v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
                if (!v) {
                    failures++;
                    return;
                }
                for (size_t i = 0; i < n; ++i) v[i] = uint32_t(t * 1000000 + i);
                int launches = 1 + int(rng() % 3);
                for (int l = 0; l < launches; ++l) inc(adsm::blocks_for(n, 256), 256, v, n);
                if (adsmSync() != adsmSuccess) failures++;
                for (size_t i = 0; i < n; ++i)
                    if (v[i] != uint32_t(t * 1000000 + i + launches)) {
                        failures++;
                        break;
                    }
                if (adsmFree(v) != adsmSuccess) failures++;
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadsTest, ConcurrentAllocationsNeverOverlap) {
    // Each thread keeps a changing set of live regions, each filled with a
    // pattern of its own; an overlap between any two live regions of any
    // threads would break a pattern.
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            std::mt19937 rng(100 + t);
            struct Live {
                uint8_t *p;
                size_t n;
                uint8_t tag;
            };
            std::vector<Live> live;
            for (int i = 0; i < 3000; ++i) {
                if (live.size() < 50 && (live.empty() || rng() % 2)) {
                    size_t n = 1 + rng() % 20000;
                    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
                    if (!p) {
                        failures++;
                        return;
                    }
                    uint8_t tag = uint8_t(rng());
                    memset(p, tag, n);
                    live.push_back({p, n, tag});
                } else {
                    size_t k = rng() % live.size();
                    for (size_t j = 0; j < live[k].n; ++j)
                        if (live[k].p[j] != live[k].tag) {
                            failures++;
                            break;
                        }
                    if (adsmFree(live[k].p) != adsmSuccess) failures++;
                    live[k] = live.back();
                    live.pop_back();
                }
            }
            for (auto &l : live) adsmFree(l.p);
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}
