// The cuda back-end against hand-written CUDA on the same GPU, side by side
// in one run.  A round trip (the CPU writes an array, a kernel updates it,
// the CPU reads it all) written four ways: explicit copies from pinned
// buffers, explicit copies from pageable buffers, managed memory, and adsm
// under each protocol; and the cost of an empty launch and wait, bare and
// through adsmCall/adsmSync.  Each adsm protocol runs in a child process
// of its own (the runtime reads ADSM_PROTOCOL once).
//
//   adsm-bench-cuda FATBIN [MiB=256] [rounds=5]
#include <adsm.h>
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void check_cu(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s\n", what, name);
    exit(1);
}

void check_adsm(adsmError_t e, const char *what) {
    if (e == adsmSuccess) return;
    fprintf(stderr, "%s: %s (%s)\n", what, adsmGetErrorString(e), adsmGetLastErrorDetail());
    exit(1);
}

// The CPU's part of a round: write every element, later read every one
// (integers, so both run at memory speed).
void cpu_write(unsigned *v, size_t n, int round) {
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned>(i) + static_cast<unsigned>(round);
}
uint64_t cpu_read(const unsigned *v, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += v[i];
    return s;
}
uint64_t expected_sum(size_t n, int round) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += static_cast<unsigned>(i) + static_cast<unsigned>(round) + 1u;
    return s;
}

struct Gpu {
    CUcontext ctx;
    CUmodule mod;
    CUfunction increment, empty;
    CUstream stream;
};

Gpu open_gpu(const char *fatbin) {
    Gpu g{};
    check_cu(cuInit(0), "cuInit");
    CUdevice dev;
    check_cu(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check_cu(cuDevicePrimaryCtxRetain(&g.ctx, dev), "cuDevicePrimaryCtxRetain");
    check_cu(cuCtxSetCurrent(g.ctx), "cuCtxSetCurrent");
    check_cu(cuModuleLoad(&g.mod, fatbin), "cuModuleLoad");
    check_cu(cuModuleGetFunction(&g.increment, g.mod, "increment"), "increment");
    check_cu(cuModuleGetFunction(&g.empty, g.mod, "empty_kernel"), "empty_kernel");
    check_cu(cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return g;
}

void launch_increment(const Gpu &g, CUdeviceptr p, size_t n) {
    void *args[] = {&p, &n};
    check_cu(cuLaunchKernel(g.increment, 1024, 1, 1, 256, 1, 1, 0, g.stream, args, nullptr), "increment");
}

// One timed round trip per call; returns ms, checks the sum.
using RoundFn = double (*)(const Gpu &, size_t, int, void *);

struct Explicit {
    unsigned *host;
    CUdeviceptr dev;
};

double round_explicit(const Gpu &g, size_t n, int round, void *state) {
    auto *s = static_cast<Explicit *>(state);
    auto t = Clock::now();
    cpu_write(s->host, n, round);
    check_cu(cuMemcpyHtoDAsync(s->dev, s->host, n * sizeof(unsigned), g.stream), "HtoD");
    launch_increment(g, s->dev, n);
    check_cu(cuMemcpyDtoHAsync(s->host, s->dev, n * sizeof(unsigned), g.stream), "DtoH");
    check_cu(cuStreamSynchronize(g.stream), "sync");
    uint64_t sum = cpu_read(s->host, n);
    double ms = ms_since(t);
    if (sum != expected_sum(n, round)) fprintf(stderr, "explicit: wrong sum\n"), exit(1);
    return ms;
}

double round_managed(const Gpu &g, size_t n, int round, void *state) {
    auto *p = static_cast<unsigned *>(state);
    auto t = Clock::now();
    cpu_write(p, n, round);
    launch_increment(g, reinterpret_cast<CUdeviceptr>(p), n);
    check_cu(cuStreamSynchronize(g.stream), "sync");
    uint64_t sum = cpu_read(p, n);
    double ms = ms_since(t);
    if (sum != expected_sum(n, round)) fprintf(stderr, "managed: wrong sum\n"), exit(1);
    return ms;
}

double run_rounds(const Gpu &g, size_t n, int rounds, RoundFn fn, void *state) {
    fn(g, n, 0, state);  // warm-up: first touch, module and copy-path set-up
    std::vector<double> t;
    for (int r = 1; r <= rounds; ++r) t.push_back(fn(g, n, r, state));
    return median(t);
}

// Bare launch + wait of an empty kernel, median of many, in microseconds.
double bare_launch_us(const Gpu &g) {
    std::vector<double> t;
    for (int i = 0; i < 2000; ++i) {
        auto s = Clock::now();
        check_cu(cuLaunchKernel(g.empty, 1, 1, 1, 32, 1, 1, 0, g.stream, nullptr, nullptr), "empty");
        check_cu(cuStreamSynchronize(g.stream), "sync");
        if (i >= 100) t.push_back(ms_since(s) * 1000);
    }
    return median(t);
}

// The adsm variant, in this process (a child, with its protocol set).
// The bare launch is measured here too, so both costs come from one process.
int adsm_child(const char *fatbin, size_t n, int rounds) {
    adsmModule_t m;
    check_adsm(adsmLoadModule(fatbin, &m), "adsmLoadModule");
    adsmKernel_t increment, empty;
    check_adsm(adsmModuleGetKernel(m, "increment", &increment), "increment");
    check_adsm(adsmModuleGetKernel(m, "empty_kernel", &empty), "empty_kernel");
    Gpu g = open_gpu(fatbin);  // the same primary context the runtime uses
    double bare_us = bare_launch_us(g);
    std::vector<double> call;
    for (int i = 0; i < 2000; ++i) {
        auto s = Clock::now();
        check_adsm(adsmCall(empty, {1, 1, 1}, {32, 1, 1}, nullptr), "adsmCall");
        check_adsm(adsmSync(), "adsmSync");
        if (i >= 100) call.push_back(ms_since(s) * 1000);
    }
    // The empty call is measured with no shared objects in the context;
    // the array comes after.
    auto *v = static_cast<unsigned *>(adsmAlloc(n * sizeof(unsigned)));
    if (!v) check_adsm(adsmGetLastError(), "adsmAlloc");
    std::vector<double> t;
    for (int r = 0; r <= rounds; ++r) {
        auto s = Clock::now();
        cpu_write(v, n, r);
        void *args[] = {&v, &n};
        check_adsm(adsmCall(increment, {1024, 1, 1}, {256, 1, 1}, args), "adsmCall");
        check_adsm(adsmSync(), "adsmSync");
        uint64_t sum = cpu_read(v, n);
        double ms = ms_since(s);
        if (sum != expected_sum(n, r)) fprintf(stderr, "adsm: wrong sum\n"), exit(1);
        if (r > 0) t.push_back(ms);
    }
    printf("%.3f %.2f %.2f\n", median(t), median(call), bare_us);
    return 0;
}

// Runs this program as an adsm child under `protocol`; fills ms and call_us.
bool run_adsm(const char *self, const char *fatbin, size_t mib, int rounds, const char *protocol, double *ms,
              double *call_us, double *bare_us) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        setenv("ADSM_PROTOCOL", protocol, 1);
        setenv("ADSM_DEVICE", "cuda", 1);
        std::string m = std::to_string(mib), r = std::to_string(rounds);
        execl(self, self, fatbin, m.c_str(), r.c_str(), "--adsm-child", nullptr);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = {};
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return got > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && sscanf(buf, "%lf %lf %lf", ms, call_us, bare_us) == 3;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FATBIN [MiB=256] [rounds=5]\n", argv[0]);
        return 2;
    }
    const char *fatbin = argv[1];
    size_t mib = argc > 2 ? strtoull(argv[2], nullptr, 10) : 256;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    size_t n = (mib << 20) / sizeof(unsigned);
    if (argc > 4 && strcmp(argv[4], "--adsm-child") == 0) return adsm_child(fatbin, n, rounds);
    // The baselines call the driver directly: the runtime's CUDA wrappers
    // (exported by libadsm.so, which this program links) stay out of it.
    setenv("ADSM_GPU_APIS", "off", 1);

    Gpu g = open_gpu(fatbin);
    char name[128] = {};
    CUdevice dev;
    cuDeviceGet(&dev, 0);
    cuDeviceGetName(name, sizeof name - 1, dev);
    printf("adsm-bench-cuda on %s: %zu MiB round trip (CPU writes, kernel adds 1, CPU reads), median of %d\n", name, mib,
           rounds);

    Explicit pinned{};
    check_cu(cuMemHostAlloc(reinterpret_cast<void **>(&pinned.host), n * sizeof(unsigned), 0), "cuMemHostAlloc");
    check_cu(cuMemAlloc(&pinned.dev, n * sizeof(unsigned)), "cuMemAlloc");
    double t_pinned = run_rounds(g, n, rounds, round_explicit, &pinned);
    Explicit pageable{static_cast<unsigned *>(malloc(n * sizeof(unsigned))), pinned.dev};
    double t_pageable = run_rounds(g, n, rounds, round_explicit, &pageable);
    CUdeviceptr managed;
    check_cu(cuMemAllocManaged(&managed, n * sizeof(unsigned), CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
    double t_managed = run_rounds(g, n, rounds, round_managed, reinterpret_cast<void *>(managed));
    cuMemFree(managed);
    cuMemFreeHost(pinned.host);
    cuMemFree(pinned.dev);
    free(pageable.host);

    printf("%-22s %10s %12s\n", "variant", "ms", "vs pinned");
    printf("%-22s %10.2f %11.2fx\n", "explicit pinned", t_pinned, 1.0);
    printf("%-22s %10.2f %11.2fx\n", "explicit pageable", t_pageable, t_pageable / t_pinned);
    printf("%-22s %10.2f %11.2fx\n", "managed", t_managed, t_managed / t_pinned);
    double best = 1e30;
    std::string calls;
    for (const char *p : {"batch", "lazy", "rolling", "delta"}) {
        double ms = 0, call_us = 0, bare_us = 0;
        if (!run_adsm(argv[0], fatbin, mib, rounds, p, &ms, &call_us, &bare_us)) {
            printf("adsm %-17s failed\n", p);
            continue;
        }
        best = std::min(best, ms);
        char line[128];
        snprintf(line, sizeof line, "\n  %-8s adsmCall+adsmSync %.2f us, bare cuLaunchKernel+sync %.2f us: %.2fx", p,
                 call_us, bare_us, call_us / bare_us);
        calls += line;
        printf("adsm %-17s %10.2f %11.2fx\n", p, ms, ms / t_pinned);
    }
    printf("best adsm vs explicit pinned: %.2fx; managed vs best adsm: %.2fx\n", best / t_pinned, t_managed / best);
    printf("empty launch and wait, median of 1900, in each protocol's process:%s\n", calls.c_str());
    return 0;
}
