#include <numeric>
#include <vector>

#include "test_kernels.h"

using namespace adsm_test;

TEST(DeviceMemoryTest, CopiesRoundTrip) {
    const size_t n = 100000;
    std::vector<uint32_t> in(n), out(n, 0);
    std::iota(in.begin(), in.end(), 1u);
    adsm::device_array<uint32_t> d(n);
    d.copy_from_host(in.data(), n);
    d.copy_to_host(out.data(), n);
    EXPECT_EQ(in, out);
    // Partial copies at an offset.
    std::vector<uint32_t> part(10, 0);
    d.copy_to_host(part.data(), 10, 500);
    EXPECT_EQ(part[0], 501u);
}

TEST(DeviceMemoryTest, KernelsWorkOnDeviceMemory) {
    auto inc = adsm_test::device_kernel<increment>("devmem.increment");
    const size_t n = 5000;
    std::vector<uint32_t> host(n, 41);
    adsm::device_array<uint32_t> d(n);
    d.copy_from_host(host.data(), n);
    inc(adsm::blocks_for(n, 128), 128, d.data(), n);
    // The copy waits for the kernel, as cudaMemcpy does.
    d.copy_to_host(host.data(), n);
    for (auto v : host) ASSERT_EQ(v, 42u);
    adsm::sync();
}

TEST(DeviceMemoryTest, DeviceMemset) {
    adsm::device_array<uint8_t> d(10000);
    ASSERT_EQ(adsmDeviceMemset(d.data(), 0x5a, 10000), adsmSuccess);
    std::vector<uint8_t> host(10000);
    d.copy_to_host(host.data(), 10000);
    for (auto v : host) ASSERT_EQ(v, 0x5a);
}

TEST(DeviceMemoryTest, CopiesBetweenSharedAndDeviceMemory) {
    adsm::shared_array<uint32_t> s(1000);
    for (size_t i = 0; i < 1000; ++i) s[i] = uint32_t(i * 3);
    adsm::device_array<uint32_t> d(1000);
    ASSERT_EQ(adsmCopyToDevice(d.data(), s.data(), 4000), adsmSuccess);
    adsm::shared_array<uint32_t> back(1000);
    ASSERT_EQ(adsmCopyToHost(back.data(), d.data(), 4000), adsmSuccess);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(back[i], uint32_t(i * 3));
}

TEST(DeviceMemoryTest, WrongKindsAndRangesAreRefused) {
    void *d = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&d, 4096), adsmSuccess);
    void *s = adsmAlloc(4096);
    std::vector<char> host(8192);
    EXPECT_EQ(adsmFree(d), adsmErrorInvalidPointer);
    EXPECT_NE(detail().find("adsmDeviceFree"), std::string::npos);
    EXPECT_EQ(adsmDeviceFree(s), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmDeviceFree(static_cast<char *>(d) + 8), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmCopyToDevice(d, host.data(), 8192), adsmErrorInvalidValue) << "past the end";
    EXPECT_EQ(adsmCopyToDevice(host.data(), host.data(), 10), adsmErrorInvalidPointer) << "not device memory";
    EXPECT_EQ(adsmCopyToDevice(s, host.data(), 10), adsmErrorInvalidPointer) << "shared, not device memory";
    EXPECT_EQ(adsmCopyToHost(host.data(), nullptr, 10), adsmErrorInvalidValue);
    EXPECT_EQ(adsmSafe(d), nullptr) << "device memory has no CPU address";
    EXPECT_EQ(adsmDeviceFree(d), adsmSuccess);
    EXPECT_EQ(adsmDeviceFree(d), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmFree(s), adsmSuccess);
}

TEST(DeviceMemoryDeathTest, CpuAccessToDeviceMemoryFollowsTheDeviceKind) {
    void *d = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&d, 4096), adsmSuccess);
    if (is_discrete()) {
        // Discrete: device memory is not the CPU's to touch.
        EXPECT_DEATH(*static_cast<volatile int *>(d) = 1, "");
    } else {
        // Integrated: it is the CPU's own memory.
        *static_cast<volatile int *>(d) = 77;
        int back = 0;
        ASSERT_EQ(adsmCopyToHost(&back, d, sizeof back), adsmSuccess);
        EXPECT_EQ(back, 77);
    }
    adsmDeviceFree(d);
}
