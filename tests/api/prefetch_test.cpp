// adsmPrefetch and adsmAdvise: data moved ahead of use, to the host or to
// the device, and advice on how kernels use it.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "counters.h"
#include "test_kernels.h"

using namespace adsm_test;

namespace {

uint64_t faults() { return counter(adsm::Counter::read_faults) + counter(adsm::Counter::write_faults); }

std::string protocol() {
    adsmDeviceInfo info;
    EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    return info.protocol;
}

}  // namespace

TEST(PrefetchTest, ToTheHostTheCpuReadsWithoutAFault) {
    auto inc = device_kernel<increment>("prefetch.increment");
    const size_t n = 1 << 20;
    adsm::shared_array<uint32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    inc(adsm::blocks_for(n, 256), 256, v.data(), n);
    adsm::sync();
    uint64_t d2h = counter(adsm::Counter::d2h_bytes);
    ASSERT_EQ(adsmPrefetch(v.data(), n * sizeof(uint32_t), ADSM_HOST), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();  // the copies have landed
    if (is_discrete()) {
        uint64_t moved = counter(adsm::Counter::d2h_bytes) - d2h;
        EXPECT_LE(moved, n * sizeof(uint32_t));
        // (batch's sync brought it all back, and delta's may have fetched it
        // ahead already, predicting reads.)
        if (protocol() == "lazy" || protocol() == "rolling") {
            EXPECT_EQ(moved, n * sizeof(uint32_t)) << "the data came in at the prefetch";
        }
    }
    uint64_t before = faults();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += v[i];
    EXPECT_EQ(faults(), before) << "reads after a prefetch to the host fault";
    EXPECT_EQ(sum, uint64_t(n) * (n - 1) / 2 + n);
    // Part of an object: only the blocks it covers.
    inc(adsm::blocks_for(n, 256), 256, v.data(), n);
    adsm::sync();
    ASSERT_EQ(adsmPrefetch(v.data() + n / 2, 4096, ADSM_HOST), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    before = faults();
    EXPECT_EQ(v[n / 2], static_cast<uint32_t>(n / 2 + 2));
    EXPECT_EQ(faults(), before);
    EXPECT_EQ(v[0], 2u);
}

// To the host the copies run in the background: the call returns before
// they land (api.sim.prefetch.*, whose link takes 100 ms a transfer), a
// read meanwhile waits for its block, and the next sync waits for them all.
TEST(PrefetchTest, ToTheHostItRunsInTheBackgroundAndTheSyncWaitsForIt) {
    auto inc = device_kernel<increment>("prefetch.increment");
    const size_t n = 1 << 20;
    adsm::shared_array<uint32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    inc(adsm::blocks_for(n, 256), 256, v.data(), n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(adsmPrefetch(v.data(), n * sizeof(uint32_t), ADSM_HOST), adsmSuccess) << detail();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const char *latency = getenv("ADSM_SIM_LINK_LATENCY_US");
    const std::string p = protocol();
    if (latency && atof(latency) >= 50000 && (p == "lazy" || p == "rolling" || p == "delta")) {
        EXPECT_LT(us, atof(latency) / 2) << p << ": the prefetch waited for its copies";
    }
    EXPECT_EQ(v[n - 1], static_cast<uint32_t>(n)) << "a read while the copies are on their way";
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    const uint64_t before = faults();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += v[i];
    EXPECT_EQ(faults(), before) << p << ": reads after the sync that waited for the prefetch fault";
    EXPECT_EQ(sum, uint64_t(n) * (n - 1) / 2 + n);
}

TEST(PrefetchTest, ToTheDeviceTheCallHasNothingLeftToSend) {
    auto inc = device_kernel<increment>("prefetch.increment");
    const size_t n = 1 << 20;
    adsm::shared_array<uint32_t> v(n);
    // (rolling starts sending what the CPU writes while it writes.)
    uint64_t h2d = counter(adsm::Counter::h2d_bytes);
    for (size_t i = 0; i < n; ++i) v[i] = 7;
    int device = 0;
    ASSERT_EQ(adsmGetDevice(&device), adsmSuccess);
    ASSERT_EQ(adsmPrefetch(v.data(), n * sizeof(uint32_t), device), adsmSuccess) << detail();
    uint64_t sent_early = counter(adsm::Counter::h2d_bytes) - h2d;
    h2d = counter(adsm::Counter::h2d_bytes);
    inc(adsm::blocks_for(n, 256), 256, v.data(), n);
    uint64_t sent_at_call = counter(adsm::Counter::h2d_bytes) - h2d;
    adsm::sync();
    if (is_discrete()) {
        EXPECT_GE(sent_early, n * sizeof(uint32_t)) << "sent by the time the prefetch returned";
        // Batch sends every object at every call whatever happened before.
        if (protocol() != "batch") {
            EXPECT_EQ(sent_at_call, 0u) << "the call sent it again";
        }
    }
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 8u) << i;
}

TEST(PrefetchTest, BadRequestsAreRefused) {
    auto inc = device_kernel<increment>("prefetch.increment");
    const size_t n = 4096;
    adsm::shared_array<uint32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 1;
    int count = 0;
    ASSERT_EQ(adsmGetDeviceCount(&count), adsmSuccess);
    EXPECT_EQ(adsmPrefetch(v.data(), n * sizeof(uint32_t) + 1, ADSM_HOST), adsmErrorInvalidValue) << "past the end";
    EXPECT_EQ(adsmPrefetch(v.data(), 16, count), adsmErrorInvalidDevice);
    EXPECT_EQ(adsmPrefetch(v.data(), 16, -2), adsmErrorInvalidDevice);
    int local = 0;
    EXPECT_EQ(adsmPrefetch(&local, sizeof local, ADSM_HOST), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmPrefetch(nullptr, 16, ADSM_HOST), adsmErrorInvalidPointer);
    if (count > 1) {
        EXPECT_EQ(adsmPrefetch(v.data(), 16, 1), adsmErrorInvalidValue) << "its context is on device 0";
        EXPECT_NE(detail().find("adsmMigrate"), std::string::npos) << detail();
    }
    inc(adsm::blocks_for(n, 256), 256, v.data(), n);
    EXPECT_EQ(adsmPrefetch(v.data(), 16, ADSM_HOST), adsmErrorBusy) << "a kernel may be using it";
    adsm::sync();
    EXPECT_EQ(adsmPrefetch(v.data(), 0, ADSM_HOST), adsmSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 2u);
}

TEST(AdviseTest, ReadMostlyObjectsNeverComeBackFromAWholeContextCall) {
    auto k = device_kernel<twice>("advise.twice");
    const size_t n = 1 << 20;
    adsm::shared_array<uint32_t> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<uint32_t>(i);
    ASSERT_EQ(adsmAdvise(x.data() + 5, 64, ADSM_ADVISE_READ_MOSTLY), adsmSuccess) << detail();
    uint64_t d2h = counter(adsm::Counter::d2h_bytes);
    k(adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<uint32_t>(2 * i)) << i;
    uint64_t before = faults();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i += 1024) sum += x[i];
    EXPECT_GT(sum, 0u);
    if (is_discrete()) {
        EXPECT_LE(counter(adsm::Counter::d2h_bytes) - d2h, n * sizeof(uint32_t)) << "x came back";
        EXPECT_EQ(faults(), before) << "reading a read-mostly object after a call faulted";
    }
    // The CPU's writes still reach the next call.
    x[3] = 1000;
    k(adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    adsm::sync();
    EXPECT_EQ(y[3], 2000u);
    // Unset, it comes back as any object does.
    ASSERT_EQ(adsmAdvise(x.data(), n * sizeof(uint32_t), ADSM_ADVISE_UNSET_READ_MOSTLY), adsmSuccess);
    k(adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    adsm::sync();
    EXPECT_EQ(x[3], 1000u);
    EXPECT_EQ(y[4], 8u);
}

TEST(AdviseTest, BadAdviceIsRefused) {
    adsm::shared_array<uint32_t> v(1024);
    int local = 0;
    EXPECT_EQ(adsmAdvise(v.data(), 64, 77), adsmErrorInvalidValue);
    EXPECT_EQ(adsmAdvise(&local, 4, ADSM_ADVISE_READ_MOSTLY), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmAdvise(nullptr, 4, ADSM_ADVISE_READ_MOSTLY), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmAdvise(v.data() + 1000, 4096, ADSM_ADVISE_PREFER_HOST), adsmErrorInvalidValue) << "past the end";
}

// Sequential read-ahead (ADSM_READ_AHEAD): a result read back in order
// faults on a few of its blocks, the rest fetched in the background; read
// out of order, nothing comes ahead.
namespace {

struct ReadBack {
    adsmDeviceInfo info{};
    size_t n = 0, nblocks = 0;
    bool read_ahead = true;
    ReadBack() {
        EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
        // Not a whole number of blocks, nor of a GPU's 2 MiB granules: the
        // object's span goes on past its bytes.
        n = (std::max<size_t>(16u << 20, 64 * info.block_size) + 3 * info.block_size + 100) / sizeof(uint32_t);
        nblocks = (n * sizeof(uint32_t) + info.block_size - 1) / info.block_size;
        const char *v = getenv("ADSM_READ_AHEAD");
        read_ahead = !(v && strcmp(v, "0") == 0);
    }
    // A kernel leaves every block of v on the device alone.
    void run_kernel(adsm::shared_array<uint32_t> &v) {
        auto inc = device_kernel<increment>("prefetch.increment");
        for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
        inc(adsm::blocks_for(n, 256), 256, v.data(), n);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    }
};

}  // namespace

TEST(SequentialReadTest, AnObjectReadInOrderFaultsOnAFewOfItsBlocks) {
    ReadBack t;
    adsm::shared_array<uint32_t> v(t.n);
    t.run_kernel(v);
    const uint64_t reads = counter(adsm::Counter::read_faults), windows = counter(adsm::Counter::read_ahead_windows);
    uint64_t sum = 0;
    for (size_t i = 0; i < t.n; ++i) sum += v[i];
    EXPECT_EQ(sum, uint64_t(t.n) * (t.n - 1) / 2 + t.n) << "every byte the kernel wrote, read ahead or not";
    if (!is_discrete()) return;
    const uint64_t faulted = counter(adsm::Counter::read_faults) - reads;
    const std::string p = t.info.protocol;
    if (t.read_ahead) {
        EXPECT_LE(faulted, std::max<size_t>(1, t.nblocks / 4)) << p << ": " << t.nblocks << " blocks read in order";
        if (p == "rolling" || p == "delta") {
            EXPECT_GT(counter(adsm::Counter::read_ahead_windows), windows);
        }
    } else if (p == "rolling") {
        EXPECT_EQ(faulted, t.nblocks) << "ADSM_READ_AHEAD=0: a fault per block";
        EXPECT_EQ(counter(adsm::Counter::read_ahead_windows), windows);
    }
}

TEST(SequentialReadTest, AnObjectReadOutOfOrderGetsNothingAhead) {
    ReadBack t;
    adsm::shared_array<uint32_t> v(t.n);
    t.run_kernel(v);
    const uint64_t d2h = counter(adsm::Counter::d2h_bytes), windows = counter(adsm::Counter::read_ahead_windows);
    // Every fourth block, from the last one down.
    const size_t per_block = t.info.block_size / sizeof(uint32_t);
    size_t touched = 0;
    for (size_t b = t.nblocks; b >= 4; b -= 4) {
        EXPECT_EQ(v[(b - 1) * per_block], static_cast<uint32_t>((b - 1) * per_block + 1));
        ++touched;
    }
    if (!is_discrete() || (std::string(t.info.protocol) != "rolling" && std::string(t.info.protocol) != "delta")) return;
    EXPECT_EQ(counter(adsm::Counter::read_ahead_windows), windows);
    // (The last block is partly past the object's end.)
    const size_t last_block_bytes = t.n * sizeof(uint32_t) - (t.nblocks - 1) * t.info.block_size;
    EXPECT_EQ(counter(adsm::Counter::d2h_bytes) - d2h, (touched - 1) * t.info.block_size + last_block_bytes)
        << "only the blocks read came back";
}
