// Several devices and oversubscription, measured side by side in one run.
// Each part runs in a child process of its own, because the runtime reads
// its configuration (devices, their memory, the link model) once.
//
//   adsm-bench-devices [split|oversubscribe|many|many=N]...   (default: all)
//
// split: one workload over two simulated devices against the same work on
//   one, with two host threads either way.  Each simulated device gets one
//   worker thread (ADSM_SIM_WORKERS=1: its own compute) and its own link.
// oversubscribe: objects of 2x and 4x device memory, each kernel naming the
//   object it uses (adsmCallWith), against the cost model of fault-driven
//   managed memory once oversubscribed: the same migrations at about
//   5 Gbit/s (the figure seed 004 reports for CUDA managed memory).
// many: 16384 small objects (or N) at 4x device memory, a kernel per
//   object: what choosing a victim costs when there are many to choose
//   from, beside the same calls on one object that stays resident.
#include <adsm.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "child_run.h"
#include "support/stats.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
uint64_t counter(adsm::Counter c) { return adsm::stats().get(c); }

// The link every simulated device gets: a PCIe 4 x16 link's bulk rate.
constexpr const char *kLinkGbps = "20";
constexpr const char *kLinkLatencyUs = "5";
// CUDA managed memory's migration rate once oversubscribed (seed 004).
constexpr double kManagedGBps = 5.0 / 8;

// y[i] = a polynomial of x[i], `work` steps of it: compute the device does.
void poly(const adsm::thread_index &t, const float *x, float *y, size_t n, unsigned work) {
    size_t i = adsm::global_x(t);
    if (i >= n) return;
    float v = x[i], acc = 0;
    for (unsigned k = 0; k < work; ++k) acc = acc * 0.999f + v * 1.0001f;
    y[i] = acc;
}

void increment(const adsm::thread_index &t, uint32_t *v, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) v[i] += 1;
}

// ---------------------------------------------------------------- split

// One host thread per entry of `devices`, thread i's context on
// devices[i], each running `rounds` of: write its x, call, sync, read its y.
// Allocation and first touch are not timed.
double split_run(const std::vector<int> &devices, size_t n, unsigned rounds, unsigned work, double *checksum) {
    adsm::kernel<poly> k("devices.poly");
    const size_t count = devices.size();
    std::vector<double> sums(count);
    std::atomic<size_t> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (size_t t = 0; t < count; ++t)
        threads.emplace_back([&, t] {
            adsm::set_device(devices[t]);
            auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
            auto *y = static_cast<float *>(adsmAlloc(n * sizeof(float)));
            for (size_t i = 0; i < n; ++i) y[i] = 0;
            ready++;
            while (!go.load()) std::this_thread::yield();
            double sum = 0;
            for (unsigned r = 0; r < rounds; ++r) {
                for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i + r + t) % 97) * 0.01f;
                k.with({{x, 1}, {y, 0}}, adsm::blocks_for(n, 256), 256, x, y, n, work);
                adsm::sync();
                for (size_t i = 0; i < n; i += 64) sum += y[i];
            }
            sums[t] = sum;
            adsmFree(x);
            adsmFree(y);
        });
    while (ready.load() < count) std::this_thread::yield();
    auto t0 = Clock::now();
    go = true;
    for (auto &th : threads) th.join();
    double ms = ms_since(t0);
    *checksum = 0;
    for (double s : sums) *checksum += s;
    return ms;
}

int child_split() {
    const size_t n = 4u << 20;  // 16 MiB per array, two per thread
    const unsigned rounds = 6, work = 24;
    double c1 = 0, c2 = 0;
    // Warm both devices (their device processes start on first use).
    split_run({0, 1}, 1 << 12, 1, 1, &c1);
    double one = split_run({0, 0}, n, rounds, work, &c1);
    double two = split_run({0, 1}, n, rounds, work, &c2);
    printf("one_ms=%.1f two_ms=%.1f same=%d d2d=%llu\n", one, two, c1 == c2 ? 1 : 0,
           static_cast<unsigned long long>(counter(adsm::Counter::d2d_bytes)));
    return 0;
}

// ---------------------------------------------------------------- oversubscribe

// Bytes fault-driven managed memory would migrate for the same sequence of
// kernels: an object a kernel touches comes in whole if it is not resident,
// pushing out the least recently used ones (written back: every kernel
// writes its object), with the device holding `capacity` bytes.
uint64_t managed_bytes(const std::vector<size_t> &sequence, size_t objects, uint64_t object_bytes, uint64_t capacity) {
    std::list<size_t> lru;  // most recent first
    std::vector<bool> resident(objects);
    uint64_t moved = 0, held = 0;
    for (size_t o : sequence) {
        if (resident[o]) {
            lru.remove(o);
        } else {
            while (held + object_bytes > capacity && !lru.empty()) {
                resident[lru.back()] = false;
                lru.pop_back();
                held -= object_bytes;
                moved += object_bytes;  // written back
            }
            resident[o] = true;
            held += object_bytes;
            moved += object_bytes;  // brought in
        }
        lru.push_front(o);
    }
    return moved;
}

// `objects` objects of `object_bytes`, each call naming its object: first
// `rounds` rounds of calls on the first alone (it stays resident: the
// compute and the calls alone), then `rounds` rounds over all of them in
// turn.  False if an allocation failed.
struct Cycling {
    double resident_ms, cycling_ms;
    uint64_t moved, evictions;
    bool right;
};
bool run_cycling(size_t objects, uint64_t object_bytes, unsigned rounds, Cycling *out) {
    const size_t n = object_bytes / sizeof(uint32_t);
    adsm::kernel<increment> k("devices.increment");
    std::vector<uint32_t *> obj(objects);
    for (auto &p : obj) {
        p = static_cast<uint32_t *>(adsmAlloc(object_bytes));
        if (!p) return false;
        for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(i);
    }
    auto round_robin = [&](bool first_only) {
        auto t0 = Clock::now();
        for (unsigned r = 0; r < rounds; ++r)
            for (size_t o = 0; o < objects; ++o) {
                uint32_t *p = obj[first_only ? 0 : o];
                k.with({{p, 0}}, adsm::blocks_for(n, 256), 256, p, n);
                adsm::sync();
            }
        return ms_since(t0);
    };
    out->resident_ms = round_robin(true);
    const uint64_t moved0 = counter(adsm::Counter::h2d_bytes) + counter(adsm::Counter::d2h_bytes);
    const uint64_t evicted0 = counter(adsm::Counter::device_evictions);
    out->cycling_ms = round_robin(false);
    out->moved = counter(adsm::Counter::h2d_bytes) + counter(adsm::Counter::d2h_bytes) - moved0;
    out->evictions = counter(adsm::Counter::device_evictions) - evicted0;
    out->right = true;
    for (size_t o = 0; o < objects; ++o)
        for (size_t i = 0; i < n; i += 1021)
            out->right &= obj[o][i] == static_cast<uint32_t>(i + rounds + (o == 0 ? rounds * objects : 0));
    return true;
}

int child_oversubscribe(unsigned factor) {
    adsmDeviceInfo info;
    adsm::check(adsmGetDeviceInfo(&info));
    const uint64_t object_bytes = info.memory_bytes / 4;
    const size_t objects = 4 * factor;
    const unsigned rounds = 3;
    Cycling c;
    if (!run_cycling(objects, object_bytes, rounds, &c)) return 1;
    std::vector<size_t> sequence;
    for (unsigned r = 0; r < rounds; ++r)
        for (size_t o = 0; o < objects; ++o) sequence.push_back(o);
    uint64_t managed = managed_bytes(sequence, objects, object_bytes, info.memory_bytes);
    printf("compute_ms=%.1f adsm_ms=%.1f moved=%llu evictions=%llu managed_bytes=%llu correct=%d\n", c.resident_ms,
           c.cycling_ms, static_cast<unsigned long long>(c.moved), static_cast<unsigned long long>(c.evictions),
           static_cast<unsigned long long>(managed), c.right ? 1 : 0);
    return c.right ? 0 : 1;
}

// Many small objects, each call naming one: every call evicts one and
// brings one back.
int child_many(size_t objects, uint64_t object_bytes) {
    const unsigned rounds = 2;
    Cycling c;
    if (!run_cycling(objects, object_bytes, rounds, &c)) return 1;
    const double calls = static_cast<double>(rounds * objects);
    printf("resident_us=%.1f cycling_us=%.1f evictions=%llu correct=%d\n", c.resident_ms * 1000 / calls,
           c.cycling_ms * 1000 / calls, static_cast<unsigned long long>(c.evictions), c.right ? 1 : 0);
    return c.right ? 0 : 1;
}

// ---------------------------------------------------------------- parent

// A part's numbers, from a child process configured by `env`.
std::map<std::string, double> run_child(const std::vector<std::string> &args, const std::vector<std::string> &env) {
    auto kv = bench::run_child("adsm-bench-devices", args, env);
    if (kv.empty()) exit(1);
    return kv;
}

std::vector<std::string> link_env() {
    return {std::string("ADSM_SIM_LINK_GBPS=") + kLinkGbps, std::string("ADSM_SIM_LINK_LATENCY_US=") + kLinkLatencyUs};
}

void split() {
    auto env = link_env();
    env.push_back("ADSM_DEVICE=sim,sim");
    env.push_back("ADSM_SIM_WORKERS=1");
    auto kv = run_child({"split"}, env);
    printf("split: two host threads, 2 x 16 MiB each per round, 6 rounds (sim: 1 worker and a %s GB/s, %s us link "
           "per device)\n",
           kLinkGbps, kLinkLatencyUs);
    printf("  one device  %8.1f ms\n  two devices %8.1f ms\n  speed-up    %8.2fx   (results %s)\n", kv["one_ms"],
           kv["two_ms"], kv["one_ms"] / kv["two_ms"], kv["same"] == 1 ? "identical" : "DIFFER");
}

void oversubscribe() {
    printf("oversubscribe: a kernel per object, each naming its object, 3 rounds over all of them (sim: 64 MiB of "
           "device memory, a %s GB/s, %s us link)\n",
           kLinkGbps, kLinkLatencyUs);
    printf("  %-6s %10s %10s %12s %10s %14s %10s\n", "memory", "compute", "adsm", "moved", "adsm GB/s", "managed model",
           "ratio");
    for (unsigned factor : {2u, 4u}) {
        auto env = link_env();
        env.push_back("ADSM_SIM_MEMORY=64M");
        auto kv = run_child({"oversubscribe", std::to_string(factor)}, env);
        double extra_ms = kv["adsm_ms"] - kv["compute_ms"];
        double managed_ms = kv["compute_ms"] + kv["managed_bytes"] / (kManagedGBps * 1e6);
        printf("  %ux     %8.1fms %8.1fms %9.1f MiB %10.2f %12.1fms %9.2fx%s\n", factor, kv["compute_ms"], kv["adsm_ms"],
               kv["moved"] / (1 << 20), extra_ms > 0 ? kv["moved"] / (extra_ms * 1e6) : 0.0, managed_ms,
               managed_ms / kv["adsm_ms"], kv["correct"] == 1 ? "" : "  WRONG RESULTS");
    }
    printf("  (managed model: the compute time plus the bytes an LRU of whole objects would migrate, at %.3f GB/s)\n",
           kManagedGBps);
}

void many(size_t objects) {
    const uint64_t object_bytes = 16 << 10;
    const uint64_t device_mib = objects * object_bytes / 4 >> 20;
    printf("many: %zu objects of %llu KiB (4x device memory), a kernel per object naming it, 2 rounds (sim: %llu MiB "
           "of device memory, a %s GB/s, %s us link)\n",
           objects, static_cast<unsigned long long>(object_bytes >> 10), static_cast<unsigned long long>(device_mib),
           kLinkGbps, kLinkLatencyUs);
    auto env = link_env();
    env.push_back("ADSM_SIM_MEMORY=" + std::to_string(device_mib) + "M");
    auto kv = run_child({"many", std::to_string(objects), std::to_string(object_bytes)}, env);
    // What the link alone takes per call: one object out, one in.
    double link_us = 2 * (std::atof(kLinkLatencyUs) + object_bytes / (std::atof(kLinkGbps) * 1e3));
    printf("  one resident object %8.1f us per call\n  cycling through all %8.1f us per call, %.1f us more (%.0f "
           "evictions; the link model's time for one object out and one in: %.1f us)%s\n",
           kv["resident_us"], kv["cycling_us"], kv["cycling_us"] - kv["resident_us"], kv["evictions"], link_us,
           kv["correct"] == 1 ? "" : "  WRONG RESULTS");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--child")) {
        if (!strcmp(argv[2], "split")) return child_split();
        if (!strcmp(argv[2], "oversubscribe") && argc >= 4) return child_oversubscribe(static_cast<unsigned>(atoi(argv[3])));
        if (!strcmp(argv[2], "many") && argc >= 5)
            return child_many(static_cast<size_t>(atoll(argv[3])), static_cast<uint64_t>(atoll(argv[4])));
        return 2;
    }
    std::vector<std::string> parts(argv + 1, argv + argc);
    if (parts.empty()) parts = {"split", "oversubscribe", "many"};
    for (const auto &p : parts) {
        if (p == "split") {
            split();
        } else if (p == "oversubscribe") {
            oversubscribe();
        } else if (p == "many") {
            many(16384);
        } else if (p.rfind("many=", 0) == 0 && atol(p.c_str() + 5) >= 1024) {
            many(static_cast<size_t>(atol(p.c_str() + 5)));
        } else {
            fprintf(stderr, "usage: adsm-bench-devices [split|oversubscribe|many|many=N (1024 or more)]...\n");
            return 2;
        }
    }
    return 0;
}
