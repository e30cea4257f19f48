// The levelzero back-end against the loader double (doubles/fake_ze.c, a
// discrete device whose kernels run in a process that sees only device
// memory): the window, device memory, staged copies, modules, launches and
// errors.  Run once per protocol; tests that end the device run in their
// own process.
#include <adsm.hpp>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <level_zero/ze_api.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "device_tests.h"
#include "support/stats.h"

namespace {

using device_test::load_module;

template <class T>
T double_fn(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) ADD_FAILURE() << "the loader double does not export " << name << " (is libze_loader.so.1 the double?)";
    return reinterpret_cast<T>(p);
}
size_t device_bytes() { return double_fn<size_t (*)()>("fake_ze_device_bytes")(); }
long unstaged_copies() { return double_fn<long (*)()>("fake_ze_unstaged_copies")(); }
bool reserved_by_driver(const void *p) { return double_fn<int (*)(const void *)>("fake_ze_is_reserved")(p) != 0; }

// Level Zero does not size a kernel's parameters: they are stated.
adsmKernel_t scale_kernel(adsmModule_t m) {
    const size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    adsmKernel_t k = nullptr;
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "scale", 3, sizes, &k), adsmSuccess) << adsmGetLastErrorDetail();
    return k;
}

std::string detail() { return adsmGetLastErrorDetail(); }
std::string device_info_protocol() {
    adsmDeviceInfo info{};
    EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    return info.protocol;
}

TEST(LevelZeroDevice, ReportsItself) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    EXPECT_STREQ(info.name, "levelzero");
    EXPECT_EQ(info.integrated, 0);
    EXPECT_EQ(info.memory_bytes, 256ull << 20);  // FAKE_ZE_MEMORY, as the tests set it
}

TEST(LevelZeroDevice, WindowIsReservedByTheDriver) {
    device_test::window_is_reserved_by_the_driver(reserved_by_driver);
}

TEST(LevelZeroDevice, KernelsComputeOnDeviceMemory) {
    adsmKernel_t scale = scale_kernel(load_module());
    ASSERT_NE(scale, nullptr);
    unsigned n = (20u << 20) / sizeof(float) + 7;  // staged in several chunks, the last one short
    float *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
    long unstaged = unstaged_copies();
    for (int round = 0; round < 3; ++round) {
        float f = 2.0f;
        void *args[] = {&x, &f, &n};
        ASSERT_EQ(adsmCall(scale, {(n + 255) / 256, 1, 1}, {256, 1, 1}, args), adsmSuccess) << detail();
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        // The CPU changes a few values between rounds: they must travel.
        x[round] = -1.0f;
    }
    for (unsigned i = 3; i < n; ++i) ASSERT_EQ(x[i], 8.0f * static_cast<float>(i % 1000)) << "at " << i;
    EXPECT_EQ(x[0], -4.0f);  // written after the first round, scaled by the next two
    EXPECT_EQ(x[1], -2.0f);
    EXPECT_EQ(x[2], -1.0f);
    EXPECT_EQ(unstaged_copies(), unstaged) << "a copy used host memory that is not the driver's pinned memory";
    EXPECT_EQ(adsmFree(x), adsmSuccess);
}

// Rolling sends the blocks the CPU has finished writing while it goes on,
// delta brings back the blocks it learned the CPU reads after a call: both
// through the asynchronous copies, whose every byte is checked here.
TEST(LevelZeroDevice, AsynchronousCopiesCarryEveryByte) {
    adsm::module::function<float *, float, unsigned> scale(load_module(), "scale");
    const unsigned n = (24u << 20) / sizeof(float);
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    uint64_t async_before = adsm::stats().get(adsm::Counter::async_copies);
    for (int round = 0; round < 4; ++round) {
        for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>((i + round) % 977);
        scale(adsm::blocks_for(n, 256), adsm::dim3(256), x, 2.0f, n);
        adsm::sync();
        for (unsigned i = 0; i < n; ++i) ASSERT_EQ(x[i], 2.0f * static_cast<float>((i + round) % 977)) << round << " " << i;
    }
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    std::string p = info.protocol;
    if (p == "rolling" || p == "delta") {
        EXPECT_GT(adsm::stats().get(adsm::Counter::async_copies), async_before) << p << " copied nothing asynchronously";
    }
    adsmFree(x);
}

TEST(LevelZeroDevice, EmbeddedPointersWorkInKernels) {
    device_test::embedded_pointers_work_in_kernels();
}

// Level Zero counts a kernel's parameters but does not size them: the
// program states the sizes, and a count that disagrees is refused.
TEST(LevelZeroDevice, ParameterSizesAreStatedAndTheirCountChecked) {
    adsmModule_t m = load_module();
    adsmKernel_t k;
    EXPECT_EQ(adsmModuleGetKernel(m, "scale", &k), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("adsmModuleGetKernelWithParams"), std::string::npos) << detail();
    const size_t two[] = {8, 4};
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "scale", 2, two, &k), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("has 3 parameters, 2 declared"), std::string::npos) << detail();
    const size_t zero[] = {8, 0, 4};
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "scale", 3, zero, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "scale", 3, nullptr, &k), adsmErrorInvalidValue);
    k = scale_kernel(m);
    ASSERT_NE(k, nullptr);
    unsigned int count = 0;
    size_t got[3] = {};
    ASSERT_EQ(adsmGetKernelParams(k, &count, got, 3), adsmSuccess);
    EXPECT_EQ(count, 3u);
    EXPECT_EQ(got[1], sizeof(float));
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorInvalidValue);  // scale takes 3 arguments
}

#ifdef ADSM_SPIRV_MODULE
// A SPIR-V module says its kernels' parameter sizes, which the driver does
// not: adsmModuleGetKernel needs no stated sizes, and stated ones that
// disagree are refused.  (The double runs the module's kernels as the host
// functions of the same names, tests/examples/gpu_kernels_host.c.)
TEST(LevelZeroDevice, SpirvModulesSayTheirKernelsParameterSizes) {
    adsmModule_t m = nullptr;
    ASSERT_EQ(adsmLoadModule(ADSM_SPIRV_MODULE, &m), adsmSuccess) << detail();
    adsmKernel_t scale;
    ASSERT_EQ(adsmModuleGetKernel(m, "scale", &scale), adsmSuccess) << detail();
    unsigned int count = 0;
    size_t got[3] = {};
    ASSERT_EQ(adsmGetKernelParams(scale, &count, got, 3), adsmSuccess);
    EXPECT_EQ(count, 3u);
    EXPECT_EQ(got[0], 8u);
    EXPECT_EQ(got[1], 4u);
    EXPECT_EQ(got[2], 4u);
    const size_t wrong[] = {8, 8, 4};
    adsmKernel_t k;
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "scale", 3, wrong, &k), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("parameter 1 has 4 bytes, 8 declared"), std::string::npos) << detail();
    unsigned n = 4096;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    float f = 0.5f;
    void *args[] = {&x, &f, &n};
    ASSERT_EQ(adsmCall(scale, {n / 128, 1, 1}, {128, 1, 1}, args), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.5f * static_cast<float>(i)) << i;
    adsmFree(x);
}
#endif

TEST(LevelZeroDevice, TheFaultHandlerMakesNoDriverCalls) {
    device_test::fault_handler_makes_no_driver_calls(
        double_fn<void (*)(void (*)(const char *))>("fake_ze_set_entry_hook"));
}

TEST(LevelZeroDevice, GranulesAreSharedAndReleased) {
    device_test::granules_are_shared_and_released(device_bytes);
}

TEST(LevelZeroDevice, ExhaustedDeviceMemoryIsAnErrorAndLeavesNothingMapped) {
    size_t before = device_bytes();
    void *d = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&d, 512ull << 20), adsmErrorMemoryAllocation);  // twice the device's memory
    EXPECT_NE(detail().find("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos) << detail();
    EXPECT_EQ(d, nullptr);
    EXPECT_EQ(device_bytes(), before) << "a failed allocation left device memory mapped";
    // Shared memory past the device waits on the host; a call that needs
    // it all fails the same way and loses nothing.
    const unsigned n = (512u << 20) / sizeof(float);
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    x[0] = 2.0f;
    adsm::module::function<float *, float, unsigned> scale(load_module(), "scale");
    try {
        scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 3.0f, n);
        ADD_FAILURE() << "a call that cannot fit ran";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorMemoryAllocation) << e.what();
    }
    EXPECT_EQ(device_bytes(), before);
    EXPECT_EQ(x[0], 2.0f) << "the refused call lost nothing";
    EXPECT_EQ(adsmFree(x), adsmSuccess);
    void *q = adsmAlloc(1 << 20);
    EXPECT_NE(q, nullptr) << detail();
    adsmFree(q);
}

TEST(LevelZeroDevice, DeviceMemoryCopiesAndFills) {
    void *d = nullptr;
    const size_t n = (9u << 20) + 4093;  // past both staging halves, and a granule boundary
    ASSERT_EQ(adsmDeviceAlloc(&d, n), adsmSuccess) << detail();
    std::vector<uint8_t> in(n), out(n);
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 7 + i / 4096);
    ASSERT_EQ(adsmCopyToDevice(d, in.data(), n), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, n), adsmSuccess) << detail();
    EXPECT_TRUE(in == out) << "the round trip changed bytes";
    ASSERT_EQ(adsmDeviceMemset(static_cast<char *>(d) + (2u << 20) - 100, 0x5c, 200), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, n), adsmSuccess) << detail();
    EXPECT_EQ(out[(2u << 20) - 101], in[(2u << 20) - 101]);
    EXPECT_EQ(out[(2u << 20) - 100], 0x5c);
    EXPECT_EQ(out[(2u << 20) + 99], 0x5c);
    EXPECT_EQ(out[(2u << 20) + 100], in[(2u << 20) + 100]);
    adsmDeviceFree(d);
}

// A piece of a staged copy that the device refuses after an earlier piece
// went in: the half is still closed by its barrier (else the next transfer
// could refill staging memory the queued piece still reads), the failure is
// this copy's alone, and the device goes on.
TEST(LevelZeroDevice, ARefusedCopyAppendIsClosedByItsBarrierAndTheDeviceGoesOn) {
    const size_t n = 2u << 20;
    void *whole = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&whole, 2 * n), adsmSuccess) << detail();
    void *d = static_cast<char *>(whole) + n / 2;  // one staged chunk, in a piece on each granule
    std::vector<uint8_t> in(n), out(n);
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 13 + i / 4096);
    auto refuse = double_fn<void (*)(int, ze_result_t)>("fake_ze_fail_copy_append");
    auto barriers = [] { return double_fn<long (*)(const char *)>("fake_ze_calls")("zeCommandListAppendBarrier"); };
    const long before = barriers();
    refuse(2, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    EXPECT_NE(adsmCopyToDevice(d, in.data(), n), adsmSuccess);
    EXPECT_NE(detail().find("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos) << detail();
    EXPECT_EQ(barriers() - before, 1) << "the half with a queued piece was not closed by its barrier";
    ASSERT_EQ(adsmCopyToDevice(d, in.data(), n), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, n), adsmSuccess) << detail();
    EXPECT_TRUE(in == out) << "the round trip after a refused append changed bytes";
    adsmDeviceFree(whole);
}

// A CPU access racing a kernel waits for it in the fault handler (the
// default ADSM_ON_RACE=sync).  The faulting thread waits itself; a helper
// only asks whether the kernel is done: two helpers serve every faulting
// thread of the process, and one held by a long kernel would stall them.
TEST(LevelZeroDevice, ARacingAccessWaitsForTheKernelWithoutHoldingAHelper) {
    auto *open = static_cast<int *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(open, MAP_FAILED);
    adsm::module::function<int *> gate(load_module(), "gate");
    auto *v = static_cast<uint64_t *>(adsmAlloc(4096));
    ASSERT_NE(v, nullptr) << detail();
    *v = 7;
    auto races = [] { return adsm::stats().get(adsm::Counter::race_faults); };
    const uint64_t races_before = races();
    gate(adsm::dim3(1), adsm::dim3(1), open);
    std::atomic<bool> read{false};
    int blocked = -1;
    std::thread opener([&] {
        for (int i = 0; i < 5000 && !read.load() && races() == races_before; ++i) usleep(1000);
        if (!read.load()) usleep(300 * 1000);  // the fault handler waits meanwhile
        blocked = double_fn<int (*)()>("fake_ze_blocking_waits")();
        *open = 1;
    });
    const uint64_t seen = *v;  // a race: between the call and the sync
    read.store(true);
    opener.join();
    EXPECT_EQ(seen, 7u);
    if (races() > races_before) EXPECT_EQ(blocked, 0) << "threads waited in the driver for the kernel";
    else EXPECT_EQ(std::string(device_info_protocol()), "batch") << "only batch cannot see the access";
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    adsmFree(v);
    munmap(open, 4096);
}

TEST(LevelZeroDevice, CallocIsZeroOnTheDevice) {
    device_test::calloc_is_zero_on_the_device();
}

TEST(LevelZeroDevice, AWaitForATicketNeverIssuedReturns) {
    device_test::a_wait_for_a_ticket_never_issued_returns();
}

TEST(LevelZeroDevice, ContextsOnThreadsRunTogether) {
    device_test::contexts_on_threads_run_together();
}

TEST(LevelZeroDevice, HostFunctionKernelsAreRefused) {
    device_test::host_function_kernels_are_refused("ze_host_scale", "SPIR-V");
}

TEST(LevelZeroDevice, BadModulesAndNamesAreClearErrors) {
    adsmModule_t m = nullptr;
    const unsigned char junk[] = {0x7f, 'E', 'L', 'F', 0, 1, 2};
    EXPECT_EQ(adsmLoadModuleData(junk, sizeof junk, &m), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"), std::string::npos) << detail();
    EXPECT_NE(detail().find("not of the double's format"), std::string::npos) << "the build log: " << detail();
    EXPECT_EQ(adsmLoadModule("/nonexistent/kernels.spv", &m), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("/nonexistent/kernels.spv"), std::string::npos) << detail();
    m = load_module();
    const size_t sizes[] = {8};
    adsmKernel_t k;
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "no_such_kernel", 1, sizes, &k), adsmErrorKernelNotFound);
    EXPECT_NE(detail().find("no_such_kernel"), std::string::npos) << detail();
}

// ---- two GPUs of one context (ADSM_DEVICE=levelzero,levelzero on the
// double with FAKE_ZE_DEVICES=2; run alone, levelzero.device.two_gpus)

size_t double_bytes_on(int gpu) { return double_fn<size_t (*)(int)>("fake_ze_device_bytes_on")(gpu); }

TEST(LevelZeroTwoGpus, ObjectsOfTwoGpusLieGranulesApart) {
    device_test::objects_of_two_gpus_lie_granules_apart(double_bytes_on);
}

TEST(LevelZeroTwoGpus, AContextMovesWithItsObjectsAndItsKernelsRunOnEither) {
    device_test::scale_on_one_gpu_then_the_other(double_bytes_on);
}

// Without a peer link the hand-over goes through the host.  Run with
// FAKE_ZE_NO_PEER=1.
TEST(LevelZeroTwoGpusNoPeer, APreferredDeviceIsRefusedAndObjectsStillMove) {
    device_test::a_preferred_device_is_refused_without_a_peer_link();
    device_test::scale_on_one_gpu_then_the_other(double_bytes_on);
}

// Ends the device: run alone (--gtest_filter), after the others.
TEST(LevelZeroDeviceFault, FaultingKernelIsALaunchFailureThenTheDeviceIsLost) {
    device_test::faulting_kernel_is_a_launch_failure_then_the_device_is_lost("ZE_RESULT_ERROR_DEVICE_LOST");
}

// Ends the device: run alone.  (The copy runs on the copy engine, beside
// the kernel: it meets the fault once the kernel has faulted.)
TEST(LevelZeroDeviceCopyFault, ACopyThatMeetsAKernelsFaultLosesTheDevice) {
    device_test::a_copy_that_meets_a_kernels_fault_loses_the_device(
        "ZE_RESULT_ERROR_DEVICE_LOST",
        [] {
            auto lost = double_fn<int (*)()>("fake_ze_lost");
            for (int i = 0; i < 500 && !lost(); ++i) usleep(10000);
        },
        [] { return double_fn<long (*)(const char *)>("fake_ze_calls")("zeCommandListAppendMemoryCopy"); });
}

// The host mapped ADSM_VA_BASE before the runtime started: the driver
// reserves elsewhere and the window follows it.  Run alone.
TEST(LevelZeroDeviceMoved, WindowFollowsTheDriverWhenTheBaseIsTaken) {
    device_test::window_follows_the_driver_when_the_base_is_taken(reserved_by_driver);
}

// The dynamic loader finds a libze_loader.so.1 that is no library (a broken
// install): the runtime says so and stays usable as an error.  Run alone,
// with that file first on LD_LIBRARY_PATH.  (The loader without a GPU
// driver, as on CI machines, is config_env's case.)
TEST(LevelZeroNoDriver, MissingLoaderIsAClearNoDeviceError) {
    void *p = adsmAlloc(4096);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorNoDevice);
    EXPECT_NE(detail().find("libze_loader.so.1 cannot be loaded"), std::string::npos) << detail();
    adsmModule_t m;
    EXPECT_EQ(adsmLoadModule("/dev/null", &m), adsmErrorNoDevice);
    EXPECT_EQ(adsmSync(), adsmErrorNoDevice);
}

}  // namespace

TEST(LevelZeroDeviceStart, AFailedStartLeavesNoThreadBehind) { device_test::a_failed_start_leaves_no_thread_behind(); }
// The driver's double, as the start-failure probe uses it.
const device_test::DriverDouble kDouble = {
    "libze_loader.so.1",
    "fake_ze",
    "FAKE_ZE_FAIL",
    "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
    "zeCommandListAppendLaunchKernel",
    "FAKE_ZE_GRANULE",
    {"contexts", "command lists", "event pools", "events", "host allocations", "reservations", "device bytes"}};

ADSM_DRIVER_FAILURE_TESTS(LevelZeroDeviceStart, kDouble)
