// The cuda back-end against the driver double (doubles/fake_cuda.c, a
// discrete device whose kernels run in a process that sees only device
// memory): the window, device memory, copies, modules, launches and errors.
// Run once per protocol; tests that end the device run in their own process.
#include <adsm.hpp>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "device_tests.h"
#include "fork_check.h"
#include "support/stats.h"

namespace {

using device_test::load_module;

template <class T>
T double_fn(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) ADD_FAILURE() << "the driver double does not export " << name << " (is libcuda.so.1 the double?)";
    return reinterpret_cast<T>(p);
}
size_t device_bytes() { return double_fn<size_t (*)()>("fake_cuda_device_bytes")(); }
long pinned_bytes() { return double_fn<long (*)()>("fake_cuda_pinned_bytes")(); }
long pinned_made_bytes() { return double_fn<long (*)()>("fake_cuda_pinned_made_bytes")(); }
long registrations() { return double_fn<long (*)()>("fake_cuda_registrations")(); }
long pageable_copies() { return double_fn<long (*)()>("fake_cuda_pageable_copies")(); }
bool reserved_by_driver(const void *p) { return double_fn<int (*)(const void *)>("fake_cuda_is_reserved")(p) != 0; }

std::string detail() { return adsmGetLastErrorDetail(); }
adsmDeviceInfo device_info() {
    adsmDeviceInfo info{};
    EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    return info;
}

TEST(CudaDevice, ReportsItself) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    EXPECT_STREQ(info.name, "cuda");
    EXPECT_EQ(info.integrated, 0);
    EXPECT_EQ(info.memory_bytes, 256ull << 20);  // FAKE_CUDA_MEMORY, as the tests set it
}

TEST(CudaDevice, WindowIsReservedByTheDriver) {
    device_test::window_is_reserved_by_the_driver(reserved_by_driver);
}

TEST(CudaDevice, KernelsComputeOnDeviceMemory) {
    adsmModule_t m = load_module();
    adsmKernel_t scale;
    ASSERT_EQ(adsmModuleGetKernel(m, "scale", &scale), adsmSuccess) << detail();
    unsigned n = 1 << 20;
    float *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    for (int round = 0; round < 3; ++round) {
        float f = 2.0f;
        void *args[] = {&x, &f, &n};
        ASSERT_EQ(adsmCall(scale, {(n + 255) / 256, 1, 1}, {256, 1, 1}, args), adsmSuccess) << detail();
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        // The CPU changes a few values between rounds: they must travel.
        x[round] = -1.0f;
    }
    for (unsigned i = 3; i < n; ++i) ASSERT_EQ(x[i], 8.0f * static_cast<float>(i)) << "at " << i;
    EXPECT_EQ(x[0], -4.0f);  // written after the first round, scaled by the next two
    EXPECT_EQ(x[1], -2.0f);
    EXPECT_EQ(x[2], -1.0f);
    EXPECT_EQ(adsmFree(x), adsmSuccess);
}

TEST(CudaDevice, EmbeddedPointersWorkInKernels) {
    device_test::embedded_pointers_work_in_kernels();
}

TEST(CudaDevice, TypedModuleKernelsCheckTheirParameters) {
    adsmModule_t m = load_module();
    try {
        adsm::module::function<float *, double, unsigned> wrong(m, "scale");
        FAIL() << "a double where the kernel takes a float was accepted";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorInvalidValue);
        EXPECT_NE(std::string(e.what()).find("parameter 1 has 4 bytes, 8 declared"), std::string::npos) << e.what();
    }
}

TEST(CudaDevice, GranulesAreSharedAndReleased) {
    device_test::granules_are_shared_and_released(device_bytes);
}

bool eager_pinning() { return getenv("ADSM_CUDA_PIN") && std::string(getenv("ADSM_CUDA_PIN")) == "eager"; }

// Lazy pinning (the default) pins an object's host mirror when the CPU
// first faults on it, or a granule at its first copy, and leaves memory
// that neither touches unpinned; eager pins every granule when it is
// backed.  Either way the pins go with the memory.
TEST(CudaDevice, MirrorsArePinnedAtFirstUse) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    std::string p = info.protocol;
    const long granule = 2 << 20, before = pinned_bytes();
    auto *x = static_cast<float *>(adsmAlloc(4 * granule));  // 4 or 5 granules
    auto *y = static_cast<float *>(adsmAlloc(4 * granule));
    ASSERT_TRUE(x && y) << detail();
    if (eager_pinning()) EXPECT_GE(pinned_bytes() - before, 8 * granule);
    else EXPECT_EQ(pinned_bytes(), before) << "lazy pinning pinned memory nothing used";
    x[0] = 1.0f;  // the CPU's first touch of x
    long touched = pinned_bytes() - before;
    bool first_touch_faults = p != "batch" && std::string(info.dirty_tracking) == "mprotect";
    if (eager_pinning())
        EXPECT_GE(touched, 8 * granule);
    else if (first_touch_faults && p == "lazy")  // its block is the whole object
        EXPECT_TRUE(touched >= 4 * granule && touched <= 5 * granule) << "x alone: " << touched;
    else if (first_touch_faults)  // x's pages in the granules of the block the fault opened
        EXPECT_TRUE(touched > 0 && touched <= 2 * granule) << "x's first block alone: " << touched;
    else
        EXPECT_EQ(touched, 0) << "nothing told the first touch, yet memory was pinned";
    for (unsigned i = 0; i < 1024; ++i) x[i] = 1.0f;
    // y: the kernel's output, which the CPU never reads.
    scale(adsm::dim3(8), adsm::dim3(128), y, 3.0f, 1024u);
    scale(adsm::dim3(8), adsm::dim3(128), x, 3.0f, 1024u);
    adsm::sync();
    EXPECT_EQ(x[1023], 3.0f);
    long pinned = pinned_bytes() - before;
    if (eager_pinning() || p == "batch")  // batch brings every byte back
        EXPECT_GE(pinned, 8 * granule);
    else
        EXPECT_LE(pinned, 6 * granule) << p << ": the mirror of y, which nothing copied, was pinned";
    adsmFree(x);
    adsmFree(y);
    EXPECT_EQ(pinned_bytes(), before) << "freed memory stayed pinned";
}

// A big object of which the CPU touches the two ends (a grid's halo rows):
// only the granules around those ends are pinned where the protocol opens
// blocks, not the whole mirror.
TEST(CudaDevice, OnlyThePartsOfAMirrorTheCpuTouchesArePinned) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    std::string p = info.protocol;
    const size_t granule = 2 << 20;
    const unsigned n = 8 * granule / sizeof(float);
    const long before = pinned_bytes();
    auto *g = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_TRUE(g) << detail();
    g[0] = 1.0f;
    g[n - 1] = 2.0f;
    long pinned = pinned_bytes() - before;
    bool faults = p != "batch" && std::string(info.dirty_tracking) == "mprotect";
    if (eager_pinning() || (faults && p == "lazy"))  // lazy's block is the whole object
        EXPECT_GE(pinned, static_cast<long>(8 * granule));
    else if (faults)
        EXPECT_LE(pinned, static_cast<long>(4 * granule)) << p << ": the untouched middle of the mirror was pinned";
    else
        EXPECT_EQ(pinned, 0) << "nothing told the first touch, yet memory was pinned";
    // Whatever is pinned, the data is whole on both sides.
    for (unsigned i = 1; i + 1 < n; i += 4096) g[i] = static_cast<float>(i);
    scale(adsm::dim3(n / 128), adsm::dim3(128), g, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(g[0], 2.0f);
    EXPECT_EQ(g[n - 1], 4.0f);
    EXPECT_EQ(g[4097], 2 * 4097.0f);
    EXPECT_EQ(g[2], 0.0f);
    adsmFree(g);
    EXPECT_EQ(pinned_bytes(), before) << "freed memory stayed pinned";
}

long minor_faults() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

// A kernel's output the CPU never touched, then updates: the first write
// fault opens a block and enters the pages pinning made into the view in
// one call, so writing the rest of the block takes no fault per page.
// (Entered before the block opened, they could not be: the closed block
// refuses them.  Reads would hide the difference: the kernel maps 16 pages
// around a read fault, none around a write fault.)
TEST(CudaDevice, TheFirstWriteAfterAKernelEntersItsBlockInOneCall) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    const adsmDeviceInfo info = device_info();
    std::string p = info.protocol;
    const unsigned n = (4u << 20) / sizeof(float);
    auto *g = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_TRUE(g) << detail();
    scale(adsm::dim3(n / 128), adsm::dim3(128), g, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    g[0] = 1.0f;  // the fault that opens the first block
    const size_t block = std::min<size_t>(info.block_size, n * sizeof(float));
    const long before = minor_faults();
    for (size_t i = 1024; i < std::max<size_t>(block, 8192) / sizeof(float); i += 1024) g[i] = static_cast<float>(i);
    const long faults = minor_faults() - before;
    // (A block of a few pages has little to save.)
    if (p != "batch" && std::string(info.dirty_tracking) == "mprotect" && !eager_pinning() && block >= (64u << 10)) {
        EXPECT_LT(faults, static_cast<long>(block / 4096 / 4))
            << p << ": writing " << block / 4096 << " pages of an opened block faulted page by page";
    }
    scale(adsm::dim3(n / 128), adsm::dim3(128), g, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(g[0], 2.0f);
    EXPECT_EQ(g[1024], 2 * 1024.0f);
    adsmFree(g);
}

// The first use of an object of many granules: lazy's first fault and
// batch's first copy pin them all, rolling's and delta's the faulting one.
// With ADSM_CUDA_PIN_THREADS above 1 the pages are made by several threads
// before they are pinned (the object's from the first fault on); with 1
// the registration makes them (the double's makes none: they are missing).
TEST(CudaDevice, PagesOfALargeFirstUseAreMadeBeforePinningWithPinThreads) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    const adsmDeviceInfo info = device_info();
    const std::string p = info.protocol;
    const char *t = getenv("ADSM_CUDA_PIN_THREADS");
    // (The default: half the CPUs, at most 8.)
    const unsigned threads = t ? static_cast<unsigned>(atoi(t))
                               : std::clamp(static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)) / 2, 1u, 8u);
    const size_t bytes = 8 * (2u << 20);
    const unsigned n = static_cast<unsigned>(bytes / sizeof(float));
    const long pinned0 = pinned_bytes(), made0 = pinned_made_bytes();
    auto *g = static_cast<float *>(adsmAlloc(bytes));
    ASSERT_TRUE(g) << detail();
    const bool whole = !eager_pinning() && std::string(info.dirty_tracking) != "uffd" && (p == "lazy" || p == "batch");
    if (p == "batch") {
        // No fault: the sync's copy back is the first use.
        scale(adsm::dim3(n / 128), adsm::dim3(128), g, 0.0f, n);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        EXPECT_EQ(g[n / 2], 0.0f);
    }
    g[0] = 1.0f;
    g[n - 1] = 3.0f;
    const long pinned = pinned_bytes() - pinned0, made = pinned_made_bytes() - made0;
    if (whole) {
        EXPECT_GE(pinned, static_cast<long>(bytes)) << p;
    }
    // Rolling and delta pin the granule of each fault: the last one's pages
    // were made ahead at the first.
    if (!eager_pinning() && std::string(info.dirty_tracking) != "uffd" && pinned > 0) {
        if (threads > 1) {
            EXPECT_EQ(made, pinned) << p << ": pages were pinned before they were made";
        } else {
            EXPECT_LT(made, pinned) << p << ": with one thread the registration makes the pages";
        }
    }
    scale(adsm::dim3(n / 128), adsm::dim3(128), g, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(g[0], 2.0f);
    EXPECT_EQ(g[n - 1], 6.0f);
    adsmFree(g);
}

// Pinning makes the pages it covers (about 375 us per MiB on an H100
// host): a small object alone in its 2 MiB granule pins its own pages, not
// the granule's free rest, whether the CPU or a copy uses it first.
TEST(CudaDevice, ASmallObjectPinsItsOwnPagesNotItsGranule) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    const long before = pinned_bytes(), pageable = pageable_copies();
    const unsigned n = 100 * 1024;  // 400 KiB
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = 1.0f;
    scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(x[n - 1], 2.0f);
    long pinned = pinned_bytes() - before;
    EXPECT_GT(pinned, 0) << "the copies went through pageable memory";
    EXPECT_LE(pinned, 512l << 10) << "a 400 KiB object pinned " << pinned << " bytes";
    // A second small object in the same granule is pinned at its first use.
    auto *y = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(y, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) y[i] = 3.0f;
    scale(adsm::blocks_for(n, 128), adsm::dim3(128), y, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(y[0], 6.0f);
    EXPECT_EQ(pageable_copies(), pageable) << "a protocol copy went through pageable memory";
    adsmFree(x);
    adsmFree(y);
    EXPECT_EQ(pinned_bytes(), before) << "freed memory stayed pinned";
}

TEST(CudaDevice, ProtocolCopiesUsePinnedMemory) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    long pageable = pageable_copies();
    unsigned n = 300000;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = 1.0f;
    scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 3.0f, n);
    adsm::sync();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(x[i], 3.0f);
    EXPECT_EQ(pageable_copies(), pageable) << "a protocol copy went through pageable memory";
    adsmFree(x);
}

// Lazy's first fault in an object pins all its granules, in one call to the
// driver (each costs up to about 0.1 ms besides its pages).  Such a registration
// spans the granule the next object shares, and outlives the first object;
// it goes with its last granule.  No object ever copies through pageable
// memory, and nothing stays pinned.  (A granule made again under a living
// registration: GranulesTest, as freed addresses wait before reuse here.)
TEST(CudaDevice, ARegistrationOfManyGranulesOutlivesItsFirstObject) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    const adsmDeviceInfo info = device_info();
    const bool lazy = std::string(info.protocol) == "lazy" && std::string(info.dirty_tracking) == "mprotect" &&
                      !eager_pinning();
    const long pinned0 = pinned_bytes(), pageable0 = pageable_copies();
    const unsigned nx = (7u << 20) / sizeof(float), ny = (3u << 20) / sizeof(float);
    auto *x = static_cast<float *>(adsmAlloc(nx * sizeof(float)));
    auto *y = static_cast<float *>(adsmAlloc(ny * sizeof(float)));
    ASSERT_TRUE(x && y) << detail();
    const long calls0 = registrations();
    for (unsigned i = 0; i < nx; ++i) x[i] = 1.0f;
    if (lazy) {
        EXPECT_EQ(registrations() - calls0, 1) << "one first fault, one registration";
    }
    for (unsigned i = 0; i < ny; ++i) y[i] = 2.0f;
    scale(adsm::blocks_for(nx, 128), adsm::dim3(128), x, 3.0f, nx);
    scale(adsm::blocks_for(ny, 128), adsm::dim3(128), y, 3.0f, ny);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    ASSERT_EQ(x[nx - 1], 3.0f);
    ASSERT_EQ(adsmFree(x), adsmSuccess);
    // y lives on in the granule x shared.
    auto *z = static_cast<float *>(adsmAlloc(nx * sizeof(float)));
    ASSERT_TRUE(z) << detail();
    for (unsigned i = 0; i < nx; ++i) z[i] = static_cast<float>(i % 100);
    scale(adsm::blocks_for(nx, 128), adsm::dim3(128), z, 2.0f, nx);
    scale(adsm::blocks_for(ny, 128), adsm::dim3(128), y, 2.0f, ny);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (unsigned i = 0; i < nx; i += 997) ASSERT_EQ(z[i], 2.0f * static_cast<float>(i % 100)) << i;
    for (unsigned i = 0; i < ny; i += 997) ASSERT_EQ(y[i], 12.0f) << i;
    EXPECT_EQ(pageable_copies(), pageable0) << "a copy went through pageable memory (a registration failed?)";
    adsmFree(z);
    adsmFree(y);
    EXPECT_EQ(pinned_bytes(), pinned0) << "pages stayed pinned after every granule went";
}

// A fork child cannot use its parent's GPU: what a kernel wrote, and only
// the device held, comes to the host before the fork, so the child's copy
// of the object is whole; the parent goes on using the device.
TEST(CudaDevice, AForkChildGetsWhatOnlyTheDeviceHeld) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    const unsigned n = 300000;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    fork_child_reads_what_only_the_device_held(scale, x, n, 128);
    adsmFree(x);
}

// Pinning eagerly, the cuda device enters a new allocation's pinned pages
// into the view at once (saving a fault per page); that must not make them
// look written.
TEST(CudaDevice, MemoryTheCpuNeverWroteIsNotSent) {
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    const unsigned n = 1 << 18;  // 1 MiB written by the CPU
    const size_t untouched = size_t{4} << 20;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    void *out = adsmAlloc(untouched);
    ASSERT_TRUE(x && out) << detail();
    for (unsigned i = 0; i < n; ++i) x[i] = 1.0f;
    uint64_t before = adsm::stats().get(adsm::Counter::h2d_bytes);
    scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 3.0f, n);
    adsm::sync();
    uint64_t sent = adsm::stats().get(adsm::Counter::h2d_bytes) - before;
    if (std::string(info.protocol) == "batch")
        EXPECT_GE(sent, untouched + n * sizeof(float)) << "batch sends every object";
    else
        EXPECT_LT(sent, untouched) << info.protocol << " sent memory the CPU never wrote";
    EXPECT_EQ(x[n - 1], 3.0f);
    adsmFree(out);
    adsmFree(x);
}

TEST(CudaDevice, TheFaultHandlerMakesNoDriverCalls) {
    device_test::fault_handler_makes_no_driver_calls(
        double_fn<void (*)(void (*)(const char *))>("fake_cuda_set_entry_hook"));
}

TEST(CudaDevice, ExhaustedDeviceMemoryIsAnErrorAndLeavesNothingMapped) {
    size_t before = device_bytes();
    void *d = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&d, 512ull << 20), adsmErrorMemoryAllocation);  // twice the device's memory
    EXPECT_NE(detail().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << detail();
    EXPECT_EQ(d, nullptr);
    EXPECT_EQ(device_bytes(), before) << "a failed allocation left device memory mapped";
    // Shared memory past the device lives on the host until a call needs
    // it, and a call whose objects cannot fit fails the same way.
    const unsigned n = (512u << 20) / sizeof(float);
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    EXPECT_EQ(device_bytes(), before);
    x[0] = 2.0f;
    adsmModule_t m = load_module();
    adsm::module::function<float *, float, unsigned> scale(m, "scale");
    try {
        scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 3.0f, n);
        ADD_FAILURE() << "a call that cannot fit ran";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorMemoryAllocation) << e.what();
        EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << e.what();
    }
    EXPECT_EQ(device_bytes(), before);
    EXPECT_EQ(x[0], 2.0f) << "the refused call lost nothing";
    EXPECT_EQ(adsmFree(x), adsmSuccess);
    // The device still works afterwards.
    void *q = adsmAlloc(1 << 20);
    EXPECT_NE(q, nullptr) << detail();
    adsmFree(q);
}

TEST(CudaDevice, DeviceMemoryCopiesAndFills) {
    void *d = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&d, 1 << 20), adsmSuccess) << detail();
    std::vector<uint8_t> in(1 << 20), out(1 << 20);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
    ASSERT_EQ(adsmCopyToDevice(d, in.data(), in.size()), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, out.size()), adsmSuccess) << detail();
    EXPECT_EQ(in, out);
    ASSERT_EQ(adsmDeviceMemset(d, 0x5c, 4096), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, 8192), adsmSuccess) << detail();
    EXPECT_EQ(out[0], 0x5c);
    EXPECT_EQ(out[4095], 0x5c);
    EXPECT_EQ(out[4096], in[4096]);
    adsmDeviceFree(d);
}

TEST(CudaDevice, CallocIsZeroOnTheDevice) {
    device_test::calloc_is_zero_on_the_device();
}

TEST(CudaDevice, AWaitForATicketNeverIssuedReturns) {
    device_test::a_wait_for_a_ticket_never_issued_returns();
}

TEST(CudaDevice, ContextsOnThreadsRunTogether) {
    device_test::contexts_on_threads_run_together();
}

TEST(CudaDevice, HostFunctionKernelsAreRefused) {
    device_test::host_function_kernels_are_refused("host_scale", "adsmLoadModule");
}

TEST(CudaDevice, BadModulesAndNamesAreClearErrors) {
    adsmModule_t m = nullptr;
    const char junk[] = "not a module";
    EXPECT_EQ(adsmLoadModuleData(junk, sizeof junk, &m), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("CUDA_ERROR_INVALID_IMAGE"), std::string::npos) << detail();
    EXPECT_EQ(adsmLoadModule("/nonexistent/kernels.cubin", &m), adsmErrorInvalidValue);
    EXPECT_NE(detail().find("/nonexistent/kernels.cubin"), std::string::npos) << detail();
    EXPECT_EQ(adsmLoadModuleData(nullptr, 0, &m), adsmErrorInvalidValue);
    m = load_module();
    adsmKernel_t k;
    EXPECT_EQ(adsmModuleGetKernel(m, "no_such_kernel", &k), adsmErrorKernelNotFound);
    EXPECT_NE(detail().find("no_such_kernel"), std::string::npos) << detail();
    EXPECT_EQ(adsmModuleGetKernel(reinterpret_cast<adsmModule_t>(uintptr_t{12345}), "scale", &k), adsmErrorInvalidValue);
    ASSERT_EQ(adsmModuleGetKernel(m, "scale", &k), adsmSuccess);
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorInvalidValue);  // scale takes 3 arguments
}

// ---- two GPUs of one address space (ADSM_DEVICE=cuda,cuda on the double
// with FAKE_CUDA_DEVICES=2; run alone, cuda.device.two_gpus)

size_t double_bytes_on(int gpu) { return double_fn<size_t (*)(int)>("fake_cuda_device_bytes_on")(gpu); }

TEST(CudaTwoGpus, ObjectsOfTwoGpusLieGranulesApart) {
    device_test::objects_of_two_gpus_lie_granules_apart(double_bytes_on);
}

TEST(CudaTwoGpus, AContextMovesWithItsObjectsAndItsKernelsRunOnEither) {
    device_test::scale_on_one_gpu_then_the_other(double_bytes_on);
}

// Moving still works without a peer link (the driver stages such copies).
// Run with FAKE_CUDA_NO_PEER=1.
TEST(CudaTwoGpusNoPeer, APreferredDeviceIsRefusedAndObjectsStillMove) {
    device_test::a_preferred_device_is_refused_without_a_peer_link();
    device_test::scale_on_one_gpu_then_the_other(double_bytes_on);
}

// Ends the device: run alone (--gtest_filter), after the others.
TEST(CudaDeviceFault, FaultingKernelIsALaunchFailureThenTheDeviceIsLost) {
    device_test::faulting_kernel_is_a_launch_failure_then_the_device_is_lost("CUDA_ERROR_ILLEGAL_ADDRESS");
}

// Ends the device: run alone.
TEST(CudaDeviceCopyFault, ACopyThatMeetsAKernelsFaultLosesTheDevice) {
    device_test::a_copy_that_meets_a_kernels_fault_loses_the_device(
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        [] {
            // The double's own synchronize returns once the kernel has run.
            auto sync = double_fn<int (*)()>("cuCtxSynchronize");
            for (int i = 0; i < 500 && sync() == 0; ++i) usleep(10000);
        },
        [] {
            return double_fn<long (*)(const char *)>("fake_cuda_calls")("cuMemcpyDtoHAsync_v2") +
                   double_fn<long (*)(const char *)>("fake_cuda_calls")("cuMemcpyDtoH_v2");
        });
}

// The host mapped ADSM_VA_BASE before the runtime started: the driver
// reserves elsewhere and the window follows it.  Run alone.
TEST(CudaDeviceMoved, WindowFollowsTheDriverWhenTheBaseIsTaken) {
    device_test::window_follows_the_driver_when_the_base_is_taken(reserved_by_driver);
}

}  // namespace

namespace {

// The loader finds a libcuda.so.1 that is no library (as on a machine with
// a broken driver install): the runtime says so and stays usable as an
// error.  Run alone, with that file first on LD_LIBRARY_PATH.
TEST(CudaNoDriver, MissingDriverIsAClearNoDeviceError) {
    void *p = adsmAlloc(4096);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorNoDevice);
    std::string why = detail();
    EXPECT_NE(why.find("libcuda.so.1 cannot be loaded"), std::string::npos) << why;
    adsmModule_t m;
    EXPECT_EQ(adsmLoadModule("/dev/null", &m), adsmErrorNoDevice);
    EXPECT_EQ(adsmSync(), adsmErrorNoDevice);
}

}  // namespace

TEST(CudaDeviceStart, AFailedStartLeavesNoThreadBehind) { device_test::a_failed_start_leaves_no_thread_behind(); }
// The driver's double, as the start-failure probe uses it.
const device_test::DriverDouble kDouble = {"libcuda.so.1",
                                           "fake_cuda",
                                           "FAKE_CUDA_FAIL",
                                           "CUDA_ERROR_OUT_OF_MEMORY",
                                           "cuLaunchKernel",
                                           "FAKE_CUDA_GRANULE",
                                           {"contexts", "streams", "events", "reservations", "device bytes", "pinned bytes"}};

ADSM_DRIVER_FAILURE_TESTS(CudaDeviceStart, kDouble)
