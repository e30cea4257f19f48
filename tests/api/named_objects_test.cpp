// Calls that name the objects their kernel uses (adsmCallWith): only those
// are released and acquired, and read-only ones never come back.
#include <chrono>
#include <thread>

#include "counters.h"
#include "test_kernels.h"

using namespace adsm_test;

TEST(NamedObjectsTest, OnlyTheNamedObjectsAreReleased) {
    auto inc = device_kernel<increment>("named.increment");
    const size_t n = 200000;
    adsm::shared_array<uint32_t> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = b[i] = static_cast<uint32_t>(i);
    inc.with({{a.data(), 0}}, adsm::blocks_for(n, 256), 256, a.data(), n);
    // Until the sync, a is the kernel's and b the CPU's, to use and to free.
    EXPECT_EQ(adsmFree(a.data()), adsmErrorBusy);
    for (size_t i = 0; i < n; i += 1000) b[i] += 5;
    auto *c = static_cast<uint32_t *>(adsmAlloc(64));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(adsmFree(c), adsmSuccess) << "an object the call did not name is not held";
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], static_cast<uint32_t>(i + 1)) << i;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], static_cast<uint32_t>(i + (i % 1000 == 0 ? 5 : 0))) << i;
    // An empty list releases nothing: b stays the CPU's.
    auto empty = device_kernel<empty_kernel>("named.empty");
    ASSERT_EQ(adsmCallWith(empty.handle(), {1, 1, 1}, {1, 1, 1}, nullptr, nullptr, 0), adsmSuccess) << detail();
    b[1] = 77;
    adsm::sync();
    EXPECT_EQ(b[1], 77u);
    // The kernel's arguments are still checked.
    EXPECT_EQ(adsmCallWith(inc.handle(), {1, 1, 1}, {1, 1, 1}, nullptr, nullptr, 0), adsmErrorInvalidValue);
}

TEST(NamedObjectsTest, ReadOnlyObjectsStayWithTheCpuAndNeverComeBack) {
    auto k = device_kernel<add_one>("named.add_one");
    const size_t n = 1 << 20;  // 4 MiB each
    adsm::shared_array<uint32_t> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<uint32_t>(3 * i);
    uint64_t d2h = counter(adsm::Counter::d2h_bytes);
    uint64_t faults = counter(adsm::Counter::read_faults) + counter(adsm::Counter::write_faults);
    k.with({{x.data(), 1}, {y.data(), 0}}, adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    // The CPU reads x while the kernel runs: its host copy is still current.
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i += 4096) sum += x[i];
    EXPECT_GT(sum, 0u);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<uint32_t>(3 * i + 1)) << i;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], static_cast<uint32_t>(3 * i)) << i;
    if (is_discrete()) {
        // y came back; x did not (at most y's bytes crossed back).
        EXPECT_LE(counter(adsm::Counter::d2h_bytes) - d2h, n * sizeof(uint32_t));
        adsmDeviceInfo info;
        ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
        // Reading x took no fault at all where the protocol protects what
        // it releases (batch protects nothing and never faults).
        if (std::string(info.protocol) != "batch") {
            uint64_t y_faults = counter(adsm::Counter::read_faults) + counter(adsm::Counter::write_faults) - faults;
            EXPECT_LE(y_faults, n * sizeof(uint32_t) / info.block_size + 1) << "faults on y's blocks only";
        }
    }
    // The CPU writes x after the call: the next call sends it.
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<uint32_t>(i);
    k.with({{x.data(), 1}, {y.data(), 0}}, adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<uint32_t>(i + 1)) << i;
}

TEST(NamedObjectsTest, ACpuWriteToAReadOnlyObjectDuringTheKernelGoesToTheNextCall) {
    auto k = device_kernel<add_one>("named.add_one");
    const size_t n = 100000;
    adsm::shared_array<uint32_t> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = 1;
    k.with({{x.data(), 1}, {y.data(), 0}}, adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    x[7] = 50;  // a discrete device's kernel reads what was released; the host keeps this
    adsm::sync();
    if (is_discrete()) {
        EXPECT_EQ(y[7], 2u);
    }
    EXPECT_EQ(x[7], 50u);
    k.with({{x.data(), 1}, {y.data(), 0}}, adsm::blocks_for(n, 256), 256, x.data(), y.data(), n);
    adsm::sync();
    EXPECT_EQ(y[7], 51u);
    EXPECT_EQ(y[8], 2u);
}

TEST(NamedObjectsTest, AKernelReadingAnObjectSeesItAsReleasedWhateverTheCpuWritesMeanwhile) {
    // The CPU's writes wait for the kernel (a racing access, ADSM_ON_RACE)
    // or, where the program lets them race, stay on the host: rolling's
    // background sends never reach a device copy a kernel may be reading.
    auto k = device_kernel<copy_late>("named.copy_late");
    const size_t n = 4 << 20;  // 16 MiB: many blocks for the CPU to write
    adsm::shared_array<uint32_t> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = 1;
    k.with({{x.data(), 1}, {y.data(), 0}}, 1, 1, x.data(), y.data(), n, 300u);
    for (size_t i = 0; i < n; ++i) x[i] = 2;
    adsm::sync();
    if (is_discrete()) {
        for (size_t i = 0; i < n; i += 1024) ASSERT_EQ(y[i], 1u) << i << ": the kernel saw a write made after its call";
    }
    // The next call sends the CPU's writes.
    k.with({{x.data(), 1}, {y.data(), 0}}, 1, 1, x.data(), y.data(), n, 0u);
    adsm::sync();
    for (size_t i = 0; i < n; i += 1024) ASSERT_EQ(y[i], 2u) << i;
}

TEST(NamedObjectsTest, BadNamesAreRefusedBeforeAnythingMoves) {
    auto inc = device_kernel<increment>("named.increment");
    const size_t n = 1000;
    adsm::shared_array<uint32_t> a(n);
    for (size_t i = 0; i < n; ++i) a[i] = 1;
    void *args_a[2];
    uint32_t *pa = a.data();
    size_t len = n;
    args_a[0] = &pa;
    args_a[1] = &len;
    uint32_t private_memory[4];
    adsmObjectUse bad[] = {{a.data(), 0}, {private_memory, 0}};
    EXPECT_EQ(adsmCallWith(inc.handle(), {4, 1, 1}, {256, 1, 1}, args_a, bad, 2), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("object 1"), std::string::npos) << detail();
    EXPECT_EQ(adsmCallWith(inc.handle(), {4, 1, 1}, {256, 1, 1}, args_a, nullptr, 1), adsmErrorInvalidValue);
    // Another context's object.
    uint32_t *theirs = nullptr;
    adsmContext_t other = nullptr;
    std::thread([&] {
        theirs = static_cast<uint32_t *>(adsmAlloc(64));
        other = adsmGetContext();
    }).join();
    adsmObjectUse foreign[] = {{theirs + 3, 0}};
    EXPECT_EQ(adsmCallWith(inc.handle(), {4, 1, 1}, {256, 1, 1}, args_a, foreign, 1), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("another context"), std::string::npos) << detail();
    // None of that launched or held anything.
    EXPECT_EQ(adsmFree(theirs), adsmSuccess);
    for (size_t i = 0; i < n; ++i) a[i] += 1;
    adsmObjectUse good[] = {{a.data() + 10, 0}};  // any address inside names the object
    ASSERT_EQ(adsmCallWith(inc.handle(), {4, 1, 1}, {256, 1, 1}, args_a, good, 1), adsmSuccess) << detail();
    adsm::sync();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], 3u) << i;
}
