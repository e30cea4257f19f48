// The sim device's memory is physically separate from the host mirror: what
// the runtime did not copy is absent on the device, so a missing transfer
// shows up as a wrong result, never as a lucky pass.
#include <adsm.hpp>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "api/runtime.h"

namespace {

void read_word(const adsm::thread_index &, const uint64_t *in, uint64_t *out) { *out = *in; }
void write_word(const adsm::thread_index &, uint64_t *p, uint64_t v) { *p = v; }
// Through a pointer stored in shared memory: a call refuses another
// context's object among its arguments, but cannot tell a stored pointer
// from data.
void read_stored(const adsm::thread_index &, uint64_t *const *where, uint64_t *out) { *out = **where; }
void write_stored(const adsm::thread_index &, uint64_t *const *where, uint64_t v) { **where = v; }

}  // namespace

TEST(SeparationTest, DataNeverReleasedIsInvisibleToKernels) {
    // The main thread's context owns `data`; a kernel launched from another
    // context (reaching it through a stored pointer) does not release it,
    // so the device still holds what the device memory held before (zeros),
    // not what the CPU wrote.
    auto *data = static_cast<uint64_t *>(adsmAlloc(4096));
    ASSERT_NE(data, nullptr);
    *data = 0x1234567890abcdefull;
    uint64_t seen = 1;
    std::thread([&] {
        adsm::kernel<read_stored> k("separation.read_stored");
        adsm::shared_array<uint64_t *> where(1);
        where[0] = data;
        adsm::shared_array<uint64_t> out(1);
        out[0] = 99;
        k(1, 1, where.data(), out.data());
        adsm::sync();
        seen = out[0];
    }).join();
    EXPECT_EQ(seen, 0u) << "the kernel saw CPU data that was never released";
    EXPECT_EQ(*data, 0x1234567890abcdefull);

    // Once its own context releases it, a kernel sees it.
    adsm::kernel<read_word> k("separation.read_word");
    adsm::shared_array<uint64_t> out(1);
    k(1, 1, data, out.data());
    adsm::sync();
    EXPECT_EQ(out[0], 0x1234567890abcdefull);
    adsmFree(data);
}

TEST(SeparationTest, DeviceWritesAreInvisibleUntilAcquired) {
    // A kernel launched from another context writes the object (through a
    // stored pointer); the owner's CPU copy does not change, because the
    // owner never acquired it.
    auto *data = static_cast<uint64_t *>(adsmAlloc(4096));
    ASSERT_NE(data, nullptr);
    *data = 7;
    std::thread([&] {
        adsm::kernel<write_stored> k("separation.write_stored");
        adsm::shared_array<uint64_t *> where(1);
        where[0] = data;
        k(1, 1, where.data(), uint64_t(8));
        adsm::sync();
    }).join();
    EXPECT_EQ(*data, 7u);
    adsmFree(data);
}

TEST(SeparationTest, TheDeviceIsAnotherProcessWithItsOwnMemory) {
    adsm::Runtime *rt = nullptr;
    ASSERT_EQ(adsm::runtime(&rt), adsmSuccess);
    ASSERT_STREQ(rt->device->name(), "sim");
    auto *x = static_cast<uint64_t *>(adsmAlloc(4096));
    *x = 5;
    // Written through the device's DMA path only: the host mirror keeps its value.
    uint64_t v = 6;
    ASSERT_EQ(rt->device->copy_to_device(reinterpret_cast<uintptr_t>(x), &v, sizeof v), adsmSuccess);
    EXPECT_EQ(*x, 5u);
    uint64_t back = 0;
    ASSERT_EQ(rt->device->copy_to_host(&back, reinterpret_cast<uintptr_t>(x), sizeof back), adsmSuccess);
    EXPECT_EQ(back, 6u);
    adsmFree(x);
}

// As on a GPU, kernels find nothing where no device memory is committed: a
// stray one fails at the sync instead of making pages past ADSM_SIM_MEMORY.
TEST(SeparationTest, AKernelFaultsWhereNoDeviceMemoryIsCommitted) {
    adsm::kernel<write_word> k("separation.write_word");
    auto *gone = static_cast<uint64_t *>(adsmAlloc(1 << 20));
    ASSERT_NE(gone, nullptr);
    k(1, 1, gone + 1000, uint64_t(1));
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    ASSERT_EQ(adsmFree(gone), adsmSuccess);
    k(1, 1, gone + 1000, uint64_t(2));
    EXPECT_EQ(adsmSync(), adsmErrorLaunchFailure);
    std::string d = adsmGetLastErrorDetail();
    EXPECT_NE(d.find("separation.write_word"), std::string::npos) << d;
    EXPECT_NE(d.find("SIGSEGV"), std::string::npos) << d;
    // The device goes on, and what is allocated now is there.
    adsm::shared_array<uint64_t> fresh(512);
    k(1, 1, fresh.data() + 511, uint64_t(3));
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    EXPECT_EQ(fresh[511], 3u);
}

// A fill of zeros gives whole pages back and writes the ends: a range that
// starts and ends inside pages comes out zero everywhere, its neighbours
// untouched, though the device memory held other bytes before.
TEST(SeparationTest, AZeroFillOfARaggedRangeZeroesItAll) {
    adsm::Runtime *rt = nullptr;
    ASSERT_EQ(adsm::runtime(&rt), adsmSuccess);
    const size_t span = 512 * 1024;
    auto *x = static_cast<uint8_t *>(adsmAlloc(span));
    ASSERT_NE(x, nullptr);
    const uintptr_t dev = reinterpret_cast<uintptr_t>(x);
    std::vector<uint8_t> dirt(span, 0xab), back(span, 0);
    ASSERT_EQ(rt->device->copy_to_device(dev, dirt.data(), span), adsmSuccess);
    const size_t from = 1000, len = 300007;  // (ends inside a page)
    ASSERT_EQ(rt->device->fill(dev + from, 0, len), adsmSuccess) << adsmGetLastErrorDetail();
    ASSERT_EQ(rt->device->copy_to_host(back.data(), dev, span), adsmSuccess);
    for (size_t i = 0; i < span; ++i)
        ASSERT_EQ(back[i], i >= from && i < from + len ? 0 : 0xab) << "byte " << i;
    adsmFree(x);
}
