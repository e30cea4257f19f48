// The tests both GPU back-ends pass on their drivers' doubles, each a
// function that the back-end's test file runs under its own name
// (cuda_device_test.cpp, levelzero_device_test.cpp).  Parameter sizes are
// stated, as a Level Zero kernel needs, and checked against the CUDA
// driver's where it reports them.
#pragma once

#include <adsm.hpp>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "api/runtime.h"
#include "backend/device.h"
#include "device_test_kernels.h"
#include "os/fault_signals.h"
#include "start_check.h"
#include "support/stats.h"

namespace device_test {

inline std::string detail() { return adsmGetLastErrorDetail(); }

using Scale = adsm::module::function<float *, float, unsigned>;

inline void window_is_reserved_by_the_driver(bool (*reserved_by_driver)(const void *)) {
    void *p = adsmAlloc(4096);
    ASSERT_NE(p, nullptr) << detail();
    EXPECT_TRUE(reserved_by_driver(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) >> 44, 0x300000000000ull >> 44) << "the window is not at ADSM_VA_BASE";
    adsmFree(p);
}

inline void embedded_pointers_work_in_kernels() {
    adsm::module::function<node *, long *> sum(load_module(), "sum_list");
    const int count = 1000;
    auto *nodes = static_cast<node *>(adsmAlloc(count * sizeof(node)));
    auto *out = static_cast<long *>(adsmAlloc(sizeof(long)));
    ASSERT_TRUE(nodes && out) << detail();
    long want = 0;
    for (int i = 0; i < count; ++i) {
        nodes[i].value = i * 3 + 1;
        nodes[i].next = i + 1 < count ? &nodes[i + 1] : nullptr;
        want += nodes[i].value;
    }
    *out = 0;
    sum(adsm::dim3(1), adsm::dim3(32), nodes, out);
    adsm::sync();
    EXPECT_EQ(*out, want);
    adsmFree(nodes);
    adsmFree(out);
}

// No driver is async-signal-safe: the fault handler has its driver calls
// made by helper threads (gpu/handler_calls.h).  The double tells the hook
// of each entry as it is called, on the calling thread.
inline std::atomic<long> driver_calls_in_handler{0};
inline void note_driver_entry(const char *) {
    if (adsm::os::in_fault_handler()) driver_calls_in_handler.fetch_add(1);
}

inline void fault_handler_makes_no_driver_calls(void (*set_entry_hook)(void (*)(const char *))) {
    Scale scale(load_module(), "scale");
    const unsigned n = 1 << 20;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    auto faults = [] {
        return adsm::stats().get(adsm::Counter::read_faults) + adsm::stats().get(adsm::Counter::write_faults);
    };
    set_entry_hook(note_driver_entry);
    const uint64_t before = faults();
    for (unsigned i = 0; i < n; ++i) x[i] = 1.0f;  // (write faults: pins, flushes)
    for (int round = 0; round < 2; ++round) {
        scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 2.0f, n);
        adsm::sync();
        // Reads and writes of what the device holds: copies from the handler.
        for (unsigned i = 0; i < n; i += 1024)
            EXPECT_EQ(x[i], round == 0 || i % 4096 ? 2.0f * (round + 1) : 8.0f) << i;
        for (unsigned i = 0; i < n; i += 4096) x[i] *= 2.0f;
    }
    set_entry_hook(nullptr);
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess) << detail();
    if (std::string(info.protocol) != "batch") {  // (which takes no faults)
        EXPECT_GT(faults(), before) << "no fault was taken: the test tests nothing";
    }
    EXPECT_EQ(driver_calls_in_handler.load(), 0) << "driver entries called from inside the fault handler";
    adsmFree(x);
}

inline void granules_are_shared_and_released(size_t (*device_bytes)()) {
    size_t before = device_bytes();
    void *a = adsmAlloc(4096), *b = adsmAlloc(4096);
    ASSERT_TRUE(a && b) << detail();
    // Two pages take one 2 MiB granule of device memory, or two when they
    // straddle a granule boundary (none when a live allocation holds it).
    size_t with = device_bytes() - before;
    EXPECT_LE(with, 4u << 20);
    EXPECT_GT(device_bytes(), 0u);
    adsmFree(a);
    adsmFree(b);
    EXPECT_EQ(device_bytes(), before);
}

inline void calloc_is_zero_on_the_device() {
    Scale scale(load_module(), "scale");
    unsigned n = 1 << 18;
    auto *x = static_cast<float *>(adsmCalloc(n, sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    scale(adsm::blocks_for(n, 256), adsm::dim3(256), x, 5.0f, n);
    adsm::sync();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.0f) << "at " << i;
    adsmFree(x);
}

// A wait for a copy ticket the device never issued (one an object brought
// from a device it has left) waits for the copies so far, not for ever.
inline void a_wait_for_a_ticket_never_issued_returns() {
    Scale scale(load_module(), "scale");
    const unsigned n = 1 << 18;
    auto *v = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(v, nullptr) << detail();
    for (unsigned i = 0; i < n; ++i) v[i] = 1.0f;
    scale(adsm::dim3(n / 256), adsm::dim3(256), v, 3.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << detail();
    ASSERT_EQ(adsmPrefetch(v, n * sizeof(float), ADSM_HOST), adsmSuccess) << detail();  // copies in the background
    adsm::Runtime *rt = nullptr;
    ASSERT_EQ(adsm::runtime(&rt), adsmSuccess);
    EXPECT_EQ(rt->device->wait_copies(uint64_t(1) << 40), adsmSuccess) << detail();
    for (unsigned i = 0; i < n; i += 1021) ASSERT_EQ(v[i], 3.0f) << i;
    adsmFree(v);
}

inline void contexts_on_threads_run_together() {
    Scale scale(load_module(), "scale");
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            unsigned n = 50000 + t;
            auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
            if (!x) return;
            for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(t);
            for (int r = 0; r < 3; ++r) {
                scale(adsm::blocks_for(n, 128), adsm::dim3(128), x, 2.0f, n);
                adsm::sync();
            }
            bool good = true;
            for (unsigned i = 0; i < n; ++i) good &= x[i] == 8.0f * static_cast<float>(t);
            ok[t] = good;
            adsmFree(x);
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

// `hint`: what the refusal tells the program to do instead.
inline void host_function_kernels_are_refused(const char *name, const char *hint) {
    size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    adsmKernel_t k;
    ASSERT_EQ(adsmRegisterKernel(name, scale, 3, sizes, &k), adsmSuccess) << detail();
    float *x = static_cast<float *>(adsmAlloc(64));
    float f = 2.0f;
    unsigned n = 16;
    void *args[] = {&x, &f, &n};
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {16, 1, 1}, args), adsmErrorNotSupported);
    EXPECT_NE(detail().find(hint), std::string::npos) << detail();
    EXPECT_EQ(adsmSync(), adsmSuccess) << detail();
    adsmFree(x);
}

// Ends the device: run alone (--gtest_filter), after the others.
// `fault`: the driver's name for a kernel's fault.
inline void faulting_kernel_is_a_launch_failure_then_the_device_is_lost(const char *fault) {
    adsmModule_t m = load_module();
    const size_t sizes[] = {sizeof(float *), sizeof(float), sizeof(unsigned)};
    adsmKernel_t crash, scale;
    ASSERT_EQ(adsmModuleGetKernelWithParams(m, "crash", 0, nullptr, &crash), adsmSuccess) << detail();
    ASSERT_EQ(adsmModuleGetKernelWithParams(m, "scale", 3, sizes, &scale), adsmSuccess) << detail();
    float *x = static_cast<float *>(adsmAlloc(4096));
    ASSERT_NE(x, nullptr);
    x[0] = 1.0f;
    ASSERT_EQ(adsmCall(crash, {1, 1, 1}, {1, 1, 1}, nullptr), adsmSuccess) << detail();
    EXPECT_EQ(adsmSync(), adsmErrorLaunchFailure);
    std::string why = detail();
    EXPECT_NE(why.find(fault), std::string::npos) << why;
    EXPECT_NE(why.find("crash"), std::string::npos) << why;
    float f = 2.0f;
    unsigned n = 1;
    void *args[] = {&x, &f, &n};
    EXPECT_EQ(adsmCall(scale, {1, 1, 1}, {1, 1, 1}, args), adsmErrorDeviceLost);
    EXPECT_NE(detail().find("lost"), std::string::npos) << detail();
    EXPECT_EQ(adsmSync(), adsmErrorDeviceLost);
    void *d = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&d, 4096), adsmErrorDeviceLost);
}

// Ends the device: run alone.  Another context's kernel faults and nobody
// waits for it; the next copy meets the fault.  The device is lost then,
// as at a sync: that copy reports the fault (`fault`: the driver's name for
// it), and every later call is adsmErrorDeviceLost without asking the
// driver (`copies`: how many copies reached it).  `fault_landed`, where
// given, returns once the driver has seen the fault.
inline void a_copy_that_meets_a_kernels_fault_loses_the_device(const char *fault, void (*fault_landed)(),
                                                                long (*copies)()) {
    adsmModule_t m = load_module();
    adsmKernel_t crash;
    ASSERT_EQ(adsmModuleGetKernelWithParams(m, "crash", 0, nullptr, &crash), adsmSuccess) << detail();
    void *d = nullptr;
    ASSERT_EQ(adsmDeviceAlloc(&d, 4096), adsmSuccess) << detail();
    std::vector<char> buf(4096);
    ASSERT_EQ(adsmCopyToHost(buf.data(), d, buf.size()), adsmSuccess) << detail();
    // (The thread stays until the end: its context's end would wait for the kernel.)
    std::atomic<int> step{0};
    adsmError_t launched = adsmErrorInvalidValue;  // until it returns
    std::thread other([&] {
        launched = adsmCall(crash, {1, 1, 1}, {1, 1, 1}, nullptr);
        step.store(1);
        while (step.load() != 2) usleep(1000);
    });
    while (step.load() != 1) usleep(1000);
    EXPECT_EQ(launched, adsmSuccess);
    if (fault_landed) fault_landed();
    EXPECT_EQ(adsmCopyToHost(buf.data(), d, buf.size()), adsmErrorLaunchFailure);
    EXPECT_NE(detail().find(fault), std::string::npos) << detail();
    const long before = copies();
    EXPECT_EQ(adsmCopyToHost(buf.data(), d, buf.size()), adsmErrorDeviceLost);
    EXPECT_NE(detail().find("lost"), std::string::npos) << detail();
    EXPECT_EQ(copies(), before) << "a lost device was asked to copy again";
    EXPECT_EQ(adsmCall(crash, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorDeviceLost);
    void *more = nullptr;
    EXPECT_EQ(adsmDeviceAlloc(&more, 4096), adsmErrorDeviceLost);
    step.store(2);
    other.join();
}

// The host mapped ADSM_VA_BASE before the runtime started: the driver
// reserves elsewhere and the window follows it.  Run alone.
inline void window_follows_the_driver_when_the_base_is_taken(bool (*reserved_by_driver)(const void *)) {
    void *squat = mmap(reinterpret_cast<void *>(0x300000000000ull), 1 << 20, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    ASSERT_EQ(squat, reinterpret_cast<void *>(0x300000000000ull));
    Scale scale(load_module(), "scale");
    unsigned n = 4096;
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    ASSERT_NE(x, nullptr) << detail();
    EXPECT_TRUE(reserved_by_driver(x));
    EXPECT_FALSE(reinterpret_cast<uintptr_t>(x) >= 0x300000000000ull &&
                 reinterpret_cast<uintptr_t>(x) < 0x300000000000ull + (1 << 20));
    for (unsigned i = 0; i < n; ++i) x[i] = 1.5f;
    scale(adsm::blocks_for(n, 64), adsm::dim3(64), x, 2.0f, n);
    adsm::sync();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(x[i], 3.0f);
    adsmFree(x);
}

// ---- two GPUs of one address space (ADSM_DEVICE=cuda,cuda or
// levelzero,levelzero on a double with two GPUs; run alone)

inline uint64_t used_on(int device) {
    adsmDeviceInfo info{};
    EXPECT_EQ(adsmGetDeviceProperties(device, &info), adsmSuccess) << detail();
    return info.memory_used;
}

// Runs body on a thread whose context is on `device`.
template <class F>
void on_gpu(int device, F &&body) {
    std::thread([&] {
        ASSERT_EQ(adsmSetDevice(device), adsmSuccess) << detail();
        body();
    }).join();
}

inline constexpr uintptr_t kGranule = 2 << 20;  // the doubles', as an H100's

// The runtime's count and the double's (double_bytes_on: its own
// bytes of a GPU's memory) agree.
inline void objects_of_two_gpus_lie_granules_apart(size_t (*double_bytes_on)(int)) {
    uint64_t before[2] = {used_on(0), used_on(1)};
    size_t made[2] = {double_bytes_on(0), double_bytes_on(1)};
    uint32_t *a = nullptr, *b = nullptr;
    on_gpu(0, [&] { a = static_cast<uint32_t *>(adsmAlloc(4096)); });
    on_gpu(1, [&] { b = static_cast<uint32_t *>(adsmAlloc(4096)); });
    ASSERT_TRUE(a && b) << detail();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kGranule, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % kGranule, 0u);
    EXPECT_EQ(used_on(0), before[0] + kGranule);
    EXPECT_EQ(used_on(1), before[1] + kGranule);
    EXPECT_EQ(double_bytes_on(0), made[0] + kGranule) << "GPU 0's own memory";
    EXPECT_EQ(double_bytes_on(1), made[1] + kGranule) << "GPU 1's own memory";
    adsmFree(a);
    adsmFree(b);
    EXPECT_EQ(used_on(0), before[0]);
    EXPECT_EQ(used_on(1), before[1]);
    EXPECT_EQ(double_bytes_on(0), made[0]);
    EXPECT_EQ(double_bytes_on(1), made[1]);
}

// One module, loaded once by the program: its kernel runs on either GPU,
// and an object follows its context from one to the other, its granules
// handed over with what they hold.
inline void scale_on_one_gpu_then_the_other(size_t (*double_bytes_on)(int)) {
    Scale scale(load_module(), "scale");
    unsigned n = 3 << 18;  // 3 MiB: two granules
    on_gpu(0, [&] {
        auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
        ASSERT_NE(x, nullptr) << detail();
        for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i);
        scale(adsm::blocks_for(n, 256), adsm::dim3(256), x, 2.0f, n);
        adsm::sync();
        const uint64_t on0 = used_on(0), on1 = used_on(1);
        const size_t made0 = double_bytes_on(0), made1 = double_bytes_on(1);
        const uint64_t moved = adsm::stats().get(adsm::Counter::d2d_bytes);
        ASSERT_EQ(adsmSetDevice(1), adsmSuccess) << detail();
        EXPECT_EQ(used_on(0), on0 - 2 * kGranule);
        EXPECT_EQ(used_on(1), on1 + 2 * kGranule);
        EXPECT_EQ(double_bytes_on(0), made0 - 2 * kGranule) << "GPU 0's memory went";
        EXPECT_EQ(double_bytes_on(1), made1 + 2 * kGranule) << "GPU 1 holds it";
        EXPECT_EQ(adsm::stats().get(adsm::Counter::d2d_bytes), moved + 2 * kGranule) << "handed over GPU to GPU";
        scale(adsm::blocks_for(n, 256), adsm::dim3(256), x, 2.0f, n);
        adsm::sync();
        for (unsigned i = 0; i < n; i += 997) ASSERT_EQ(x[i], 4.0f * static_cast<float>(i)) << i;
        adsmFree(x);
    });
}

// Without a peer link a GPU's kernels cannot reach the other's memory: an
// object kept there for them is refused.
inline void a_preferred_device_is_refused_without_a_peer_link() {
    on_gpu(0, [&] {
        adsmAllocAttr attr{};
        attr.place = ADSM_PLACE_PREFERRED_DEVICE;
        attr.device = 1;
        EXPECT_EQ(adsmAllocEx(4096, &attr), nullptr);
        EXPECT_EQ(adsmGetLastError(), adsmErrorNotSupported);
        EXPECT_NE(detail().find("no peer link"), std::string::npos) << detail();
    });
}

// A start that fails after the device was made (here the trace file cannot
// be written) leaves none of its threads behind: they would read what the
// failed start freed.  In a process of its own (the runtime starts once).
inline void a_failed_start_leaves_no_thread_behind() {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            const int before = threads_in_process();
            setenv("ADSM_TRACE", "/nonexistent-directory/trace.json", 1);
            const bool failed = adsmAlloc(100) == nullptr;
            const int after = threads_settled_to(before);
            if (after != before) fprintf(stderr, "%d threads before the start, %d after it failed\n", before, after);
            // (Past the exit handlers: what a failed start leaves of the
            // driver's objects is not this test's business.)
            _exit(failed && after == before ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
}

// Runs the start-failure probe (start_failure_probe.cpp, at
// START_FAILURE_PROBE) with `env` added to the environment: its exit
// status, and its output in *out.
inline int run_start_probe(const std::string &env, const std::string &args, std::string *out) {
    const std::string cmd = env + " timeout -k 5 60 " START_FAILURE_PROBE " " + args + " 2>&1";
    out->clear();
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// A driver's double as the start-failure probe uses it.
struct DriverDouble {
    const char *library;     // as the runtime loads it
    const char *prefix;      // of its functions: PREFIX_held, PREFIX_entry
    const char *fail_env;    // its variable that fails a call (entry:n, entry:n+)
    const char *error_name;  // the error a failing call returns
    const char *launch;      // its entry point that launches a kernel
    const char *granule_env;  // its variable that sets the allocation granularity
    std::vector<const char *> held;  // what it counts of what a program holds
};

// The probe's arguments: the double, the probe's options, and what to
// count (quoted: "device bytes").
inline std::string start_probe_args(const DriverDouble &d, const std::string &options, bool counting) {
    std::string args = std::string(d.library) + " " + d.prefix + " " + options;
    for (const char *k : counting ? d.held : std::vector<const char *>{}) args += std::string(" '") + k + "'";
    return args;
}

// A start that fails late (the trace file cannot be written) gives back
// every object it took from the driver that the double counts, the host
// mirror and its threads.
inline void a_failed_start_gives_back_what_it_took(const DriverDouble &d) {
    std::string out;
    EXPECT_EQ(run_start_probe("ADSM_TRACE=/nonexistent-directory/trace.json", start_probe_args(d, "", true), &out), 0)
        << out;
    EXPECT_NE(out.find("probe: start failed: "), std::string::npos) << out;
}

// A call whose launch the driver refuses ran no kernel: reading its object
// then is no race, not even under ADSM_ON_RACE=abort (no warning, no
// abort), and finds it as it was.
inline void a_failed_launch_is_no_race(const DriverDouble &d) {
    std::string out;
    const std::string env = std::string("ADSM_ON_RACE=abort ") + d.fail_env + "=" + d.launch + ":1";
    EXPECT_EQ(run_start_probe(env, start_probe_args(d, "--call 1048576", true), &out), 0) << out;
    EXPECT_NE(out.find("probe: call failed: launch: "), std::string::npos) << out;
    EXPECT_EQ(out.find("may still use it"), std::string::npos) << out;
}

// The driver calls the probe lists (--list) after the steps `options` ask
// for, by entry point.
inline std::map<std::string, long> start_probe_calls(const DriverDouble &d, const std::string &env,
                                                     const std::string &options) {
    std::string out;
    std::map<std::string, long> calls;
    EXPECT_EQ(run_start_probe(env, start_probe_args(d, "--list " + options, false), &out), 0) << out;
    char name[128];
    long n = 0;
    for (size_t at = out.find('\n'); at != std::string::npos; at = out.find('\n', at + 1))
        if (sscanf(out.c_str() + at + 1, "%127s %ld", name, &n) == 2 && strcmp(name, "probe:") != 0) calls[name] = n;
    return calls;
}

// Which driver calls fail, and what of: `step` is "" for a start,
// "--alloc BYTES" for an object made, filled and freed after one, or
// "--call FLOATS" for a kernel scaling an object after one; `env` is
// added to the environment; `onward`: the failing call and every later one
// of its entry point fail (else it alone); `some_fail`: some of the calls
// must fail the step, not just be coped with.
struct FailingCalls {
    std::string step, env;
    bool onward, some_fail;
};

// The sweeps' granularity (the runtime asks the driver for it, as it would
// a GPU's other than 2 MiB): a quarter of the doubles' default, so that each
// of their hundreds of processes makes and copies a quarter of the bytes,
// and a kernel's object of two still fills more than one asynchronous copy
// when it is read back (smaller, it takes one synchronous copy, and the
// sweep would never fail a copy's completion callback).
inline constexpr size_t kSweepGranule = 512 << 10;

// A sweep's step `options` with its sizes in the sweep's granules: an object
// of two granules and a half, or a kernel's of two.
inline std::string sweep_alloc() { return "--alloc " + std::to_string(kSweepGranule * 5 / 2); }
inline std::string sweep_call() { return "--call " + std::to_string(kSweepGranule * 2 / sizeof(float)); }

// The step made to fail at each driver call it makes, one run for each:
// whichever call fails, the step either copes, saying so in the log or
// losing nothing, or fails with an error naming the driver's, having given
// back every object of the driver's it took (a start: the host mirror and
// its threads too; a call: each element of its object scaled or as it
// was).  Neither a crash (but SIGBUS for a read that cannot be served,
// saying why) nor a hang nor a leak, nor a failure passed over in silence.
inline void each_failing_driver_call_is_reported_and_loses_nothing(const DriverDouble &d, FailingCalls f) {
    f.env += std::string(" ") + d.granule_env + "=" + std::to_string(kSweepGranule);
    const std::map<std::string, long> before =
        f.step.empty() ? std::map<std::string, long>{} : start_probe_calls(d, f.env, "");
    const std::map<std::string, long> after = start_probe_calls(d, f.env, f.step);
    const std::string args = start_probe_args(d, f.step, true);
    int failed = 0, coped = 0;
    std::string out;
    for (const auto &[entry, times] : after) {
        const auto was = before.find(entry);
        for (long i = was == before.end() ? 1 : was->second + 1; i <= times; ++i) {
            const std::string call = entry + ":" + std::to_string(i) + (f.onward ? "+" : "");
            const int rc = run_start_probe(f.env + " " + d.fail_env + "=" + call, args, &out);
            auto said = [&](const char *what) { return out.find(what) != std::string::npos; };
            // A read of shared memory whose data cannot be brought in ends
            // in SIGBUS, as a mapped file's page that cannot be read does
            // (in the sanitizer build, the sanitizer's handler ends it).
            const bool bus_error =
                said("; raising SIGBUS") && (rc == 128 + SIGBUS || said("AddressSanitizer: BUS on unknown address"));
            EXPECT_TRUE(rc == 0 || bus_error) << "with " << call << " failing:\n" << out;
            if (bus_error || said("probe: start failed: ") || said("probe: allocation failed: ") ||
                said("probe: call failed: ")) {
                ++failed;
                EXPECT_TRUE(said(d.error_name)) << "the error does not name the driver's: " << out;
            } else {
                // (An allocation the device has no memory for lives on the
                // host until a call needs it there, and a call that a retry
                // served did its work: nothing to say then.)
                ++coped;
                EXPECT_TRUE(said("adsm ") || said("probe: freed, all given back") ||
                            said("probe: called, every element scaled"))
                    << call << " failing passed in silence and lost something:\n" << out;
            }
        }
    }
    EXPECT_GT(failed + coped, 0) << "the step made no driver call of its own";
    if (f.some_fail) {
        EXPECT_GT(failed, 0) << "no failing call failed the step (" << coped << " coped)";
    }
    printf("%d failing driver calls failed the step, %d were coped with\n", failed, coped);
}

}  // namespace device_test

// A back-end's driver-failure tests, on its double `d`: a start failing
// late, then a start, an allocation (an object of two granules and a half,
// made, filled and freed: the device refusing its memory fails it with
// ADSM_SPILL=fail, with nothing left mapped; by default it lives on the
// host instead) and a kernel call (scaling an object, waited for and read
// back) made to fail at each of their driver calls in turn; and a launch
// that fails.
#define ADSM_DRIVER_FAILURE_TESTS(Suite, d)                                                  \
    TEST(Suite, AFailedStartGivesBackWhatItTookFromTheDriver) {                              \
        device_test::a_failed_start_gives_back_what_it_took(d);                              \
    }                                                                                        \
    TEST(Suite, AStartFailingAtAnyDriverCallGivesBackWhatItTook) {                           \
        device_test::each_failing_driver_call_is_reported_and_loses_nothing(                 \
            d, {"", "", false, true});                                                       \
    }                                                                                        \
    TEST(Suite, AnAllocationFailingAtAnyDriverCallGivesBackWhatItTook) {                     \
        device_test::each_failing_driver_call_is_reported_and_loses_nothing(                 \
            d, {device_test::sweep_alloc(), "ADSM_SPILL=fail", true, true});                 \
    }                                                                                        \
    TEST(Suite, AnAllocationLeftOnTheHostByAFailingDriverCallLosesNothing) {                 \
        device_test::each_failing_driver_call_is_reported_and_loses_nothing(                 \
            d, {device_test::sweep_alloc(), "", false, false});                              \
    }                                                                                        \
    TEST(Suite, ACallFailingAtAnyDriverCallIsReportedAndLosesNothing) {                      \
        device_test::each_failing_driver_call_is_reported_and_loses_nothing(                 \
            d, {device_test::sweep_call(), "", false, true});                                \
    }                                                                                        \
    TEST(Suite, AFailedLaunchIsNoRace) { device_test::a_failed_launch_is_no_race(d); }
