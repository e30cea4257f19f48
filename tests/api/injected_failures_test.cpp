// Device failures injected into the sim device itself (its synchronous
// copies, its commits and its copy engine's asynchronous copies), at random
// points of a program that writes, calls and syncs: every failure reaches
// the program as an error from a call, the call can be made again, and no
// data that was current before the failure is lost.  (tests/core does the
// same against a recording device, with exact transfers.)  The sim and
// cuda devices consult the injection: these run on sim in every protocol,
// and on the CUDA driver double.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "os/fault_injection.h"
#include "test_kernels.h"

using namespace adsm_test;
namespace inj = adsm::os::injection;

TEST(InjectedFailuresTest, DeviceCopiesThatFailAreReportedAndRetriedWithoutLoss) {
    auto inc = adsm_test::device_kernel<increment>("injected.increment");
    const size_t n = 64 * 1024;  // several blocks under every block size
    auto *data = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(data, nullptr);
    std::vector<uint32_t> model(n);
    for (size_t i = 0; i < n; ++i) data[i] = model[i] = uint32_t(i);

    std::mt19937 rng(12345);
    const uint64_t before = inj::injected(inj::Site::device_copy);
    int call_errors = 0, sync_errors = 0;
    for (int step = 0; step < 120; ++step) {
        // Some CPU writes, so that the release has something to send.
        for (int w = 0; w < 8; ++w) {
            size_t i = rng() % n;
            data[i] = model[i] = uint32_t(rng());
        }
        inj::arm(inj::Site::device_copy, 1 + rng() % 6);
        void *args[] = {&data, const_cast<size_t *>(&n)};
        int tries = 0;
        while (adsmCall(inc.handle(), adsm::blocks_for(n, 256), adsm::dim3(256), args) != adsmSuccess) {
            ++call_errors;
            ASSERT_LT(++tries, 8) << detail();
            inj::arm(inj::Site::device_copy, 0);
        }
        for (auto &v : model) ++v;
        tries = 0;
        while (adsmSync() != adsmSuccess) {
            ++sync_errors;
            ASSERT_LT(++tries, 8) << detail();
            inj::arm(inj::Site::device_copy, 0);
        }
        inj::arm(inj::Site::device_copy, 0);
        // A read that faults may itself fail (SIGBUS); the data is checked
        // with nothing armed.
        for (size_t i = 0; i < n; i += 61) ASSERT_EQ(data[i], model[i]) << "step " << step << " index " << i;
    }
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], model[i]) << "index " << i;
    const uint64_t failed = inj::injected(inj::Site::device_copy) - before;
    printf("%llu copies failed by injection; %d calls and %d syncs reported it\n",
           static_cast<unsigned long long>(failed), call_errors, sync_errors);
    EXPECT_GT(failed, 0u);
    EXPECT_GT(call_errors + sync_errors, 0);
    adsmFree(data);
}

// (A device allocation that finds the device full evicts idle objects and
// tries again; ErrorsTest.ExhaustedDeviceMemoryLeavesNothingBehind checks
// one that still cannot fit.)
TEST(InjectedFailuresTest, ASharedObjectWhoseCommitFailsLivesOnTheHostUntilACallNeedsIt) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    const uint64_t used = info.memory_used;
    // Shared memory: it lives on the host until a call commits it.
    inj::arm(inj::Site::device_commit, 1);
    const size_t n = (1 << 20) / sizeof(uint32_t);
    auto *p = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    inj::arm(inj::Site::device_commit, 0);
    ASSERT_NE(p, nullptr) << detail();
    adsmGetDeviceInfo(&info);
    EXPECT_EQ(info.memory_used, used) << "no device memory behind it yet";
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(i);
    auto inc = adsm_test::device_kernel<increment>("injected.increment");
    inc(adsm::blocks_for(n, 256), 256, p, n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], static_cast<uint32_t>(i + 1)) << i;
    EXPECT_EQ(adsmFree(p), adsmSuccess);
}

// A zeroed allocation whose device copy cannot be zeroed is refused: both
// copies are taken as current from the start, so a device copy holding an
// earlier object's bytes would reach kernels as data.
TEST(InjectedFailuresTest, AZeroedAllocationWhoseDeviceFillFailsIsRefused) {
    const uint64_t before = inj::injected(inj::Site::device_copy);
    inj::arm(inj::Site::device_copy, 1);
    void *p = adsmCalloc(1000, sizeof(uint32_t));
    const bool injected = inj::injected(inj::Site::device_copy) > before;
    inj::arm(inj::Site::device_copy, 0);
    if (!injected) {
        // (A device that zeroes fresh memory by itself makes no fill.)
        EXPECT_NE(p, nullptr) << detail();
    } else {
        EXPECT_EQ(p, nullptr) << "the fill failed, yet the allocation succeeded";
        EXPECT_NE(adsmGetLastError(), adsmSuccess);
    }
    adsmFree(p);
    // And the next one is served.
    void *q = adsmCalloc(1000, sizeof(uint32_t));
    ASSERT_NE(q, nullptr) << detail();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<uint32_t *>(q)[i], 0u);
    adsmFree(q);
}
