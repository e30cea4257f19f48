// A program on ADSM_DEVICE=remote: its shared memory backed by a device
// that adsm-device-server serves on loopback, its kernels (registered by
// name on both sides, from the same library) run there, the protocol
// moving the data.  The server is started here, before the runtime.
#include <adsm.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "remote/server_process.h"

namespace {

remote_test::Server *g_server = nullptr;

std::string detail() { return adsmGetLastErrorDetail(); }

// The server runs GPU code (on a driver's double).
bool serves_gpu() {
    const char *args = getenv("REMOTE_TEST_SERVER_ARGS");
    return args && (strstr(args, "--device cuda") || strstr(args, "--device levelzero"));
}

// Its driver does not say a kernel's parameter sizes (Level Zero, of a
// module that is not SPIR-V).
bool sizes_unknown() {
    const char *args = getenv("REMOTE_TEST_SERVER_ARGS");
    return args && strstr(args, "--device levelzero");
}

adsmKernel_t kernel(const char *name) {
    adsmKernel_t k = nullptr;
    EXPECT_EQ(adsmGetKernel(name, &k), adsmSuccess) << name << ": " << detail();
    return k;
}

adsmError_t add(uint32_t *v, size_t n, uint32_t k) {
    void *args[] = {&v, &n, &k};
    return adsmCall(kernel("remote.add"), {static_cast<unsigned>((n + 255) / 256), 1, 1}, {256, 1, 1}, args);
}

}  // namespace

TEST(RemoteClientTest, TheDeviceIsTheServers) {
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    EXPECT_STREQ(info.name, "remote");
    EXPECT_FALSE(info.integrated);
    EXPECT_EQ(info.memory_bytes, 256u << 20) << "the server's --memory";
}

TEST(RemoteClientTest, KernelsSeeWhatTheCpuWroteAndTheCpuSeesWhatTheyWrote) {
    const size_t n = 1 << 20;
    auto *v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    for (uint32_t round = 1; round <= 3; ++round) {
        ASSERT_EQ(add(v, n, 10), adsmSuccess) << detail();
        ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
        for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], i + 10 * round + (round - 1)) << i << " round " << round;
        for (size_t i = 0; i < n; i += 2) v[i] += 1;  // half the pages written between calls
        for (size_t i = 1; i < n; i += 2) v[i] += 1;
    }
    EXPECT_EQ(adsmFree(v), adsmSuccess);
}

TEST(RemoteClientTest, SeveralObjectsAndCallsBeforeOneSync) {
    // Pointers the CPU keeps inside shared memory are the kernels' too.
    auto **table = static_cast<uint32_t **>(adsmAlloc(4 * sizeof(uint32_t *)));
    ASSERT_NE(table, nullptr);
    std::vector<uint32_t *> parts(4);
    for (int p = 0; p < 4; ++p) {
        parts[p] = static_cast<uint32_t *>(adsmAlloc(1000 * sizeof(uint32_t)));
        ASSERT_NE(parts[p], nullptr);
        for (int i = 0; i < 1000; ++i) parts[p][i] = static_cast<uint32_t>(p * 1000 + i);
        table[p] = parts[p];
    }
    std::vector<uint32_t *> taken(table, table + 4);  // read before the first call releases the table
    for (int p = 0; p < 4; ++p) ASSERT_EQ(add(taken[p], 1000, static_cast<uint32_t>(p + 1)), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (int p = 0; p < 4; ++p)
        for (int i = 0; i < 1000; i += 97) ASSERT_EQ(parts[p][i], static_cast<uint32_t>(p * 1000 + i + p + 1));
    for (auto *q : parts) adsmFree(q);
    adsmFree(table);
}

TEST(RemoteClientTest, KernelErrorsAreReportedAndTheDeviceGoesOn) {
    EXPECT_EQ(adsmCall(kernel("remote.crash"), {1, 1, 1}, {1, 1, 1}, nullptr), adsmSuccess) << detail();
    EXPECT_EQ(adsmSync(), adsmErrorLaunchFailure);
    EXPECT_NE(detail().find("remote.crash"), std::string::npos) << detail();
    // A kernel only this program has: the server says it has none.
    adsmKernel_t mine;
    ASSERT_EQ(adsmRegisterKernel("remote.only_here", [](const adsmThreadIdx *, void **) {}, 0, nullptr, &mine),
              adsmSuccess);
    EXPECT_EQ(adsmCall(mine, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorKernelNotFound);
    EXPECT_TRUE(detail().find("--kernels") != std::string::npos || detail().find("--modules") != std::string::npos)
        << detail();
    auto *v = static_cast<uint32_t *>(adsmAlloc(4096));
    if (serves_gpu()) {
        // A faulting kernel ends a CUDA context for good: the client's
        // device is lost, as a cuda device of its own would be.
        EXPECT_EQ(v, nullptr);
        EXPECT_EQ(adsmGetLastError(), adsmErrorDeviceLost) << detail();
        return;
    }
    ASSERT_NE(v, nullptr) << detail();
    v[0] = 1;
    ASSERT_EQ(add(v, 1, 2), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(v[0], 3u);
    adsmFree(v);
}

// GPU code of the program's own: loaded on a server that runs it (cuda,
// levelzero),
// refused with a clear error by one that runs host functions (sim, cpu).
TEST(RemoteClientTest, ModulesOfTheProgramsOwnRunWhereTheServerRunsGpuCode) {
    // The driver double's module format: the kernel by its symbol in the server.
    const char image[] = "fake-module:remote.add=remote_add:8,8,4";
    adsmModule_t m;
    adsmError_t e = adsmLoadModuleData(image, sizeof image, &m);
    if (!serves_gpu()) {
        EXPECT_EQ(e, adsmErrorNotSupported);
        EXPECT_NE(detail().find("--device cuda"), std::string::npos) << detail();
        return;
    }
    ASSERT_EQ(e, adsmSuccess) << detail();
    adsmKernel_t k;
    const size_t sizes[] = {8, 8, 4}, wrong[] = {8, 8, 8};
    // The program states the sizes where the server's driver does not say
    // them; where it does, a statement must agree.
    auto get = [&](adsmModule_t from, const char *name, adsmKernel_t *out) {
        return sizes_unknown() ? adsmModuleGetKernelWithParams(from, name, 3, sizes, out)
                               : adsmModuleGetKernel(from, name, out);
    };
    if (sizes_unknown()) {
        EXPECT_EQ(adsmModuleGetKernel(m, "remote.add", &k), adsmErrorInvalidValue);
        EXPECT_NE(detail().find("adsmModuleGetKernelWithParams"), std::string::npos) << detail();
    }
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "remote.add", 2, sizes, &k), adsmErrorInvalidValue);
    ASSERT_EQ(adsmModuleGetKernelWithParams(m, "remote.add", 3, sizes, &k), adsmSuccess) << detail();
    // (Wrong where the driver knows the sizes; where it does not, the server
    // holds the first statement and refuses another.)
    EXPECT_EQ(adsmModuleGetKernelWithParams(m, "remote.add", 3, wrong, &k), adsmErrorInvalidValue);
    ASSERT_EQ(get(m, "remote.add", &k), adsmSuccess) << detail();
    EXPECT_EQ(get(m, "remote.absent", &k), adsmErrorKernelNotFound) << detail();
    ASSERT_EQ(get(m, "remote.add", &k), adsmSuccess) << detail();
    // An image the device cannot load is an error the program hears, and
    // the device goes on.
    const char junk[] = "not a module";
    adsmModule_t bad;
    EXPECT_EQ(adsmLoadModuleData(junk, sizeof junk, &bad), adsmErrorInvalidValue);
    ASSERT_EQ(get(m, "remote.add", &k), adsmSuccess) << detail();
    const size_t n = 100000;
    auto *v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    uint32_t add = 9;
    void *args[] = {&v, const_cast<size_t *>(&n), &add};
    ASSERT_EQ(adsmCall(k, {static_cast<unsigned>((n + 255) / 256), 1, 1}, {256, 1, 1}, args), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (size_t i = 0; i < n; i += 97) ASSERT_EQ(v[i], i + 9) << i;
    adsmFree(v);
}

// A kernel longer than ADSM_REMOTE_TIMEOUT (2 s here) runs to its end: the
// server's heartbeats keep the client's sync waiting.
TEST(RemoteClientHeartbeat, AKernelLongerThanTheTimeoutRunsToItsEnd) {
    auto *done = static_cast<uint32_t *>(adsmAlloc(sizeof(uint32_t)));
    ASSERT_NE(done, nullptr) << detail();
    *done = 0;
    uint32_t ms = 4500;
    void *args[] = {&ms, &done};
    ASSERT_EQ(adsmCall(kernel("remote.nap"), {1, 1, 1}, {1, 1, 1}, args), adsmSuccess) << detail();
    EXPECT_EQ(adsmSync(), adsmSuccess) << detail();
    EXPECT_EQ(*done, 1u);
    adsmFree(done);
}

// Last in its process: it stops the server, which keeps its connection
// open and says nothing (a machine cut off without a word).  The sync fails
// within the timeout instead of waiting for an answer that never comes.
TEST(RemoteClientHeartbeat, ZSilentServerIsALostDeviceNotAHang) {
    const size_t n = 1 << 16;
    auto *kept = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    auto *done = static_cast<uint32_t *>(adsmAlloc(sizeof(uint32_t)));
    ASSERT_TRUE(kept && done);
    for (size_t i = 0; i < n; ++i) kept[i] = static_cast<uint32_t>(i * 5);
    *done = 0;
    uint32_t ms = 20000;
    void *args[] = {&ms, &done};
    adsmObjectUse uses[] = {{done, 0}};
    ASSERT_EQ(adsmCallWith(kernel("remote.nap"), {1, 1, 1}, {1, 1, 1}, args, uses, 1), adsmSuccess) << detail();
    g_server->stop();
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost) << detail();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
    EXPECT_NE(detail().find("heartbeat"), std::string::npos) << detail();
    for (size_t i = 0; i < n; i += 7) ASSERT_EQ(kept[i], i * 5) << "the CPU's copy stays readable";
    g_server->kill_now();
}

// Alone in its process: the server falls silent before a release sends
// 128 MiB, so the transfer (and the flush after it) never completes.  The
// call or its sync fails within the timeout; the CPU's copy stays.
TEST(RemoteClientMidTransfer, ASilentServerDuringATransferIsALostDevice) {
    const size_t n = size_t{32} << 20;
    auto *kept = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(kept, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) kept[i] = static_cast<uint32_t>(i * 7);
    g_server->stop();
    auto t0 = std::chrono::steady_clock::now();
    adsmError_t e = add(kept, n, 1);
    if (e == adsmSuccess) e = adsmSync();
    EXPECT_EQ(e, adsmErrorDeviceLost) << detail();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(kept[i], static_cast<uint32_t>(i * 7)) << "the CPU's copy stays";
    g_server->kill_now();
}

// A launch of a kernel and shape the server took before is not waited for
// (remote_device.h): one the server refuses after all (here the GPU
// driver's second cuLaunchKernel fails: remote.client.cuda.refused_launch)
// is reported by the stream's next sync, and the device goes on.
TEST(RemoteClientRefusedLaunch, ARefusalOfALaunchNotWaitedForComesWithTheSync) {
    const size_t n = 4096;
    auto *v = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    ASSERT_NE(v, nullptr) << detail();
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i);
    ASSERT_EQ(add(v, n, 1), adsmSuccess) << detail();
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    ASSERT_EQ(add(v, n, 10), adsmSuccess) << "a launch the server took before is not waited for: " << detail();
    EXPECT_NE(adsmSync(), adsmSuccess);
    EXPECT_NE(detail().find("refused a launch"), std::string::npos) << detail();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i + 1) << "the refused kernel did not run";
    ASSERT_EQ(add(v, n, 100), adsmSuccess) << detail();
    EXPECT_EQ(adsmSync(), adsmSuccess) << detail();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i + 101);
    EXPECT_EQ(adsmFree(v), adsmSuccess);
}

// Last: it kills the server.  A sync while the server is gone fails within
// the timeout, and what the CPU held stays readable.
TEST(RemoteClientTest, ZKilledServerIsALostDeviceNotAHang) {
    const size_t n = 1 << 16;
    auto *kept = static_cast<uint32_t *>(adsmAlloc(n * sizeof(uint32_t)));
    auto *done = static_cast<uint32_t *>(adsmAlloc(sizeof(uint32_t)));
    ASSERT_TRUE(kept && done);
    for (size_t i = 0; i < n; ++i) kept[i] = static_cast<uint32_t>(i * 3);
    ASSERT_EQ(add(kept, n, 1), adsmSuccess);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(kept[i], i * 3 + 1);  // back on the host, all of it
    *done = 0;
    uint32_t ms = 20000;
    void *args[] = {&ms, &done};
    adsmObjectUse uses[] = {{done, 0}};
    ASSERT_EQ(adsmCallWith(kernel("remote.nap"), {1, 1, 1}, {1, 1, 1}, args, uses, 1), adsmSuccess) << detail();
    g_server->kill_now();
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost) << detail();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
    for (size_t i = 0; i < n; i += 7) ASSERT_EQ(kept[i], i * 3 + 1) << "the CPU's copy stays readable";
    EXPECT_EQ(add(kept, n, 1), adsmErrorDeviceLost) << "and the device stays lost";
}

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    std::string key = remote_test::write_key("the client test's shared key, long enough\n", 0600);
    std::vector<std::string> args{"--key", key, "--address", "127.0.0.1", "--port", "0", "--memory", "256M",
                                  "--kernels", ADSM_REMOTE_TEST_KERNELS};
    // The server's device (--device cpu, or cuda on the driver's double
    // with --modules) and what only the server's process gets (the
    // double's kernels, preloaded for it to find by name).
    if (const char *more = getenv("REMOTE_TEST_SERVER_ARGS"))
        for (const char *p = more; *p;) {
            size_t n = strcspn(p, " ");
            if (n) args.emplace_back(p, n);
            p += n + (p[n] == ' ');
        }
    std::vector<std::string> env;
    if (const char *preload = getenv("REMOTE_TEST_SERVER_PRELOAD")) env.push_back(std::string("LD_PRELOAD=") + preload);
    remote_test::Server server(args, env);
    if (server.first_line().find("listening") == std::string::npos) {
        fprintf(stderr, "the device server did not start: %s\n", server.log().c_str());
        return 1;
    }
    g_server = &server;
    setenv("ADSM_DEVICE", "remote", 1);
    setenv("ADSM_REMOTE", ("127.0.0.1:" + server.port()).c_str(), 1);
    setenv("ADSM_REMOTE_KEY", key.c_str(), 1);
    setenv("ADSM_REMOTE_TIMEOUT", "2", 1);
    // The kernels the server has, under the same names here (its
    // constructor registers them, starting the runtime: after the setenv).
    if (!dlopen(ADSM_REMOTE_TEST_KERNELS, RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int r = RUN_ALL_TESTS();
    unlink(key.c_str());
    return r;
}
