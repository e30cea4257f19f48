#include <array>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "test_kernels.h"

using namespace adsm_test;

namespace {
void fill_pattern(uint8_t *p, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(seed + i * 13);
}
bool has_pattern(const uint8_t *p, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != uint8_t(seed + i * 13)) return false;
    return true;
}
}  // namespace

TEST(ErrorsTest, FreeNullDoesNothing) {
    EXPECT_EQ(adsmFree(nullptr), adsmSuccess);
    EXPECT_EQ(adsmDeviceFree(nullptr), adsmSuccess);
}

TEST(ErrorsTest, BadFreesAreRefusedAndCorruptNothing) {
    const size_t n = 12345;
    auto *a = static_cast<uint8_t *>(adsmAlloc(n));
    auto *b = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_TRUE(a && b);
    fill_pattern(a, n, 1);
    fill_pattern(b, n, 2);

    int on_stack = 0;
    void *heap = malloc(64);
    EXPECT_EQ(adsmFree(&on_stack), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("not shared memory"), std::string::npos) << detail();
    EXPECT_EQ(adsmFree(heap), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmFree(reinterpret_cast<void *>(0x10)), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmFree(a + 100), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("100 bytes into"), std::string::npos) << detail();
    EXPECT_EQ(adsmFree(a + n + 10), adsmErrorInvalidPointer) << "past the end, still inside the page";
    free(heap);

    EXPECT_EQ(adsmFree(b), adsmSuccess);
    EXPECT_EQ(adsmFree(b), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("already freed"), std::string::npos) << detail();

    EXPECT_TRUE(has_pattern(a, n, 1)) << "a refused free must not touch live data";
    EXPECT_EQ(adsmGetSize(a), n);
    EXPECT_EQ(adsmFree(a), adsmSuccess);
}

TEST(ErrorsTest, ZeroAndOverflowingSizes) {
    EXPECT_EQ(adsmAlloc(0), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
    EXPECT_EQ(adsmAlloc(SIZE_MAX), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorSizeOverflow);
    EXPECT_EQ(adsmAlloc(SIZE_MAX - 100), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorSizeOverflow);
    EXPECT_EQ(adsmCalloc(SIZE_MAX / 2, 3), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorSizeOverflow);
    EXPECT_EQ(adsmAlloc(size_t(1) << 50), nullptr) << "larger than the whole window";
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation);
    EXPECT_EQ(adsmSafeAlloc(0), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
    void *d = reinterpret_cast<void *>(1);
    EXPECT_EQ(adsmDeviceAlloc(&d, 0), adsmErrorInvalidValue);
    EXPECT_EQ(d, nullptr);
    EXPECT_EQ(adsmDeviceAlloc(nullptr, 10), adsmErrorInvalidValue);
}

TEST(ErrorsTest, ExhaustedDeviceMemoryLeavesNothingBehind) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    const uint64_t used_before = info.memory_used;
    const uint64_t capacity = info.memory_bytes;
    const size_t chunk = size_t(capacity / 6) & ~size_t(4095);
    if (info.integrated) {
        // The device's memory is the host's: past it, allocations fail, and
        // keep nothing.
        std::vector<void *> held;
        adsmError_t last = adsmSuccess;
        for (int i = 0; i < 20 && last == adsmSuccess; ++i) {
            adsmGetDeviceInfo(&info);
            uint64_t used = info.memory_used;
            if (void *p = adsmAlloc(chunk)) {
                held.push_back(p);
                continue;
            }
            last = adsmGetLastError();
            adsmGetDeviceInfo(&info);
            EXPECT_EQ(info.memory_used, used) << "a failed allocation must not keep device memory";
        }
        EXPECT_EQ(last, adsmErrorMemoryAllocation);
        EXPECT_GE(held.size(), 4u);
        EXPECT_LE(held.size(), 6u);
        for (void *p : held) EXPECT_EQ(adsmFree(p), adsmSuccess);
        adsmGetDeviceInfo(&info);
        EXPECT_EQ(info.memory_used, used_before);
        return;
    }
    // Shared memory may exceed the device: what does not fit stays on the
    // host until a call needs it (tests/api/oversubscription_test.cpp).
    std::vector<void *> held;
    for (int i = 0; i < 8; ++i) {
        void *p = adsmAlloc(chunk);
        ASSERT_NE(p, nullptr) << detail();
        held.push_back(p);
        adsmGetDeviceInfo(&info);
        EXPECT_LE(info.memory_used, capacity);
    }
    void *safe = adsmSafeAlloc(chunk);
    ASSERT_NE(safe, nullptr) << "safe allocations too: " << detail();
    held.push_back(safe);
    // Device-only memory has no host copy: it evicts idle shared objects to
    // make room, and fails cleanly when even that is not enough.
    // All but 8 MiB (a GPU maps whole 2 MiB pages, some shared by neighbours).
    void *whole = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&whole, capacity - used_before - (8 << 20)), adsmSuccess) << detail();
    adsmGetDeviceInfo(&info);
    const uint64_t used_full = info.memory_used;
    EXPECT_LE(used_full, capacity);
    void *d = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&d, chunk), adsmErrorMemoryAllocation);
    EXPECT_NE(detail().find("exhausted"), std::string::npos) << detail();
    EXPECT_EQ(d, nullptr);
    adsmGetDeviceInfo(&info);
    EXPECT_EQ(info.memory_used, used_full) << "a failed allocation must not keep device memory";
    EXPECT_EQ(adsmDeviceFree(whole), adsmSuccess);
    for (void *p : held) EXPECT_EQ(adsmFree(p), adsmSuccess);
    adsmGetDeviceInfo(&info);
    EXPECT_EQ(info.memory_used, used_before);
    void *again = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&again, chunk), adsmSuccess) << "memory is usable again after the frees";
    adsmDeviceFree(again);
}

TEST(ErrorsTest, KernelCrashIsReportedAtSyncAndTheProgramGoesOn) {
    auto k = adsm_test::device_kernel<crash>("errors.crash");
    auto inc = adsm_test::device_kernel<increment>("errors.increment");
    adsm::shared_array<uint32_t> marker(32);
    for (auto &m : marker) m = 0;
    ASSERT_EQ(adsmCall(k.handle(), {1, 1, 1}, {32, 1, 1}, std::array<void *, 1>{&marker}.data()), adsmSuccess)
        << "the launch itself is fine; the fault is asynchronous";
    adsmError_t e = adsmSync();
    EXPECT_EQ(e, adsmErrorLaunchFailure);
    std::string d = detail();
    EXPECT_NE(d.find("errors.crash"), std::string::npos) << d;
    EXPECT_NE(d.find("SIGSEGV"), std::string::npos) << d;
    EXPECT_NE(d.find("thread (5,0,0)"), std::string::npos) << d;
    // The error was reported once; the device keeps working.
    EXPECT_EQ(adsmSync(), adsmSuccess);
    for (auto &m : marker) m = 7;
    inc(1, 32, marker.data(), size_t(32));
    adsm::sync();
    for (auto m : marker) EXPECT_EQ(m, 8u);
}

TEST(ErrorsTest, FreeWhileAKernelMayUseItIsBusy) {
    auto inc = adsm_test::device_kernel<increment>("errors.increment");
    auto *v = static_cast<uint32_t *>(adsmAlloc(4096));
    ASSERT_NE(v, nullptr);
    v[0] = 1;
    inc(1, 1, v, size_t(1));
    EXPECT_EQ(adsmFree(v), adsmErrorBusy);
    EXPECT_NE(detail().find("adsmSync"), std::string::npos);
    EXPECT_EQ(adsmMemset(v, 0, 16), adsmErrorBusy);
    // An object allocated after the call is not the kernel's.
    void *fresh = adsmAlloc(100);
    EXPECT_EQ(adsmFree(fresh), adsmSuccess);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    EXPECT_EQ(v[0], 2u);
    EXPECT_EQ(adsmFree(v), adsmSuccess);
}

TEST(ErrorsTest, MemsetAndMemcpyCheckTheirRanges) {
    auto *v = static_cast<uint8_t *>(adsmAlloc(1000));
    char local[64];
    EXPECT_EQ(adsmMemset(v, 1, 1000), adsmSuccess);
    EXPECT_EQ(adsmMemset(v + 10, 1, 991), adsmErrorInvalidValue);
    EXPECT_EQ(adsmMemset(local, 1, 10), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmMemset(nullptr, 1, 10), adsmErrorInvalidValue);
    EXPECT_EQ(adsmMemset(v, 1, 0), adsmSuccess);
    EXPECT_EQ(adsmMemcpy(local, local + 32, 16), adsmErrorInvalidValue) << "neither side is shared";
    EXPECT_EQ(adsmMemcpy(v + 990, local, 20), adsmErrorInvalidValue);
    EXPECT_EQ(adsmMemcpy(nullptr, v, 20), adsmErrorInvalidValue);
    EXPECT_EQ(adsmFree(v), adsmSuccess);
    EXPECT_EQ(adsmMemset(v, 1, 10), adsmErrorInvalidPointer) << "freed memory";
}

TEST(ErrorsTest, ErrorStringsAreDistinct) {
    std::set<std::string> seen;
    for (int e = 0; e <= adsmErrorInvalidDevice; ++e) {
        std::string s = adsmGetErrorString(static_cast<adsmError_t>(e));
        EXPECT_FALSE(s.empty());
        EXPECT_TRUE(seen.insert(s).second) << s;
    }
    EXPECT_STREQ(adsmGetErrorString(static_cast<adsmError_t>(999)), "unknown error");
}

TEST(ErrorsTest, LastErrorIsPerThreadAndResets) {
    EXPECT_EQ(adsmAlloc(0), nullptr);
    EXPECT_EQ(adsmPeekAtLastError(), adsmErrorInvalidValue);
    EXPECT_EQ(adsmPeekAtLastError(), adsmErrorInvalidValue);
    std::thread([] { EXPECT_EQ(adsmPeekAtLastError(), adsmSuccess); }).join();
    EXPECT_EQ(adsmGetLastError(), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGetLastError(), adsmSuccess);
    EXPECT_STREQ(adsmGetLastErrorDetail(), "size is zero") << "the message outlives the reset";
    std::thread([] { EXPECT_STREQ(adsmGetLastErrorDetail(), ""); }).join();
}
