// The cuda back-end on a real NVIDIA GPU, with kernels nvcc compiled
// (tests/examples/cuda_kernels.cu).  Not part of ctest: machines without a
// GPU cannot run it.  scripts/gpu-check runs it in every protocol, and the
// fault test alone in its own process (a faulting kernel ends the context).
#include <adsm.hpp>
#include <adsm_gc_kernel.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fork_check.h"

namespace {

struct list_node {
    list_node *next;
    long long value;
};

std::string detail() { return adsmGetLastErrorDetail(); }

adsm::module &kernels() {
    static adsm::module m(getenv("GPU_TESTS_FATBIN") ? getenv("GPU_TESTS_FATBIN") : "cuda_kernels.fatbin");
    return m;
}

TEST(Gpu, IsACudaDevice) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    EXPECT_STREQ(info.name, "cuda");
    EXPECT_GT(info.memory_bytes, 1ull << 30);
}

TEST(Gpu, ScaleRoundsWithCpuWritesBetween) {
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    unsigned n = 1u << 22;
    adsm::shared_array<float> x(n);
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
    for (int r = 0; r < 4; ++r) {
        scale(adsm::blocks_for(n, 256), adsm::dim3(256), x.data(), 2.0f, n);
        adsm::sync();
        x[r * 1000] = 7.0f;  // a sparse CPU write between kernels
    }
    for (unsigned i = 0; i < n; ++i) {
        float want = static_cast<float>(i % 1000) * 16.0f;
        if (i < 4000 && i % 1000 == 0) want = 7.0f * static_cast<float>(1 << (3 - i / 1000));
        ASSERT_EQ(x[i], want) << "at " << i;
    }
}

TEST(Gpu, KernelsFollowPointersTheCpuBuilt) {
    auto sum = kernels().kernel<const list_node *, long long *>("sum_list");
    unsigned count = 50000;
    adsm::shared_array<list_node> nodes(count);
    adsm::shared_array<long long> out(1);
    long long want = 0;
    for (unsigned i = 0; i < count; ++i) {
        unsigned at = (i * 7919u) % count;
        nodes[at].value = i * 3 + 1;
        nodes[at].next = i + 1 < count ? &nodes[((i + 1) * 7919u) % count] : nullptr;
        want += i * 3 + 1;
    }
    out[0] = 0;
    sum(adsm::dim3(1), adsm::dim3(1), &nodes[0], out.data());
    adsm::sync();
    EXPECT_EQ(out[0], want);
}

// What the CPU writes at i before add_one, and what it reads there after.
static float written_at(size_t i) { return static_cast<float>(i & 0xffff); }
static float added_at(size_t i) { return written_at(i) + 1.0f; }

// The CPU writes every element of v, a kernel adds one to each, and the
// sync brings them back.
static void write_then_add_one(adsm::shared_array<float> &v, size_t n) {
    auto add_one = kernels().kernel<float *, size_t>("add_one");
    for (size_t i = 0; i < n; ++i) v[i] = written_at(i);
    add_one(adsm::dim3(1024), adsm::dim3(256), v.data(), n);
    adsm::sync();
}

TEST(Gpu, LargeArrayRoundTrip) {
    size_t n = (256u << 20) / sizeof(float);
    adsm::shared_array<float> v(n);
    write_then_add_one(v, n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], added_at(i)) << "at " << i;
}

// A prefetch to the host returns once its copies are queued; a read
// meanwhile waits for its block, and the sync waits for every copy to land.
TEST(Gpu, APrefetchToTheHostLandsInTheBackground) {
    size_t n = (64u << 20) / sizeof(float);
    adsm::shared_array<float> v(n);
    write_then_add_one(v, n);
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    ASSERT_EQ(adsmPrefetch(v.data(), n * sizeof(float), ADSM_HOST), adsmSuccess) << detail();
    const auto t1 = clock::now();
    EXPECT_EQ(v[n - 1], added_at(n - 1)) << "a read while the copies are on their way";
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    const auto t2 = clock::now();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], added_at(i)) << "at " << i;
    auto us = [](clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
    printf("prefetch of 64 MiB to the host: %.0f us to return, %.0f us until the sync saw it land\n", us(t1 - t0),
           us(t2 - t0));
}

TEST(Gpu, ThreadsWithTheirOwnContexts) {
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    std::vector<int> ok(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
          try {
            unsigned n = 1u << 20;
            adsm::shared_array<float> x(n);
            for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(t + 1);
            for (int r = 0; r < 5; ++r) {
                scale(adsm::blocks_for(n, 256), adsm::dim3(256), x.data(), 2.0f, n);
                adsm::sync();
            }
            bool good = true;
            for (unsigned i = 0; i < n; ++i) good &= x[i] == 32.0f * static_cast<float>(t + 1);
            ok[t] = good;
          } catch (const adsm::error &e) {
            fprintf(stderr, "thread %d: %s\n", t, e.what());
          }
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

TEST(Gpu, DeviceMemoryAndCopies) {
    void *d = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&d, 8 << 20), adsmSuccess) << detail();
    std::vector<unsigned char> in(8 << 20), out(8 << 20);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13);
    ASSERT_EQ(adsmCopyToDevice(d, in.data(), in.size()), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, out.size()), adsmSuccess) << detail();
    EXPECT_EQ(in, out);
    ASSERT_EQ(adsmDeviceMemset(d, 0x3c, 4096), adsmSuccess) << detail();
    ASSERT_EQ(adsmCopyToHost(out.data(), d, 8192), adsmSuccess) << detail();
    EXPECT_EQ(out[4095], 0x3c);
    EXPECT_EQ(out[4096], in[4096]);
    adsmDeviceFree(d);
}

// More than the GPU holds: the object waits on the host, the CPU uses it,
// and a kernel call that needs it fails without losing a byte.
TEST(Gpu, MoreThanTheGpuHoldsWaitsOnTheHost) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    size_t bytes = info.memory_bytes + (4ull << 30);
    auto *big = static_cast<unsigned char *>(adsmAlloc(bytes));
    ASSERT_NE(big, nullptr) << detail();
    big[0] = 11, big[bytes / 2] = 22, big[bytes - 1] = 33;
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    adsm::shared_array<float> x(1024);
    for (unsigned i = 0; i < 1024; ++i) x[i] = 1.0f;
    // The whole context is released: the call needs the big object too.
    float *xp = x.data(), two = 2.0f;
    unsigned n = 1024;
    void *args[] = {&xp, &two, &n};
    EXPECT_EQ(adsmCall(scale.handle(), {4, 1, 1}, {256, 1, 1}, args), adsmErrorMemoryAllocation);
    EXPECT_NE(detail().find("memory"), std::string::npos) << detail();
    EXPECT_EQ(big[0], 11);
    EXPECT_EQ(big[bytes / 2], 22);
    EXPECT_EQ(big[bytes - 1], 33);
    EXPECT_EQ(adsmFree(big), adsmSuccess);
    // Without it the same call runs.
    scale(adsm::dim3(4), adsm::dim3(256), x.data(), 2.0f, 1024u);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(x[0], 2.0f);
    EXPECT_EQ(x[1023], 2.0f);
}

// Objects half again what is left of the GPU, each named by its own call:
// every call evicts another to its host copy and brings its own back, and
// no byte is lost on the way (a host copy once went with its granules).
TEST(Gpu, EvictedObjectsKeepEveryByte) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    const size_t room = 1ull << 30, each = 384ull << 20;
    void *filler = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&filler, info.memory_bytes - info.memory_used - room), adsmSuccess) << detail();
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    unsigned n = static_cast<unsigned>(each / sizeof(float));
    std::vector<float *> objs;
    for (int k = 0; k < 4; ++k) {
        auto *p = static_cast<float *>(adsmAlloc(each));
        ASSERT_NE(p, nullptr) << detail();
        for (unsigned i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000 + k);
        objs.push_back(p);
    }
    for (int round = 0; round < 3; ++round)
        for (float *p : objs) {
            float two = 2.0f;
            void *args[] = {&p, &two, &n};
            adsmObjectUse use = {p, 0};
            ASSERT_EQ(adsmCallWith(scale.handle(), {(n + 255) / 256, 1, 1}, {256, 1, 1}, args, &use, 1), adsmSuccess)
                << detail();
            ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        }
    for (int k = 0; k < 4; ++k)
        for (unsigned i = 0; i < n; i += 4099)
            ASSERT_EQ(objs[k][i], 8.0f * static_cast<float>(i % 1000 + k)) << "object " << k << " at " << i;
    for (float *p : objs) EXPECT_EQ(adsmFree(p), adsmSuccess);
    EXPECT_EQ(adsmDeviceFree(filler), adsmSuccess);
}

TEST(Gpu, SpillFailRefusesWhatTheGpuCannotHold) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    adsmAllocAttr attr = {};
    attr.spill = ADSM_SPILL_FAIL;
    void *p = adsmAllocEx(info.memory_bytes + (4ull << 30), &attr);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation) << detail();
    void *q = adsmAlloc(64 << 20);
    EXPECT_NE(q, nullptr) << detail();
    adsmFree(q);
}

TEST(Gpu, HostFunctionsAreRefused) {
    auto k = [](const adsmThreadIdx *, void **) {};
    adsmKernel_t h;
    ASSERT_EQ(adsmRegisterKernel("host_fn", k, 0, nullptr, &h), adsmSuccess);
    EXPECT_EQ(adsmCall(h, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorNotSupported);
    EXPECT_NE(detail().find("adsmLoadModule"), std::string::npos) << detail();
}

// Two GPUs of one process (ADSM_DEVICE=cuda,cuda; scripts/gpu-check runs
// these where the machine has two): an object follows its context from one
// GPU to the other, its granules handed over with what they hold, and one
// kept on the second GPU is reached from the first over the peer link.
TEST(GpuPair, AnObjectMovesToTheOtherGpuAndIsReachedFromIt) {
    int n = 0;
    ASSERT_EQ(adsmGetDeviceCount(&n), adsmSuccess);
    ASSERT_EQ(n, 2) << "run with ADSM_DEVICE=cuda,cuda on a machine with two GPUs";
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    std::thread([&] {
        unsigned len = 3u << 20;
        auto *x = static_cast<float *>(adsmAlloc(len * sizeof(float)));
        ASSERT_NE(x, nullptr) << detail();
        for (unsigned i = 0; i < len; ++i) x[i] = static_cast<float>(i % 4096);
        scale(adsm::dim3((len + 255) / 256), adsm::dim3(256), x, 2.0f, len);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        ASSERT_EQ(adsmSetDevice(1), adsmSuccess) << detail();
        scale(adsm::dim3((len + 255) / 256), adsm::dim3(256), x, 2.0f, len);
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        for (unsigned i = 0; i < len; i += 997) ASSERT_EQ(x[i], 4.0f * static_cast<float>(i % 4096)) << i;
        adsmAllocAttr attr = {};
        attr.place = ADSM_PLACE_PREFERRED_DEVICE;
        attr.device = 1;
        ASSERT_EQ(adsmSetDevice(0), adsmSuccess) << detail();
        auto *y = static_cast<float *>(adsmAllocEx(len * sizeof(float), &attr));
        if (!y) {
            EXPECT_EQ(adsmGetLastError(), adsmErrorNotSupported) << detail();
            EXPECT_NE(detail().find("no peer link"), std::string::npos) << detail();
        } else {
            for (unsigned i = 0; i < len; ++i) y[i] = 1.0f;
            scale(adsm::dim3((len + 255) / 256), adsm::dim3(256), y, 3.0f, len);
            ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
            EXPECT_EQ(y[len - 1], 3.0f);
            adsmFree(y);
        }
        adsmFree(x);
    }).join();
}

// A fork child cannot use its parent's GPU: what a kernel wrote, and only
// the GPU held, comes to the host before the fork (the fault path of the
// child calls nothing on the GPU); the parent goes on using the GPU.
TEST(Gpu, AForkChildGetsWhatOnlyTheGpuHeld) {
    auto scale = kernels().kernel<float *, float, unsigned>("scale");
    adsm::shared_array<float> x(1u << 21);
    fork_child_reads_what_only_the_device_held(scale, x.data(), 1u << 21, 256);
}

// The device side of a collected kernel heap (adsm_gc_kernel.h compiled by
// nvcc): every GPU thread links nodes it allocated; after the sync they are
// ordinary collected objects that survive a collection.
TEST(Gpu, KernelsAllocateFromACollectedHeap) {
    auto alloc_lists = kernels().kernel<adsmGcKernelHeap *, list_node **, unsigned>("alloc_lists");
    const unsigned threads = 4096, per = 50;
    auto **heads = static_cast<list_node **>(adsmGcAlloc(threads * sizeof(list_node *)));
    ASSERT_NE(heads, nullptr) << detail();
    adsmGcKernelHeap *heap = nullptr;
    ASSERT_EQ(adsmGcKernelHeapCreate(16 << 20, nullptr, &heap), adsmSuccess) << detail();
    alloc_lists(adsm::dim3(threads / 128), adsm::dim3(128), heap, heads, per);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    ASSERT_EQ(adsmGcKernelHeapCheck(heap), adsmSuccess) << detail();
    adsmGcCollect();
    adsmGcCollect();
    long long count = 0, sum = 0;
    for (unsigned i = 0; i < threads; ++i)
        for (const list_node *m = heads[i]; m; m = m->next) ++count, sum += m->value;
    EXPECT_EQ(count, static_cast<long long>(threads) * per);
    EXPECT_EQ(sum, static_cast<long long>(threads) * per * (per - 1) / 2);
}

// Run alone: the context is gone afterwards.
TEST(GpuFault, IllegalAddressIsALaunchFailureThenDeviceLost) {
    auto store = kernels().kernel<int *>("store_through");
    adsm::shared_array<int> x(16);
    x[0] = 5;
    store(adsm::dim3(1), adsm::dim3(32), reinterpret_cast<int *>(uintptr_t{16}));
    EXPECT_EQ(adsmSync(), adsmErrorLaunchFailure);
    EXPECT_NE(detail().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << detail();
    EXPECT_NE(detail().find("store_through"), std::string::npos) << detail();
    void *args[] = {&x};
    EXPECT_EQ(adsmCall(store.handle(), {1, 1, 1}, {1, 1, 1}, args), adsmErrorDeviceLost);
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
}

}  // namespace
