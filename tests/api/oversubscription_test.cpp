// Shared memory past device memory: objects no kernel uses are evicted to
// their host copies and come back when a call needs them.  Run with a small
// device (ADSM_SIM_MEMORY=16M, see tests/CMakeLists.txt).
#include <thread>
#include <vector>

#include "api/preload.h"
#include "api/runtime.h"
#include "counters.h"
#include "test_kernels.h"

using namespace adsm_test;

namespace {

// Whether the object at p has device memory behind it now.
bool resident(const void *p) {
    adsm::Runtime *rt = nullptr;
    if (adsm::runtime(&rt) != adsmSuccess) return false;
    adsm::Region *r = rt->table.find(reinterpret_cast<uintptr_t>(p));
    return r && r->resident.load();
}

uint64_t capacity() {
    adsmDeviceInfo info;
    EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    return info.memory_bytes;
}

class OversubscriptionTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(is_discrete()) << "oversubscription needs separate device memory (ADSM_DEVICE=sim)";
        ASSERT_LE(capacity(), 64ull << 20) << "run with a small device: ADSM_SIM_MEMORY=16M";
    }
    // Each object a quarter of device memory.
    size_t words() const { return capacity() / 4 / sizeof(uint32_t); }
    adsm::kernel<increment> inc_ = device_kernel<increment>("over.increment");
};

}  // namespace

TEST_F(OversubscriptionTest, ObjectsFourTimesDeviceMemoryAllRunCorrectly) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 16; ++i) {  // 4x the device
        auto *p = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
        ASSERT_NE(p, nullptr) << "allocation past device memory must succeed: " << detail();
        for (size_t k = 0; k < n; ++k) p[k] = static_cast<uint32_t>(k * 7 + i);
        objs.push_back(p);
    }
    uint64_t evicted = counter(adsm::Counter::device_evictions) + counter(adsm::Counter::host_only_allocs);
    for (int round = 0; round < 3; ++round)
        for (uint32_t *p : objs) {
            inc_.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
            adsm::sync();
        }
    EXPECT_GT(counter(adsm::Counter::device_evictions) + counter(adsm::Counter::host_only_allocs), evicted);
    for (int i = 0; i < 16; ++i)
        for (size_t k = 0; k < n; k += 997) ASSERT_EQ(objs[i][k], static_cast<uint32_t>(k * 7 + i + 3)) << i;
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    EXPECT_LE(info.memory_used, info.memory_bytes);
    for (uint32_t *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// A call that needs room while the coldest object is its own kernel's (of
// the lowest priority, so always the first candidate) evicts the
// higher-priority idle ones after it: the candidates are looked at again at
// most once per attempt, not each time a higher priority comes up.
TEST_F(OversubscriptionTest, ABusyColdestObjectIsPassedOverForHigherPriorities) {
    const size_t n = words();
    adsmAllocAttr low{0, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0}, high{5, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0};
    auto *busy = static_cast<uint32_t *>(adsmAllocEx(n * 4, &low));
    auto *b = static_cast<uint32_t *>(adsmAllocEx(n * 4, &high));
    auto *c = static_cast<uint32_t *>(adsmAllocEx(n * 4, &high));
    ASSERT_TRUE(busy && b && c) << detail();
    for (uint32_t *p : {busy, b, c}) {
        memset(p, 0, n * 4);  // (fresh memory holds anything)
        inc_.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
    }
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    // busy: its kernel copies it onto itself for a while.
    adsm::kernel<copy_late> slow = device_kernel<copy_late>("named.copy_late");
    slow.with({{busy, 0}}, 1, 1, busy, busy, n, 200u);
    auto *d = static_cast<uint32_t *>(adsmAlloc(2 * n * 4));  // half the device
    ASSERT_NE(d, nullptr) << detail();
    inc_.with({{d, 0}}, adsm::blocks_for(2 * n, 256), 256, d, 2 * n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_TRUE(resident(busy)) << "its kernel was using it";
    EXPECT_FALSE(resident(b) && resident(c)) << "no room was made";
    EXPECT_EQ(d[5], 1u);
    for (size_t k = 0; k < n; k += 997) ASSERT_EQ(busy[k], 1u) << k;
    for (uint32_t *p : {busy, b, c, d}) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// Lazy keeps an object in one block however large it is: past 4 GiB the
// block size once wrapped, and the blocks beyond were read from outside the
// object's table (a wrong fetch, or corrupted memory).
TEST_F(OversubscriptionTest, ObjectsPastFourGiBKeepEveryByte) {
    const size_t bytes = (size_t{4} << 30) + (64 << 10);
    auto *big = static_cast<unsigned char *>(adsmAlloc(bytes));
    ASSERT_NE(big, nullptr) << detail();
    const size_t at[] = {0, (size_t{1} << 32) - 1, size_t{1} << 32, bytes / 2, bytes - 1};
    for (size_t i = 0; i < 5; ++i) big[at[i]] = static_cast<unsigned char>(i + 1);
    {
        adsm::Runtime *rt = nullptr;
        ASSERT_EQ(adsm::runtime(&rt), adsmSuccess);
        adsm::Region *r = rt->table.find(reinterpret_cast<uintptr_t>(big));
        ASSERT_NE(r, nullptr);
        if (r->nblocks) {  // a block protocol: its blocks cover the object
            EXPECT_EQ(r->block_end(r->nblocks - 1), r->span) << r->nblocks << " blocks of " << r->block_size << " bytes";
        }
    }
    const size_t n = words();
    auto *x = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(x, nullptr) << detail();
    for (size_t k = 0; k < n; ++k) x[k] = 1;
    try {  // the whole context: the big object cannot fit
        inc_(adsm::blocks_for(n, 256), 256, x, n);
        ADD_FAILURE() << "a call needing more than the device ran";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorMemoryAllocation) << e.what();
    }
    inc_.with({{x, 0}}, adsm::blocks_for(n, 256), 256, x, n);
    adsm::sync();
    EXPECT_EQ(x[n - 1], 2u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(big[at[i]], i + 1) << "at byte " << at[i];
    big[at[4]] = 9;
    EXPECT_EQ(big[at[4]], 9);
    EXPECT_EQ(adsmFree(x), adsmSuccess);
    EXPECT_EQ(adsmFree(big), adsmSuccess);
}

TEST_F(OversubscriptionTest, ACallThatCannotFitFailsAndLosesNothing) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 5; ++i) {
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t))));
        ASSERT_NE(objs.back(), nullptr) << detail();
        for (size_t k = 0; k < n; ++k) objs.back()[k] = static_cast<uint32_t>(i);
    }
    // Five quarters of the device at once: no room, whatever is evicted.
    try {
        inc_(adsm::blocks_for(n, 256), 256, objs[0], n);  // the whole context
        ADD_FAILURE() << "a call needing more than the device ran";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorMemoryAllocation) << e.what();
    }
    adsm::sync();
    for (int i = 0; i < 5; ++i)
        for (size_t k = 0; k < n; k += 1009) ASSERT_EQ(objs[i][k], static_cast<uint32_t>(i)) << "lost by the refused call";
    // What fits still runs.
    inc_.with({{objs[4], 0}}, adsm::blocks_for(n, 256), 256, objs[4], n);
    adsm::sync();
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(objs[4][k], 5u);
    for (uint32_t *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// A freed malloc block kept for reuse (memory/kept_blocks.h) holds no
// object: once evicted, a release leaves it on the host, where the next
// malloc of its size still finds it.
TEST_F(OversubscriptionTest, AKeptMallocBlockIsNotBroughtBackByARelease) {
    const size_t n = words();
    auto *kept = static_cast<uint32_t *>(adsm::preload::alloc(n * sizeof(uint32_t), false));
    ASSERT_NE(kept, nullptr) << detail();
    for (size_t k = 0; k < n; ++k) kept[k] = 5;
    ASSERT_EQ(adsm::preload::release(kept), adsm::preload::Release::freed);
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 4; ++i) {
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t))));
        ASSERT_NE(objs.back(), nullptr) << detail();
        for (size_t k = 0; k < n; ++k) objs.back()[k] = 100;
    }
    // Each call names its object: the fourth evicts the coldest, the kept
    // block.
    for (uint32_t *p : objs) {
        inc_.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
        adsm::sync();
    }
    ASSERT_FALSE(resident(kept)) << "the kept block, released never, is the coldest";
    // A call of the whole context makes every object resident: not it.
    inc_(adsm::blocks_for(n, 256), 256, objs[0], n);
    adsm::sync();
    EXPECT_FALSE(resident(kept)) << "a release brought the kept block back to the device";
    // (The kept block is this thread's since the calls above, on a GPU too:
    // the release before left it alone, on the host; the malloc tests run
    // kernels on a reused block.)
    auto *again = static_cast<uint32_t *>(adsm::preload::alloc(n * sizeof(uint32_t), false));
    ASSERT_EQ(again, kept);
    for (size_t k = 0; k < n; ++k) again[k] = static_cast<uint32_t>(k);
    for (size_t k = 0; k < n; k += 991) ASSERT_EQ(again[k], k) << k;
    for (size_t k = 0; k < n; k += 991) ASSERT_EQ(objs[0][k], 102u) << k;
    for (int i = 1; i < 4; ++i)
        for (size_t k = 0; k < n; k += 991) ASSERT_EQ(objs[i][k], 101u) << i;
    EXPECT_EQ(adsm::preload::release(again), adsm::preload::Release::freed);
    for (uint32_t *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

TEST_F(OversubscriptionTest, ObjectsARunningKernelUsesAreNeverEvicted) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 6; ++i) {
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t))));
        ASSERT_NE(objs.back(), nullptr) << detail();
        for (size_t k = 0; k < n; ++k) objs.back()[k] = 100;
    }
    // Three calls in flight hold three quarters; each later one must evict
    // around them, never them.
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 3; ++i) {
            uint32_t *p = objs[(round + i) % 6];
            inc_.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
        }
        adsm::sync();
    }
    std::vector<uint32_t> expected(6, 100);
    for (int round = 0; round < 4; ++round)
        for (int i = 0; i < 3; ++i) expected[(round + i) % 6]++;
    for (int i = 0; i < 6; ++i)
        for (size_t k = 0; k < n; k += 991) ASSERT_EQ(objs[i][k], expected[i]) << i;
    for (uint32_t *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

TEST_F(OversubscriptionTest, ThreadsEvictEachOthersIdleObjects) {
    const size_t n = words() / 2;  // an eighth of the device each
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::vector<uint32_t *> objs;
            for (int i = 0; i < 4; ++i) {  // 4 threads x 4 x 1/8: twice the device
                auto *p = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
                if (!p) {
                    wrong++;
                    return;
                }
                for (size_t k = 0; k < n; ++k) p[k] = static_cast<uint32_t>(t);
                objs.push_back(p);
            }
            // At most four calls in flight, each an eighth of the device:
            // room is always there once idle objects are evicted, whoever
            // owns them.
            for (int round = 0; round < 5; ++round)
                for (uint32_t *p : objs) {
                    adsmObjectUse use{p, 0};
                    void *args[2];
                    size_t len = n;
                    args[0] = &p;
                    args[1] = &len;
                    if (adsmCallWith(inc_.handle(), adsm::blocks_for(n, 256), {256, 1, 1}, args, &use, 1) != adsmSuccess ||
                        adsmSync() != adsmSuccess) {
                        if (wrong++ == 0) ADD_FAILURE() << "thread " << t << ": " << detail();
                    }
                }
            for (uint32_t *p : objs) {
                for (size_t k = 0; k < n; k += 499)
                    if (p[k] != static_cast<uint32_t>(t + 5) && wrong++ == 0)
                        ADD_FAILURE() << "thread " << t << ", object " << p << ", word " << k << ": " << p[k];
                adsmFree(p);
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

TEST_F(OversubscriptionTest, LowerPrioritiesAreEvictedFirst) {
    const size_t n = words();
    adsmAllocAttr high{5, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0}, low{0, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0};
    // Released in this order: high0, low0, low1, high1 (the least recent first).
    std::vector<uint32_t *> objs = {static_cast<uint32_t *>(adsmAllocEx(n * 4, &high)),
                                    static_cast<uint32_t *>(adsmAllocEx(n * 4, &low)),
                                    static_cast<uint32_t *>(adsmAllocEx(n * 4, &low)),
                                    static_cast<uint32_t *>(adsmAllocEx(n * 4, &high))};
    for (uint32_t *p : objs) {
        ASSERT_NE(p, nullptr) << detail();
        for (size_t k = 0; k < n; ++k) p[k] = 1;
        inc_.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
        adsm::sync();
        EXPECT_TRUE(resident(p));
    }
    // Two more quarters: the two low-priority objects go, though high0 was
    // released longest ago.
    for (int i = 0; i < 2; ++i) {
        auto *extra = static_cast<uint32_t *>(adsmAllocEx(n * 4, &high));
        ASSERT_NE(extra, nullptr) << detail();
        for (size_t k = 0; k < n; ++k) extra[k] = 1;
        inc_.with({{extra, 0}}, adsm::blocks_for(n, 256), 256, extra, n);
        adsm::sync();
        objs.push_back(extra);
    }
    EXPECT_TRUE(resident(objs[0])) << "a high-priority object went before the low ones";
    EXPECT_FALSE(resident(objs[1]));
    EXPECT_FALSE(resident(objs[2]));
    EXPECT_TRUE(resident(objs[3]));
    for (uint32_t *p : objs) {
        for (size_t k = 0; k < n; k += 1021) ASSERT_EQ(p[k], 2u);
        EXPECT_EQ(adsmFree(p), adsmSuccess);
    }
}

TEST_F(OversubscriptionTest, SpillPoliciesDecideWhereANewObjectGoesWhenTheDeviceIsFull) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 4; ++i) {  // the whole device, idle
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * 4)));
        ASSERT_NE(objs.back(), nullptr);
        ASSERT_TRUE(resident(objs.back()));
    }
    adsmAllocAttr host{0, ADSM_SPILL_HOST, 1, ADSM_PLACE_DEVICE, 0};
    adsmAllocAttr evict{0, ADSM_SPILL_EVICT, 1, ADSM_PLACE_DEVICE, 0};
    adsmAllocAttr fail{0, ADSM_SPILL_FAIL, 0, ADSM_PLACE_DEVICE, 0};
    auto *h = static_cast<uint32_t *>(adsmAllocEx(n * 4, &host));
    ASSERT_NE(h, nullptr) << detail();
    EXPECT_FALSE(resident(h)) << "spill host: it waits on the host";
    EXPECT_EQ(h[n - 1], 0u) << "zeroed";
    auto *e = static_cast<uint32_t *>(adsmAllocEx(n * 4, &evict));
    ASSERT_NE(e, nullptr) << detail();
    EXPECT_TRUE(resident(e)) << "spill evict: an idle object made room";
    EXPECT_FALSE(resident(objs[0])) << "never released: the oldest allocation first";
    EXPECT_TRUE(resident(objs[1]) && resident(objs[2]) && resident(objs[3])) << "one was enough";
    EXPECT_EQ(e[7], 0u);
    // Device memory is never evicted: with the device full of it, fail fails.
    for (uint32_t *p : objs) adsmFree(p);
    adsmFree(e);
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    void *filler = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&filler, info.memory_bytes - info.memory_used - 4096), adsmSuccess) << detail();
    EXPECT_EQ(adsmAllocEx(n * 4, &fail), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation);
    adsmAllocAttr bad{0, 9, 0, ADSM_PLACE_DEVICE, 0};
    EXPECT_EQ(adsmAllocEx(64, &bad), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
    EXPECT_EQ(adsmDeviceFree(filler), adsmSuccess);
    auto *f = static_cast<uint32_t *>(adsmAllocEx(n * 4, &fail));
    EXPECT_NE(f, nullptr) << "fits again: " << detail();
    adsmFree(f);
    adsmFree(h);
}

TEST_F(OversubscriptionTest, AnObjectThatPrefersTheHostGoesFirst) {
    const size_t n = words();
    adsmAllocAttr high{9, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0};
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 4; ++i) {
        objs.push_back(static_cast<uint32_t *>(adsmAllocEx(n * 4, &high)));
        ASSERT_NE(objs.back(), nullptr);
        for (size_t k = 0; k < n; ++k) objs.back()[k] = 3;
    }
    // objs[3] is the most recently used and of the highest priority, yet it
    // prefers the host.
    ASSERT_EQ(adsmAdvise(objs[3], 16, ADSM_ADVISE_PREFER_HOST), adsmSuccess) << detail();
    auto *extra = static_cast<uint32_t *>(adsmAlloc(n * 4));
    ASSERT_NE(extra, nullptr);
    for (size_t k = 0; k < n; ++k) extra[k] = 3;
    inc_.with({{extra, 0}}, adsm::blocks_for(n, 256), 256, extra, n);
    adsm::sync();
    EXPECT_FALSE(resident(objs[3]));
    EXPECT_TRUE(resident(objs[0]) && resident(objs[1]) && resident(objs[2]));
    EXPECT_EQ(extra[n - 1], 4u);
    EXPECT_EQ(objs[3][n - 1], 3u);
    objs.push_back(extra);
    for (uint32_t *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// Spill to the next kind of memory: an object that finds the device full
// becomes host-resident, kernels reaching it there, and nothing is evicted
// for it, now or at its calls.
TEST_F(OversubscriptionTest, SpillNextMakesAnObjectHostResident) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 4; ++i) {  // the whole device, idle
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * 4)));
        ASSERT_NE(objs.back(), nullptr) << detail();
        ASSERT_TRUE(resident(objs.back()));
    }
    const uint64_t evictions = counter(adsm::Counter::device_evictions);
    const uint64_t host_resident = counter(adsm::Counter::host_resident_allocs);
    adsmAllocAttr next{0, ADSM_SPILL_NEXT, 1, ADSM_PLACE_DEVICE, 0};
    auto *h = static_cast<uint32_t *>(adsmAllocEx(n * 4, &next));
    ASSERT_NE(h, nullptr) << detail();
    EXPECT_EQ(counter(adsm::Counter::host_resident_allocs), host_resident + 1);
    for (size_t k = 0; k < n; ++k) h[k] = static_cast<uint32_t>(k);
    for (int round = 0; round < 2; ++round) {
        inc_(adsm::blocks_for(n, 256), 256, h, n);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    }
    for (size_t k = 0; k < n; k += 101) ASSERT_EQ(h[k], static_cast<uint32_t>(k + 2)) << k;
    EXPECT_EQ(counter(adsm::Counter::device_evictions), evictions) << "the device's objects stayed";
    for (uint32_t *p : objs) EXPECT_TRUE(resident(p));
    // With room again, the same attributes give device memory.
    for (uint32_t *p : objs) adsmFree(p);
    auto *d = static_cast<uint32_t *>(adsmAllocEx(n * 4, &next));
    ASSERT_NE(d, nullptr) << detail();
    EXPECT_TRUE(resident(d));
    EXPECT_EQ(counter(adsm::Counter::host_resident_allocs), host_resident + 1);
    adsmFree(d);
    adsmFree(h);
}

// A replicated object needs room on every device: idle objects make it,
// else it fails, or becomes host-resident with spill next.
TEST_F(OversubscriptionTest, AReplicatedObjectThatDoesNotFitFailsOrSpills) {
    const size_t n = words();
    std::vector<uint32_t *> objs;
    for (int i = 0; i < 4; ++i) {
        objs.push_back(static_cast<uint32_t *>(adsmAlloc(n * 4)));
        ASSERT_NE(objs.back(), nullptr) << detail();
    }
    adsmAllocAttr every{0, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_EVERY_DEVICE, 0};
    auto *r = static_cast<uint32_t *>(adsmAllocEx(n * 4, &every));
    ASSERT_NE(r, nullptr) << detail();
    EXPECT_FALSE(resident(objs[0])) << "the oldest idle object made room for it";
    adsmAllocAttr too_big_fail{0, ADSM_SPILL_FAIL, 0, ADSM_PLACE_EVERY_DEVICE, 0};
    EXPECT_EQ(adsmAllocEx(capacity() + (1 << 20), &too_big_fail), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation);
    adsmAllocAttr too_big_next{0, ADSM_SPILL_NEXT, 0, ADSM_PLACE_EVERY_DEVICE, 0};
    const uint64_t host_resident = counter(adsm::Counter::host_resident_allocs);
    void *spilled = adsmAllocEx(capacity() + (1 << 20), &too_big_next);
    ASSERT_NE(spilled, nullptr) << detail();
    EXPECT_EQ(counter(adsm::Counter::host_resident_allocs), host_resident + 1);
    for (size_t k = 0; k < n; ++k) r[k] = 5;
    auto *out = objs[1];
    adsm::kernel<copy_word> copy = device_kernel<copy_word>("over.copy_word");
    // (A whole call would need all four and the replica: more than the device.)
    copy.with({{r, 1}, {out, 0}}, 1, 1, reinterpret_cast<const uint64_t *>(r), reinterpret_cast<uint64_t *>(out));
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(out[0], 5u);
    for (uint32_t *p : objs) adsmFree(p);
    adsmFree(spilled);
    adsmFree(r);
}

// Split in equal parts: an object that does not fit on its device takes as
// few equal parts as fit over its device, the other devices and host
// memory, and kernels on every device see all of it.
TEST_F(OversubscriptionTest, SpillSplitSpreadsAnObjectInEqualParts) {
    const size_t n = words();  // a quarter of the device
    int devices = 0;
    ASSERT_EQ(adsmGetDeviceCount(&devices), adsmSuccess);
    std::vector<uint32_t *> objs;
    adsmAllocAttr keep{5, ADSM_SPILL_DEFAULT, 0, ADSM_PLACE_DEVICE, 0};
    for (int i = 0; i < 3; ++i) {  // three quarters of device 0, idle, evicted last
        objs.push_back(static_cast<uint32_t *>(adsmAllocEx(n * 4, &keep)));
        ASSERT_NE(objs.back(), nullptr) << detail();
        ASSERT_TRUE(resident(objs.back()));
    }
    // With a second device, three quarters more: halves do not fit device
    // 0's last quarter, which is passed over: device 1 and host memory take
    // them.  Alone, two quarters: halves over the device and host memory.
    const size_t len = devices > 1 ? 3 * n : 2 * n;
    auto used = [](int d) {
        adsmDeviceInfo info;
        EXPECT_EQ(adsmGetDeviceProperties(d, &info), adsmSuccess);
        return info.memory_used;
    };
    const uint64_t used0 = used(0), used1 = devices > 1 ? used(1) : 0;
    const uint64_t splits = counter(adsm::Counter::split_allocs), evictions = counter(adsm::Counter::device_evictions);
    adsmAllocAttr split{0, ADSM_SPILL_SPLIT, 0, ADSM_PLACE_DEVICE, 0};
    auto *v = static_cast<uint32_t *>(adsmAllocEx(len * 4, &split));
    ASSERT_NE(v, nullptr) << detail();
    EXPECT_EQ(counter(adsm::Counter::split_allocs), splits + 1);
    // The device that holds its part, and how much it holds.
    const int holder = devices > 1 ? 1 : 0;
    const uint64_t before = holder ? used1 : used0;
    EXPECT_EQ(used(holder), before + len * 4 / 2) << "half on a device, half in host memory";
    if (devices > 1) {
        EXPECT_EQ(used(0), used0) << "no room for a half on device 0";
    }
    for (size_t k = 0; k < len; ++k) v[k] = static_cast<uint32_t>(k);
    adsmContext_t mine = adsmGetContext();
    for (int d = 0; d < devices; ++d)
        std::thread([&, d] {
            ASSERT_EQ(adsmSetDevice(d), adsmSuccess) << detail();
            ASSERT_EQ(adsmMigrate(v, nullptr), adsmSuccess) << detail();  // its parts stay where they are
            inc_.with({{v, 0}}, adsm::blocks_for(len, 256), 256, v, len);
            ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
            ASSERT_EQ(adsmMigrate(v, mine), adsmSuccess) << detail();
        }).join();
    inc_.with({{v, 0}}, adsm::blocks_for(len, 256), 256, v, len);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (size_t k = 0; k < len; k += 127) ASSERT_EQ(v[k], static_cast<uint32_t>(k + devices + 1)) << k;
    EXPECT_EQ(counter(adsm::Counter::device_evictions), evictions) << "splitting evicts nothing";
    for (uint32_t *p : objs) EXPECT_TRUE(resident(p));
    // Room needed where its part is: the split object (of the lowest
    // priority) goes, and comes back at its next call.
    const size_t wn = holder ? 3 * n : n;  // more than the holder has free
    uint32_t *w = nullptr;
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(holder), adsmSuccess) << detail();
        w = static_cast<uint32_t *>(adsmAlloc(wn * 4));
        ASSERT_NE(w, nullptr) << detail();
        inc_.with({{w, 0}}, adsm::blocks_for(wn, 256), 256, w, wn);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    }).join();  // (its context lives on while w does)
    EXPECT_FALSE(resident(v)) << "evicted to make room";
    EXPECT_EQ(used(holder), before + wn * 4) << "its part given back";
    inc_.with({{v, 0}}, adsm::blocks_for(len, 256), 256, v, len);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_TRUE(resident(v));
    EXPECT_FALSE(resident(w)) << "w made room in turn";
    EXPECT_EQ(used(holder), before + len * 4 / 2) << "its part back where it was";
    for (size_t k = 0; k < len; k += 127) ASSERT_EQ(v[k], static_cast<uint32_t>(k + devices + 2)) << k;
    // w's turn again, which evicts v once more; v is then freed while
    // evicted: its parts were given back at the eviction, and not again.
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(holder), adsmSuccess) << detail();
        ASSERT_EQ(adsmMigrate(w, nullptr), adsmSuccess) << detail();
        inc_.with({{w, 0}}, adsm::blocks_for(wn, 256), 256, w, wn);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    }).join();
    EXPECT_FALSE(resident(v));
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
    EXPECT_EQ(used(holder), before + wn * 4) << "an evicted object's parts given back once";
    adsmFree(w);
    EXPECT_EQ(used(0), used0) << "every part given back";
    if (devices > 1) {
        EXPECT_EQ(used(1), used1);
    }
    for (uint32_t *p : objs) adsmFree(p);
}
