// Foundation benchmark: what one allocation and one empty kernel round trip
// cost, on each back-end.  Not a test: it prints a table.
//
//   adsm-bench-foundation            runs every device in a child process each
//   adsm-bench-foundation --device D  measures D and prints one result line
#include <adsm.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

void empty_kernel(const adsm::thread_index &) {}

// Mean ns per adsmAlloc+adsmFree of `size` bytes.
double alloc_free(size_t size, int iters) {
    for (int i = 0; i < 1000; ++i) adsmFree(adsmAlloc(size));  // warm up
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        void *p = adsmAlloc(size);
        if (!p) {
            fprintf(stderr, "adsmAlloc failed: %s\n", adsmGetLastErrorDetail());
            exit(1);
        }
        adsmFree(p);
    }
    return ns_since(t0) / iters;
}

// Aggregate alloc+free pairs per second with `threads` threads.
double alloc_free_threads(int threads, int iters) {
    std::vector<std::thread> ts;
    auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([iters] {
            for (int i = 0; i < iters; ++i) adsmFree(adsmAlloc(4096));
        });
    for (auto &t : ts) t.join();
    return double(threads) * iters / (ns_since(t0) / 1e9);
}

struct RoundTrip {
    double mean_us, p50_us, p99_us;
};

// Empty adsmCall + adsmSync.
RoundTrip round_trip(int iters) {
    adsm::kernel<empty_kernel> k("bench.empty");
    for (int i = 0; i < 200; ++i) {
        k(1, 1);
        adsm::sync();
    }
    std::vector<double> us(iters);
    auto all = Clock::now();
    for (int i = 0; i < iters; ++i) {
        auto t0 = Clock::now();
        k(1, 1);
        adsm::sync();
        us[i] = ns_since(t0) / 1000;
    }
    double mean = ns_since(all) / 1000 / iters;
    std::sort(us.begin(), us.end());
    return {mean, us[iters / 2], us[iters * 99 / 100]};
}

int measure(const char *device) {
    setenv("ADSM_DEVICE", device, 1);
    adsmDeviceInfo info;
    if (adsmGetDeviceInfo(&info) != adsmSuccess) {
        fprintf(stderr, "%s: %s\n", device, adsmGetLastErrorDetail());
        return 1;
    }
    double a4k = alloc_free(4096, 100000);
    double a64k = alloc_free(64 << 10, 50000);
    double a1m = alloc_free(1 << 20, 20000);
    double mt = alloc_free_threads(8, 20000);
    RoundTrip rt = round_trip(20000);
    printf("%s %.0f %.0f %.0f %.0f %.2f %.2f %.2f\n", device, a4k, a64k, a1m, mt, rt.mean_us, rt.p50_us, rt.p99_us);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--device")) return measure(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--device sim|cpu]\n", argv[0]);
        return 2;
    }
    printf("adsm foundation benchmark (%u CPUs)\n\n", std::thread::hardware_concurrency());
    printf("%-6s %12s %12s %12s %14s %12s %10s %10s\n", "device", "alloc+free", "alloc+free", "alloc+free",
           "8 threads", "call+sync", "p50", "p99");
    printf("%-6s %12s %12s %12s %14s %12s %10s %10s\n", "", "4 KiB (ns)", "64 KiB (ns)", "1 MiB (ns)", "(pairs/s)",
           "mean (us)", "(us)", "(us)");
    int rc = 0;
    for (const char *dev : {"sim", "cpu"}) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]);
            execl("/proc/self/exe", argv[0], "--device", dev, static_cast<char *>(nullptr));
            _exit(127);
        }
        close(fds[1]);
        char line[512] = {};
        ssize_t n = read(fds[0], line, sizeof line - 1);
        close(fds[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        char name[16];
        double a4k, a64k, a1m, mt, mean, p50, p99;
        if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
            sscanf(line, "%15s %lf %lf %lf %lf %lf %lf %lf", name, &a4k, &a64k, &a1m, &mt, &mean, &p50, &p99) != 8) {
            printf("%-6s failed\n", dev);
            rc = 1;
            continue;
        }
        printf("%-6s %12.0f %12.0f %12.0f %14.0f %12.2f %10.2f %10.2f\n", name, a4k, a64k, a1m, mt, mean, p50, p99);
    }
    printf("\ntargets on a 2-core machine: sim call+sync <= 20 us; 4 KiB alloc+free <= 10000 ns\n");
    return rc;
}
