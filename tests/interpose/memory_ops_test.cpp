#include <string>
#include <vector>

#include "helpers.h"

using namespace interpose_test;

TEST(MemoryOpsTest, LargeMemsetOfDeviceDataFillsTheDevice) {
    const size_t n = 4 << 20;
    auto *p = static_cast<uint8_t *>(malloc(n));
    close_on_device(p, n, 1);
    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    // Only the two ragged blocks are fetched (lazy's one block is the object;
    // batch keeps everything on the host).
    std::string proto = info.protocol;
    size_t most = proto == "batch" ? 0 : proto == "lazy" ? n : 2 * info.block_size;
    uint64_t fetched = counter(adsm::Counter::d2h_bytes);
    memset(p + 1000, 0x5a, n - 2000);
    EXPECT_LE(counter(adsm::Counter::d2h_bytes) - fetched, most);
    for (size_t i = 0; i < n; i += 333) ASSERT_EQ(p[i], i < 1000 || i >= n - 1000 ? pattern(i, 1) : 0x5a) << i;
    free(p);
}

TEST(MemoryOpsTest, LargeCopiesInEveryCombination) {
    const size_t n = 2 << 20;
    auto *a = static_cast<uint8_t *>(malloc(n));
    auto *b = static_cast<uint8_t *>(malloc(n));
    std::vector<uint8_t> host(n);
    close_on_device(a, n, 2);
    memcpy(host.data(), a, n);  // out of device-resident shared memory
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], pattern(i, 2));
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<uint8_t>(i ^ 0x33);
    close_on_device(b, n, 0);
    memcpy(b, host.data(), n);  // into shared memory, whole blocks
    memmove(a + 100, b, n - 100);  // shared to shared
    for (size_t i = 0; i < n - 100; ++i) ASSERT_EQ(a[100 + i], static_cast<uint8_t>(i ^ 0x33)) << i;
    memmove(a + 10, a, n - 10);  // overlapping, within one allocation
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(a[110 + i], static_cast<uint8_t>(i ^ 0x33)) << i;
    auto *end = static_cast<uint8_t *>(mempcpy(host.data(), b, n));
    EXPECT_EQ(end, host.data() + n);
    free(a);
    free(b);
}
