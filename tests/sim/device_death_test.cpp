// A device that dies is reported, never waited for forever, and the host
// program carries on with a new device process.
#include <adsm.hpp>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "api/runtime.h"
#include "backend/sim/sim_device.h"

namespace {

void exit_kernel(const adsm::thread_index &, int code) { exit(code); }
void quick_exit_kernel(const adsm::thread_index &, int code) { _exit(code); }
void abort_kernel(const adsm::thread_index &) { abort(); }
void spin_kernel(const adsm::thread_index &, volatile int *flag) {
    while (*flag == 0) {
    }
}
void increment(const adsm::thread_index &t, uint32_t *v, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) v[i] += 1;
}

adsm::SimDevice *sim() {
    adsm::Runtime *rt = nullptr;
    if (adsm::runtime(&rt) != adsmSuccess) return nullptr;
    return dynamic_cast<adsm::SimDevice *>(rt->device);
}

// One round trip that must work (a fresh device process if need be).
void expect_device_works() {
    adsm::kernel<increment> inc("death.increment");
    adsm::shared_array<uint32_t> v(100);
    for (auto &x : v) x = 1;
    inc(1, 100, v.data(), size_t(100));
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    for (auto x : v) ASSERT_EQ(x, 2u);
}

}  // namespace

TEST(DeviceDeathTest, KernelThatExitsIsReported) {
    expect_device_works();
    adsm::kernel<exit_kernel> k("death.exit");
    k(1, 1, 3);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    std::string d = adsmGetLastErrorDetail();
    EXPECT_NE(d.find("exit()"), std::string::npos) << d;
    expect_device_works();
}

TEST(DeviceDeathTest, KernelThatEndsTheProcessIsNamed) {
    adsm::kernel<quick_exit_kernel> k("death.quick_exit");
    k(1, 1, 0);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    std::string d = adsmGetLastErrorDetail();
    EXPECT_NE(d.find("death.quick_exit"), std::string::npos) << d;
    expect_device_works();
}

TEST(DeviceDeathTest, KernelThatAbortsIsReported) {
    adsm::kernel<abort_kernel> k("death.abort");
    k(1, 1);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    std::string d = adsmGetLastErrorDetail();
    EXPECT_NE(d.find("abort()"), std::string::npos) << d;
    expect_device_works();
}

TEST(DeviceDeathTest, KilledDeviceDoesNotHangTheHost) {
    expect_device_works();
    adsm::SimDevice *dev = sim();
    ASSERT_NE(dev, nullptr);
    pid_t pid = dev->server_pid();
    ASSERT_GT(pid, 0);
    // A kernel that would never end, and a device that gets killed under it.
    adsm::kernel<spin_kernel> k("death.spin");
    adsm::shared_array<int> flag(1);
    flag[0] = 0;
    k(1, 1, flag.data());
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_NE(dev->server_pid(), 0);
    expect_device_works();
    EXPECT_NE(dev->server_pid(), pid) << "a new device process serves the next launch";
}

TEST(DeviceDeathTest, DeviceMemorySurvivesTheDeviceProcess) {
    std::vector<uint32_t> in(1000), out(1000);
    for (size_t i = 0; i < in.size(); ++i) in[i] = uint32_t(i * 7);
    adsm::device_array<uint32_t> d(1000);
    d.copy_from_host(in.data(), in.size());
    adsm::kernel<exit_kernel> k("death.exit");
    k(1, 1, 0);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    d.copy_to_host(out.data(), out.size());
    EXPECT_EQ(in, out);
}

// A new device process maps host-resident memory again before it runs
// anything (else its kernels would work on device memory nobody reads).
TEST(DeviceDeathTest, HostResidentMemoryIsMappedAgainInANewDeviceProcess) {
    adsm::kernel<increment> inc("death.increment");
    adsmAllocAttr host{};
    host.place = ADSM_PLACE_HOST;
    auto *v = static_cast<uint32_t *>(adsmAllocEx(1000 * sizeof(uint32_t), &host));
    ASSERT_NE(v, nullptr) << adsmGetLastErrorDetail();
    for (int i = 0; i < 1000; ++i) v[i] = 10;
    inc(4, 256, v, size_t(1000));
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    adsm::kernel<exit_kernel> k("death.exit");
    k(1, 1, 0);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    inc(4, 256, v, size_t(1000));
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(v[i], 12u) << i;
    EXPECT_EQ(adsmFree(v), adsmSuccess);
}

// A new device process reaches the objects allocated before it started
// (it starts with the window closed and is told what is committed).
TEST(DeviceDeathTest, CommittedMemoryIsReachableInANewDeviceProcess) {
    adsm::kernel<increment> inc("death.increment");
    adsm::shared_array<uint32_t> before(5000);
    for (auto &x : before) x = 1;
    adsm::kernel<exit_kernel> k("death.exit");
    k(1, 1, 0);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    inc(20, 256, before.data(), before.size());
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    for (size_t i = 0; i < before.size(); i += 97) ASSERT_EQ(before[i], 2u) << i;
}

// A wait for a copy ticket the device never issued (one an object brought
// from a device it has left) waits for the copies so far, not for ever.
TEST(DeviceDeathTest, AWaitForATicketNeverIssuedReturns) {
    adsm::kernel<increment> inc("death.increment");
    adsm::shared_array<uint32_t> v(1 << 18);
    for (auto &x : v) x = 1;
    inc(1024, 256, v.data(), v.size());
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    ASSERT_EQ(adsmPrefetch(v.data(), v.size() * sizeof(uint32_t), ADSM_HOST), adsmSuccess) << adsmGetLastErrorDetail();
    adsm::SimDevice *dev = sim();
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ(dev->wait_copies(uint64_t(1) << 40), adsmSuccess) << adsmGetLastErrorDetail();
    for (size_t i = 0; i < v.size(); i += 1021) ASSERT_EQ(v[i], 2u) << i;
}
