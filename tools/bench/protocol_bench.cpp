// Protocol benchmarks: numbers measured side by side in one run, printed as
// tables.  Each measurement runs in a child process of its own, because the
// runtime reads its configuration (protocol, tracker, block size) once.
//
//   adsm-bench-protocols [fault|tracking|bytes|delta|readback]...   (default: all)
#include <adsm.hpp>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "child_run.h"
#include "support/stats.h"

namespace {

using Clock = std::chrono::steady_clock;
double ns_since(Clock::time_point t) { return std::chrono::duration<double, std::nano>(Clock::now() - t).count(); }
uint64_t counter(adsm::Counter c) { return adsm::stats().get(c); }

void touch_all(const adsm::thread_index &t, uint8_t *p, size_t n, uint8_t v) {
    size_t i = adsm::global_x(t) * 4096;
    if (i < n) p[i] = static_cast<uint8_t>(p[i] + v);
}
void fill_all(const adsm::thread_index &t, uint8_t *p, size_t n) {
    size_t i = adsm::global_x(t) * 4096;
    if (i < n) memset(p + i, 1, std::min<size_t>(4096, n - i));
}
void sum_pages(const adsm::thread_index &t, const uint8_t *p, size_t n, uint64_t *out) {
    size_t i = adsm::global_x(t) * 4096;
    if (i < n) __atomic_fetch_add(out, p[i], __ATOMIC_RELAXED);
}
void empty(const adsm::thread_index &) {}

// ---------------------------------------------------------------- children
// Each prints one line "key=value ..." on stdout.

const size_t kFaultPages = 16384;

volatile uintptr_t g_page_mask = ~uintptr_t(4095);
void bare_handler(int, siginfo_t *info, void *) {
    uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr) & g_page_mask;
    mprotect(reinterpret_cast<void *>(a), 4096, PROT_READ | PROT_WRITE);
}

int child_fault_bare() {
    int fd = static_cast<int>(syscall(SYS_memfd_create, "bench", 0));
    if (ftruncate(fd, kFaultPages * 4096) != 0) return 1;
    auto *p = static_cast<volatile uint8_t *>(
        mmap(nullptr, kFaultPages * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    for (size_t i = 0; i < kFaultPages; ++i) p[i * 4096] = 0;  // populate
    mprotect(const_cast<uint8_t *>(p), kFaultPages * 4096, PROT_READ);
    struct sigaction sa = {};
    sa.sa_sigaction = bare_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    auto t0 = Clock::now();
    for (size_t i = 0; i < kFaultPages; ++i) p[i * 4096] = 1;
    printf("ns=%.1f\n", ns_since(t0) / kFaultPages);
    return 0;
}

// Rolling with page-sized blocks and a list that never overflows: each
// first write to a read-only page is one runtime write fault.  With
// alt_stack, the thread has an alternate signal stack (as Rust and Go
// threads do): the handler enters there and handles the fault off it.
int child_fault_runtime(bool alt_stack) {
    static char alt[64 << 10];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    if (alt_stack && sigaltstack(&ss, nullptr) != 0) return 1;
    auto *p = static_cast<volatile uint8_t *>(adsmAlloc(kFaultPages * 4096));
    if (!p) return 1;
    uint64_t s = 0;
    for (size_t i = 0; i < kFaultPages; ++i) s += p[i * 4096];  // populate (fresh blocks are read-only)
    uint64_t f0 = counter(adsm::Counter::write_faults);
    auto t0 = Clock::now();
    for (size_t i = 0; i < kFaultPages; ++i) p[i * 4096] = 1;
    double ns = ns_since(t0) / kFaultPages;
    printf("ns=%.1f faults=%llu check=%llu\n", ns,
           static_cast<unsigned long long>(counter(adsm::Counter::write_faults) - f0), static_cast<unsigned long long>(s));
    return 0;
}

// Cost of finding the written pages: the writes themselves, and the
// release's bookkeeping (the copies are the same for both trackers).
int child_tracking() {
    const size_t pages = 16384, n = pages * 4096;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    adsm::kernel<fill_all> fill("bench.fill_all");
    adsm::kernel<empty> nothing("bench.empty");
    fill(adsm::blocks_for(pages, 256), 256, p, n);
    adsm::sync();
    double write_ns = 0, release_ns = 0;
    const int rounds = 5;
    uint64_t track0 = counter(adsm::Counter::tracking_ns);
    for (int r = 0; r < rounds; ++r) {
        uint64_t s = 0;
        for (size_t i = 0; i < pages; ++i) s += p[i * 4096];  // every block valid (fetched)
        if (s == 12345) printf(" ");
        auto t0 = Clock::now();
        for (size_t i = 0; i < pages; ++i) p[i * 4096] = static_cast<uint8_t>(r);
        write_ns += ns_since(t0);
        auto t1 = Clock::now();
        nothing(1, 1);
        release_ns += ns_since(t1);
        adsm::sync();
    }
    double scan_ns = double(counter(adsm::Counter::tracking_ns) - track0);
    printf("write_ns=%.1f scan_ns=%.1f release_ns=%.1f\n", write_ns / rounds / pages, scan_ns / rounds / pages,
           release_ns / rounds / pages);
    return 0;
}

// Bytes moved for three access patterns on one 256 MiB object.
int child_bytes(const char *scenario) {
    const size_t n = 256u << 20, pages = n / 4096;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    if (!p) return 1;
    adsm::kernel<touch_all> touch("bench.touch_all");
    adsm::kernel<fill_all> fill("bench.fill_all");
    auto grid = adsm::blocks_for(pages, 256);
    memset(p, 0, n);
    touch(grid, 256, p, n, uint8_t(1));
    adsm::sync();
    std::mt19937_64 rng(42);
    std::vector<size_t> pick(pages / 100);
    for (auto &x : pick) x = rng() % pages;
    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    uint64_t h0 = counter(adsm::Counter::h2d_bytes), d0 = counter(adsm::Counter::d2h_bytes);
    const std::string sc = scenario;
    if (sc == "write1") {
        memset(p + n / 3, 9, n / 100);  // 1% of the object, in one piece
        touch(grid, 256, p, n, uint8_t(1));
        adsm::sync();
    } else if (sc == "scatter1") {
        for (size_t x : pick) p[x * 4096 + 7] = 9;  // 1% of the pages, one byte each, anywhere
        touch(grid, 256, p, n, uint8_t(1));
        adsm::sync();
    } else if (sc == "read1") {
        // Counted from the kernel on: batch pays at the sync, the others when reading.
        fill(grid, 256, p, n);
        adsm::sync();
        uint64_t s = 0;
        for (size_t x : pick) s += p[x * 4096 + 3];
        if (s == 1) printf(" ");
    } else {
        memset(p, 5, n);
        touch(grid, 256, p, n, uint8_t(1));
        adsm::sync();
    }
    // The least a protocol could move for the pattern at the granularity it
    // moves data in that direction: batch and lazy whole objects; rolling
    // blocks; delta fetches blocks but sends pages.
    std::string proto = info.protocol;
    size_t gran = proto == "batch" || proto == "lazy" ? n
                  : proto == "delta" && sc != "read1" ? 4096
                                                      : info.block_size;
    std::vector<bool> touched((n + gran - 1) / gran, false);
    uint64_t units = 0;
    auto mark = [&](size_t byte) {
        if (!touched[byte / gran]) {
            touched[byte / gran] = true;
            ++units;
        }
    };
    if (sc == "rewrite") units = touched.size();
    else if (sc == "write1")
        for (size_t b = n / 3; b < n / 3 + n / 100; b += 4096) mark(b), mark(std::min(b + 4095, n / 3 + n / 100 - 1));
    else
        for (size_t x : pick) mark(x * 4096);
    printf("h2d=%llu d2h=%llu min=%llu\n", static_cast<unsigned long long>(counter(adsm::Counter::h2d_bytes) - h0),
           static_cast<unsigned long long>(counter(adsm::Counter::d2h_bytes) - d0),
           static_cast<unsigned long long>(units * gran));
    return 0;
}

// Two iterative workloads where what the CPU does between kernels is small:
// sparse updates (1% of the pages, scattered), and, after 2 ms of its own
// work, reading back the same 1% of the output after every sync (a halo, a
// set of probes).
int child_delta(const char *workload) {
    const size_t n = 64u << 20, pages = n / 4096;
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    auto *sum = static_cast<uint64_t *>(adsmCalloc(1, sizeof(uint64_t)));
    adsm::kernel<touch_all> touch("bench.touch_all");
    adsm::kernel<sum_pages> summarise("bench.sum_pages");
    auto grid = adsm::blocks_for(pages, 256);
    memset(p, 0, n);
    touch(grid, 256, p, n, uint8_t(1));
    adsm::sync();
    std::mt19937_64 rng(7);
    std::vector<size_t> probes(pages / 100);
    for (auto &x : probes) x = (rng() % pages) * 4096 + rng() % 4096;
    uint64_t h0 = counter(adsm::Counter::h2d_bytes), d0 = counter(adsm::Counter::d2h_bytes);
    uint64_t f0 = counter(adsm::Counter::read_faults) + counter(adsm::Counter::write_faults);
    const int iters = 20;
    uint64_t check = 0;
    std::vector<uint64_t> scratch(4096, 1);
    auto t0 = Clock::now();
    for (int it = 0; it < iters; ++it) {
        if (std::string(workload) == "sparse") {
            for (int k = 0; k < 3; ++k)  // 1% of the bytes' pages, scattered, fresh each time
                for (size_t i = 0; i < probes.size() / 3; ++i) p[(rng() % pages) * 4096 + rng() % 4096] ^= 1;
            summarise(grid, 256, p, n, sum);
            adsm::sync();
            check += *sum;
        } else {
            touch(grid, 256, p, n, uint8_t(1));
            adsm::sync();
            // The CPU's own work first (2 ms on private memory), then the
            // same probes of the output as every time.
            auto w0 = Clock::now();
            while (ns_since(w0) < 2e6)
                for (size_t i = 0; i < scratch.size(); ++i) scratch[i] = scratch[i] * 31 + i;
            for (size_t x : probes) check += p[x];
        }
    }
    double ms = ns_since(t0) / 1e6;
    printf("ms=%.1f h2d=%llu d2h=%llu faults=%llu check=%llu\n", ms / iters,
           static_cast<unsigned long long>((counter(adsm::Counter::h2d_bytes) - h0) / iters),
           static_cast<unsigned long long>((counter(adsm::Counter::d2h_bytes) - d0) / iters),
           static_cast<unsigned long long>(
               (counter(adsm::Counter::read_faults) + counter(adsm::Counter::write_faults) - f0) / iters),
           static_cast<unsigned long long>(check));
    return 0;
}

// A result read back after a kernel, in order, a word of each page (what
// the CPU does with the bytes is not what is measured): the time from the
// first read to the last, and the same bytes copied explicitly from device
// memory into private memory and read there.
int child_readback() {
    const size_t n = 64u << 20, words = n / sizeof(uint64_t);
    auto *p = static_cast<uint64_t *>(adsmAlloc(n));
    adsm::kernel<touch_all> touch("bench.touch_all");
    auto grid = adsm::blocks_for(n / 4096, 256);
    for (size_t i = 0; i < words; ++i) p[i] = i;
    touch(grid, 256, reinterpret_cast<uint8_t *>(p), n, uint8_t(1));
    adsm::sync();
    const uint64_t f0 = counter(adsm::Counter::read_faults), w0 = counter(adsm::Counter::read_ahead_windows);
    uint64_t check = 0;
    constexpr size_t kStride = 4096 / sizeof(uint64_t);
    auto t0 = Clock::now();
    for (size_t i = 0; i < words; i += kStride) check += p[i];
    const double ms = ns_since(t0) / 1e6;
    const uint64_t faults = counter(adsm::Counter::read_faults) - f0;
    const uint64_t windows = counter(adsm::Counter::read_ahead_windows) - w0;
    void *dev = nullptr;
    std::vector<uint64_t> host(words, 1);
    if (adsmDeviceAlloc(&dev, n) != adsmSuccess || adsmCopyToDevice(dev, host.data(), n) != adsmSuccess) return 1;
    t0 = Clock::now();
    if (adsmCopyToHost(host.data(), dev, n) != adsmSuccess) return 1;
    for (size_t i = 0; i < words; i += kStride) check += host[i];
    const double explicit_ms = ns_since(t0) / 1e6;
    printf("ms=%.2f explicit_ms=%.2f faults=%llu windows=%llu check=%llu\n", ms, explicit_ms,
           static_cast<unsigned long long>(faults), static_cast<unsigned long long>(windows),
           static_cast<unsigned long long>(check));
    return 0;
}

// ---------------------------------------------------------------- parent

std::map<std::string, double> run_child(const char *self, const std::vector<std::string> &args,
                                        const std::vector<std::string> &env) {
    return bench::run_child(self, args, env);
}

double mib(double b) { return b / (1 << 20); }

void bench_fault(const char *self) {
    std::vector<double> bare, rt, alt;
    const std::vector<std::string> env = {"ADSM_PROTOCOL=rolling", "ADSM_BLOCK_SIZE=4K", "ADSM_ROLLING_SIZE=1048576",
                                          "ADSM_DIRTY_TRACKING=mprotect"};
    for (int i = 0; i < 3; ++i) {
        bare.push_back(run_child(self, {"fault-bare"}, {})["ns"]);
        rt.push_back(run_child(self, {"fault-runtime"}, env)["ns"]);
        alt.push_back(run_child(self, {"fault-runtime-alt-stack"}, env)["ns"]);
    }
    std::sort(bare.begin(), bare.end());
    std::sort(rt.begin(), rt.end());
    std::sort(alt.begin(), alt.end());
    printf("\nper-fault cost (write to a read-only page, median of 3 runs of %zu faults)\n", kFaultPages);
    printf("  bare SIGSEGV + mprotect      %8.0f ns\n", bare[1]);
    printf("  runtime (rolling, mprotect)  %8.0f ns   ratio %.2fx   (target <= 1.3x)\n", rt[1], rt[1] / bare[1]);
    printf("  same, alternate signal stack %8.0f ns   ratio %.2fx to the runtime without one\n", alt[1], alt[1] / rt[1]);
}

void bench_tracking(const char *self) {
    printf("\ndirty tracking, per written page (delta protocol, 4 KiB blocks, 16384 pages, mean of 5 rounds)\n");
    printf("  %-9s %12s %12s %14s %16s\n", "tracker", "write (ns)", "find (ns)", "tracking (ns)", "whole release (ns)");
    double tracking[2] = {0, 0}, with_release[2] = {0, 0};
    const char *names[2] = {"uffd", "mprotect"};
    for (int i = 0; i < 2; ++i) {
        // Page-sized blocks: both trackers then find single written pages
        // (with larger blocks the fault-based one gives up on pages early).
        auto kv = run_child(self, {"tracking"},
                            {"ADSM_PROTOCOL=delta", "ADSM_BLOCK_SIZE=4K", std::string("ADSM_DIRTY_TRACKING=") + names[i]});
        tracking[i] = kv["write_ns"] + kv["scan_ns"];
        with_release[i] = kv["write_ns"] + kv["release_ns"];
        printf("  %-9s %12.0f %12.0f %14.0f %16.0f\n", names[i], kv["write_ns"], kv["scan_ns"], tracking[i],
               kv["release_ns"]);
    }
    printf("  uffd / mprotect: %.2fx for tracking (the writes and finding them; target <= 0.3x),\n"
           "                   %.2fx with the whole release (the same copies for both)\n",
           tracking[0] / tracking[1], with_release[0] / with_release[1]);
}

void bench_bytes(const char *self) {
    printf("\nbytes moved on one 256 MiB object (block 256 KiB; min: least possible at the protocol's granularity)\n");
    printf("  %-9s %-9s %12s %12s %12s %8s\n", "scenario", "protocol", "h2d MiB", "d2h MiB", "min MiB", "ratio");
    for (const char *sc : {"write1", "scatter1", "read1", "rewrite"})
        for (const char *proto : {"batch", "lazy", "rolling", "delta"}) {
            auto kv = run_child(self, {"bytes", sc}, {std::string("ADSM_PROTOCOL=") + proto});
            double moved = std::string(sc) == "read1" ? kv["d2h"] : kv["h2d"];
            printf("  %-9s %-9s %12.1f %12.1f %12.1f %8.2f\n", sc, proto, mib(kv["h2d"]), mib(kv["d2h"]), mib(kv["min"]),
                   kv["min"] > 0 ? moved / kv["min"] : 0.0);
        }
    printf("  (write1: the CPU writes 1%% of the object in one piece between kernels; scatter1: it writes one byte\n"
           "   in each of 1%% of the pages, anywhere; read1: it reads 1%% of the pages after a sync; rewrite: it\n"
           "   writes everything.  The ratio compares the bytes moved in the scenario's direction.)\n");
}

void bench_readback(const char *self) {
    printf("\nreading a 64 MiB result back in order after a kernel, a word a page (block 256 KiB, median of 5 runs),\n"
           "with and without read-ahead, against copying it explicitly into private memory and reading it there\n");
    printf("  %-24s %-8s %-10s %8s %7s %8s %12s %12s %12s\n", "link", "protocol", "read-ahead", "ms", "faults",
           "windows", "explicit ms", "/ explicit", "/ without");
    struct Link {
        const char *label;
        std::vector<std::string> env;
    } links[] = {{"55 GB/s, 9.8 us a copy", {"ADSM_SIM_LINK_GBPS=55", "ADSM_SIM_LINK_LATENCY_US=2.7", "ADSM_SIM_SYNC_COPY_US=9.8"}},
                 {"12 GB/s + 10 us", {"ADSM_SIM_LINK_GBPS=12", "ADSM_SIM_LINK_LATENCY_US=10"}}};
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    for (const Link &l : links)
        for (const char *proto : {"rolling", "delta"}) {
            // Without read-ahead first, the baseline of the row after it.
            std::map<std::string, double> without;
            for (const char *ahead : {"0", "8M"}) {
                std::vector<std::string> env = l.env;
                env.push_back(std::string("ADSM_PROTOCOL=") + proto);
                env.push_back(std::string("ADSM_READ_AHEAD=") + ahead);
                std::vector<std::map<std::string, double>> runs;
                for (int i = 0; i < 5; ++i) runs.push_back(run_child(self, {"readback"}, env));
                std::sort(runs.begin(), runs.end(), [](auto &a, auto &b) { return a["ms"] < b["ms"]; });
                auto kv = runs[2];
                printf("  %-24s %-8s %-10s %8.2f %7.0f %8.0f %12.2f %11.2fx", l.label, proto, ahead, kv["ms"], kv["faults"],
                       kv["windows"], kv["explicit_ms"], ratio(kv["ms"], kv["explicit_ms"]));
                if (without.empty()) without = kv;
                else printf(" %11.2fx", ratio(kv["ms"], without["ms"]));
                printf("\n");
            }
        }
}

void bench_delta(const char *self) {
    printf("\ndelta against rolling (64 MiB, link 12 GB/s + 10 us, 20 iterations, per iteration, median of 3 runs)\n"
           "  sparse: the CPU updates 1%% of the pages, scattered, between kernels;\n"
           "  probes: after each sync the CPU does 2 ms of its own work, then reads the same 1%% of the output\n");
    printf("  %-8s %-20s %10s %10s %10s %8s\n", "workload", "protocol", "ms", "h2d MiB", "d2h MiB", "faults");
    for (const char *w : {"sparse", "probes"}) {
        double rolling_ms = 0;
        struct Config {
            const char *label, *proto, *tracking;
        } configs[] = {{"rolling (uffd)", "rolling", "uffd"},
                       {"rolling (mprotect)", "rolling", "mprotect"},
                       {"delta (uffd)", "delta", "uffd"},
                       {"delta (mprotect)", "delta", "mprotect"}};
        for (const Config &c : configs) {
            // The median of three runs by time.
            std::vector<std::map<std::string, double>> runs;
            for (int i = 0; i < 3; ++i)
                runs.push_back(run_child(self, {"delta", w},
                                         {std::string("ADSM_PROTOCOL=") + c.proto,
                                          std::string("ADSM_DIRTY_TRACKING=") + c.tracking, "ADSM_SIM_LINK_GBPS=12",
                                          "ADSM_SIM_LINK_LATENCY_US=10"}));
            std::sort(runs.begin(), runs.end(), [](auto &a, auto &b) { return a["ms"] < b["ms"]; });
            auto &kv = runs[1];
            if (std::string(c.label) == "rolling (uffd)") rolling_ms = kv["ms"];
            printf("  %-8s %-20s %10.2f %10.2f %10.2f %8.0f", w, c.label, kv["ms"], mib(kv["h2d"]), mib(kv["d2h"]),
                   kv["faults"]);
            if (std::string(c.proto) == "delta" && rolling_ms > 0) printf("   %.2fx rolling's time", kv["ms"] / rolling_ms);
            printf("\n");
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--child")) {
        std::string what = argv[2];
        if (what == "fault-bare") return child_fault_bare();
        if (what == "fault-runtime") return child_fault_runtime(false);
        if (what == "fault-runtime-alt-stack") return child_fault_runtime(true);
        if (what == "tracking") return child_tracking();
        if (what == "bytes" && argc == 4) return child_bytes(argv[3]);
        if (what == "delta" && argc == 4) return child_delta(argv[3]);
        if (what == "readback") return child_readback();
        return 2;
    }
    std::vector<std::string> which(argv + 1, argv + argc);
    if (which.empty()) which = {"fault", "tracking", "bytes", "delta", "readback"};
    printf("adsm protocol benchmarks (sim device)\n");
    for (const auto &w : which) {
        if (w == "fault") bench_fault(argv[0]);
        else if (w == "tracking") bench_tracking(argv[0]);
        else if (w == "bytes") bench_bytes(argv[0]);
        else if (w == "delta") bench_delta(argv[0]);
        else if (w == "readback") bench_readback(argv[0]);
        else {
            fprintf(stderr, "unknown benchmark %s (fault, tracking, bytes, delta, readback)\n", w.c_str());
            return 2;
        }
    }
    return 0;
}
