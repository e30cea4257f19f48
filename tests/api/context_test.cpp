#include <thread>

#include "counters.h"
#include "test_kernels.h"

using namespace adsm_test;

TEST(ContextTest, EachThreadHasItsOwn) {
    adsmContext_t mine = adsmGetContext();
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(adsmGetContext(), mine);
    adsmContext_t other = nullptr;
    std::thread([&] { other = adsmGetContext(); }).join();
    EXPECT_NE(other, nullptr);
    EXPECT_NE(other, mine);
}

TEST(ContextTest, ThreadsShareAContextByBindingToIt) {
    auto inc = adsm_test::device_kernel<increment>("context.increment");
    const size_t n = 10000;
    adsm::shared_array<uint32_t> v(n);
    for (auto &x : v) x = 5;
    adsmContext_t owner = adsmGetContext();
    // A worker launches on the main thread's objects: it binds to the
    // context that owns them, so its call releases them.
    std::thread([&] {
        adsm::context_scope scope(owner);
        inc(adsm::blocks_for(n, 256), 256, v.data(), n);
        adsm::sync();
    }).join();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 6u);
    // The worker's sync acquired the objects: the owner can free them.
    EXPECT_NO_THROW(v.free());
}

TEST(ContextTest, StaleAndMadeUpHandlesAreRefused) {
    adsmContext_t gone = nullptr;
    std::thread([&] { gone = adsmGetContext(); }).join();
    // The thread owned no memory, so its context ended with it.
    EXPECT_EQ(adsmSetContext(gone), adsmErrorInvalidContext);
    EXPECT_EQ(adsmSetContext(reinterpret_cast<adsmContext_t>(uintptr_t(0xdead0000beef))), adsmErrorInvalidContext);
    adsmContext_t before = adsmGetContext();
    EXPECT_EQ(adsmGetContext(), before) << "a refused bind changes nothing";
}

TEST(ContextTest, AContextOutlivesItsThreadWhileItOwnsMemory) {
    adsmContext_t ctx = nullptr;
    uint32_t *v = nullptr;
    std::thread([&] {
        ctx = adsmGetContext();
        v = static_cast<uint32_t *>(adsmAlloc(64 * sizeof(uint32_t)));
        for (int i = 0; i < 64; ++i) v[i] = 1;
    }).join();
    ASSERT_NE(v, nullptr);
    adsmContext_t mine = adsmGetContext();
    ASSERT_EQ(adsmSetContext(ctx), adsmSuccess) << detail();
    auto inc = adsm_test::device_kernel<increment>("context.increment");
    inc(1, 64, v, size_t(64));
    adsm::sync();
    EXPECT_EQ(v[63], 2u);
    EXPECT_EQ(adsmFree(v), adsmSuccess);
    EXPECT_EQ(adsmSetContext(mine), adsmSuccess);
    // Its last region gone and no thread bound: the context is over.
    EXPECT_EQ(adsmSetContext(ctx), adsmErrorInvalidContext);
}

TEST(ContextTest, NullReturnsToTheThreadsOwnContext) {
    adsmContext_t own = adsmGetContext();
    adsmContext_t other = nullptr;
    void *held = nullptr;
    std::thread([&] {
        other = adsmGetContext();
        held = adsmAlloc(10);  // keeps `other` alive after its thread
    }).join();
    ASSERT_EQ(adsmSetContext(other), adsmSuccess);
    EXPECT_EQ(adsmGetContext(), other);
    ASSERT_EQ(adsmSetContext(nullptr), adsmSuccess);
    EXPECT_EQ(adsmGetContext(), own);
    EXPECT_EQ(adsmFree(held), adsmSuccess);
}

// A thread that ends with calls unsynced leaves its objects with the device,
// and no thread is left to sync them: its end waits for the kernels and
// brings the objects back, so that the CPU reading them later is no race
// (which ADSM_ON_RACE=abort would turn into an abort).
TEST(ContextTest, AThreadThatEndsWithoutSyncingGivesItsObjectsBack) {
    auto inc = adsm_test::device_kernel<increment>("context.increment");
    const size_t n = 4096;
    uint32_t *v = nullptr;
    std::thread([&] {
        v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
        if (!v) return;
        for (size_t i = 0; i < n; ++i) v[i] = 1;
        inc(adsm::blocks_for(n, 256), 256, v, n);
    }).join();
    ASSERT_NE(v, nullptr) << detail();
    const uint64_t races = counter(adsm::Counter::race_faults);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 2u) << i;
    EXPECT_EQ(counter(adsm::Counter::race_faults), races) << "reading what the ended thread's kernel wrote was a race";
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}

// A kernel given another context's object in its arguments: this
// context's release would not move it, so the kernel would read the
// device's old copy of what the CPU wrote, and its sync would not bring
// back what the kernel wrote.  Refused on a device with memory of its own,
// nothing moved; bound to the owner's context, the same call works.
TEST(ContextTest, AKernelGivenAnotherContextsObjectIsRefusedWhereItsCopyWouldBeStale) {
    auto inc = adsm_test::device_kernel<increment>("context.increment");
    const size_t n = 4096;
    adsmContext_t theirs = nullptr;
    uint32_t *v = nullptr;
    std::thread([&] {
        theirs = adsmGetContext();
        v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    }).join();
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) v[i] = 1;
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    size_t count = n;
    void *args[] = {&v, &count};
    const adsmError_t e = adsmCall(inc.handle(), adsmDim3{n / 256, 1, 1}, adsmDim3{256, 1, 1}, args);
    if (info.integrated) {
        EXPECT_EQ(e, adsmSuccess) << detail();
        EXPECT_EQ(adsmSync(), adsmSuccess) << detail();
        EXPECT_EQ(v[n - 1], 2u) << "one copy: the kernel's write is the CPU's";
    } else {
        EXPECT_EQ(e, adsmErrorInvalidPointer);
        EXPECT_NE(detail().find("another context"), std::string::npos) << detail();
        EXPECT_EQ(adsmSync(), adsmSuccess) << detail();
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 1u) << "nothing ran, nothing moved";
        adsmContext_t mine = adsmGetContext();
        ASSERT_EQ(adsmSetContext(theirs), adsmSuccess) << detail();
        inc(adsm::blocks_for(n, 256), 256, v, n);
        adsm::sync();
        EXPECT_EQ(adsmSetContext(mine), adsmSuccess);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 2u) << i;
    }
    EXPECT_EQ(adsmFree(v), adsmSuccess) << detail();
}
