// A remote device on loopback against sim and against libfabric's own
// numbers, side by side in one run.  It starts adsm-device-server itself
// (with this benchmark's kernels), serving sim devices and cpu ones, and
// runs each measurement in a process of its own (child_run.h):
//   latency: an empty adsmCall + adsmSync that names no object;
//     also with client and server spinning 100 us before they sleep, and
//     with neither;
//   transfers: a 64 MiB object sent whole at each call and brought back
//     whole at each sync (the batch protocol), as bytes per second each way;
// and fi_pingpong (libfabric-bin) on the same provider, 64-byte messages for
// latency and 1 MiB ones for bandwidth, and plain RMA measured as fabtests'
// fi_rma_bw does (adsm-bench-rma-baseline: Debian has no fi_rma_bw).
// With --cuda, the same on a server hosting this machine's NVIDIA GPU (the
// client's data lands in the server's staging memory by RMA and goes on to
// the GPU from there) and on the GPU reached directly, with the kernels of
// FATBIN (the examples' cuda_kernels.fatbin: `scale`, run on no elements).
//
//   adsm-bench-remote [--cuda FATBIN]
#include <adsm.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "child_run.h"

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

adsmKernel_t kernel(const char *name) {
    adsmKernel_t k = nullptr;
    if (adsmGetKernel(name, &k) != adsmSuccess) {
        fprintf(stderr, "%s: %s\n", name, adsmGetLastErrorDetail());
        exit(1);
    }
    return k;
}

// The GPU module's `scale` (float *v, float factor, unsigned n), run on no
// elements; or, without a module, the host functions the server registered
// by name (bench.empty and bench.touch).
struct Kernels {
    adsmKernel_t empty = nullptr, touch = nullptr;
    bool gpu = false;
};

bool find_kernels(Kernels *k) {
    if (const char *path = getenv("ADSM_BENCH_MODULE")) {
        adsmModule_t m = nullptr;
        if (adsmLoadModule(path, &m) != adsmSuccess || adsmModuleGetKernel(m, "scale", &k->empty) != adsmSuccess) {
            fprintf(stderr, "%s: %s\n", path, adsmGetLastErrorDetail());
            return false;
        }
        k->touch = k->empty;
        k->gpu = true;
        return true;
    }
    if (!dlopen(ADSM_BENCH_KERNELS, RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return false;
    }
    k->empty = kernel("bench.empty"), k->touch = kernel("bench.touch");
    return true;
}

int child() {
    Kernels k;
    if (!find_kernels(&k)) return 1;
    float *none = nullptr, one = 1.0f;
    unsigned zero = 0;
    void *empty_args[] = {&none, &one, &zero};
    void **no_args = k.gpu ? empty_args : nullptr;
    // Latency: nothing to release or acquire.
    // The median of 11 batches: a loaded machine's stalls land in a few.
    const int calls = 200;
    for (int i = 0; i < 50; ++i) (void)(adsmCallWith(k.empty, {1, 1, 1}, {1, 1, 1}, no_args, nullptr, 0) || adsmSync());
    std::vector<double> batches;
    for (int b = 0; b < 11; ++b) {
        auto t0 = Clock::now();
        for (int i = 0; i < calls; ++i)
            if (adsmCallWith(k.empty, {1, 1, 1}, {1, 1, 1}, no_args, nullptr, 0) != adsmSuccess ||
                adsmSync() != adsmSuccess)
                return 1;
        batches.push_back(us_since(t0) / calls);
    }
    std::nth_element(batches.begin(), batches.begin() + 5, batches.end());
    double call_us = batches[5];
    // Transfers: the whole object goes at each call and comes back at each sync.
    const size_t bytes = 64u << 20;
    auto *v = static_cast<char *>(adsmAlloc(bytes));
    if (!v) return 1;
    memset(v, 1, bytes);
    void *host_args[] = {&v}, *gpu_args[] = {&v, &one, &zero};
    void **args = k.gpu ? gpu_args : host_args;
    adsmObjectUse use = {v, 0};
    const int rounds = 10;
    double call_total = 0, sync_total = 0;
    for (int r = 0; r < rounds + 1; ++r) {
        v[r] = 2;  // written between calls
        auto a = Clock::now();
        if (adsmCallWith(k.touch, {1, 1, 1}, {1, 1, 1}, args, &use, 1) != adsmSuccess) return 1;
        double c = us_since(a);
        auto b = Clock::now();
        if (adsmSync() != adsmSuccess) return 1;
        double s = us_since(b);
        if (r == 0) continue;  // the first commits the device memory
        call_total += c, sync_total += s;
    }
    printf("call_us=%.2f h2d_gbps=%.3f d2h_gbps=%.3f\n", call_us, bytes * rounds / (call_total * 1e3),
           bytes * rounds / (sync_total * 1e3));
    return 0;
}

// Starts argv[0] with its output to a pipe and stderr to /dev/null, and
// reads the port from the first line it prints ("... :PORT"): the port, or
// -1 (*pid is the child either way, once forked).
int start_listening(const std::vector<std::string> &argv, pid_t *pid) {
    int out[2];
    if (pipe(out) != 0) return -1;
    *pid = fork();
    if (*pid == 0) {
        dup2(out[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        std::vector<char *> args;
        for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(out[1]);
    if (*pid < 0) {
        close(out[0]);
        return -1;
    }
    FILE *in = fdopen(out[0], "r");
    char line[128] = {};
    bool ok = fgets(line, sizeof line, in) != nullptr;
    fclose(in);
    const char *colon = strrchr(line, ':');
    return ok && colon ? atoi(colon + 1) : -1;
}

// The server, on loopback with a fresh key; its port, or 0.
struct Server {
    pid_t pid = -1;
    std::string key, port;
    bool start(const std::string &binary, const char *device, const std::vector<std::string> &more = {}) {
        char dir[] = "/tmp/adsm-bench-remote-XXXXXX";
        if (!mkdtemp(dir)) return false;
        key = std::string(dir) + "/key";
        FILE *f = fopen(key.c_str(), "w");
        if (!f) return false;
        fprintf(f, "benchmark key %d %ld\n", getpid(), static_cast<long>(time(nullptr)));
        fclose(f);
        chmod(key.c_str(), 0600);
        // (Its log is not the table's business.)
        std::vector<std::string> argv{binary, "--key",   key,    "--address",        "127.0.0.1", "--port",
                                      "0",    "--memory", "1G", "--kernels", ADSM_BENCH_KERNELS, "--device", device};
        argv.insert(argv.end(), more.begin(), more.end());
        int p = start_listening(argv, &pid);
        if (p <= 0) return false;
        port = std::to_string(p);
        return true;
    }
    ~Server() {
        if (pid > 0) {
            kill(pid, SIGTERM);
            waitpid(pid, nullptr, 0);
        }
        if (!key.empty()) {
            unlink(key.c_str());
            rmdir(key.substr(0, key.rfind('/')).c_str());
        }
    }
};

// fi_pingpong's MB/sec and usec/xfer for messages of `size` bytes, or -1s.
std::pair<double, double> pingpong(const char *size, int iterations, int port) {
    std::string it = std::to_string(iterations), p = std::to_string(port);
    pid_t srv = fork();
    if (srv == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execlp("fi_pingpong", "fi_pingpong", "-p", "tcp", "-e", "msg", "-I", it.c_str(), "-S", size, "-B", p.c_str(),
               static_cast<char *>(nullptr));
        _exit(127);
    }
    usleep(300 * 1000);
    std::string cmd = "fi_pingpong -p tcp -e msg -I " + it + " -S " + size + " -P " + p + " 127.0.0.1 2>/dev/null";
    FILE *f = popen(cmd.c_str(), "r");
    double mbps = -1, us = -1;
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        char b[32], s[32], a[32], tot[32], t[32];
        double m, u;
        if (sscanf(line, "%31s %31s %31s %31s %31s %lf %lf", b, s, a, tot, t, &m, &u) == 7) mbps = m, us = u;
    }
    if (f) pclose(f);
    kill(srv, SIGTERM);
    waitpid(srv, nullptr, 0);
    return {mbps, us};
}

// What plain RMA reaches (adsm-bench-rma-baseline, fi_rma_bw's method) with
// `size`-byte operations, `window` in flight: {write, read} GB/s, or -1s.
std::pair<double, double> rma_alone(const std::string &binary, size_t size, size_t window) {
    pid_t srv = -1;
    const int port = start_listening({binary, "serve", "0", "tcp"}, &srv);
    double w = -1, r = -1;
    if (port > 0) {
        std::string cmd = binary + " measure 127.0.0.1 " + std::to_string(port) + " tcp " + std::to_string(size) + " " +
                          std::to_string(window);
        FILE *f = popen(cmd.c_str(), "r");
        char line[128];
        while (f && fgets(line, sizeof line, f)) sscanf(line, "write_gbps=%lf read_gbps=%lf", &w, &r);
        if (f) pclose(f);
    }
    if (srv > 0) {
        kill(srv, SIGTERM);
        waitpid(srv, nullptr, 0);
    }
    return {w, r};
}

}  // namespace

// The GPU's lines: on a server hosting it, against the GPU reached directly
// and against plain RMA (the bound of the transfers' network leg).
bool gpu_lines(const char *argv0, const std::string &server_binary, const char *fatbin, double rma_w, double rma_r) {
    Server gpu_server;
    if (!gpu_server.start(server_binary, "cuda")) {
        fprintf(stderr, "adsm-bench-remote: cannot start %s --device cuda\n", server_binary.c_str());
        return false;
    }
    const std::string module = std::string("ADSM_BENCH_MODULE=") + fatbin;
    auto local = bench::run_child(argv0, {"child"}, {"ADSM_DEVICE=cuda", "ADSM_PROTOCOL=batch", module});
    auto remote = bench::run_child(argv0, {"child"},
                                   {"ADSM_DEVICE=remote", "ADSM_PROTOCOL=batch", "ADSM_REMOTE=127.0.0.1:" + gpu_server.port,
                                    "ADSM_REMOTE_KEY=" + gpu_server.key, module});
    if (local.empty() || remote.empty()) return false;
    printf("\na GPU: on a device server hosting it (data staged on the server by RMA, then copied to the GPU) and "
           "reached directly\n");
    printf("  %-34s %12s %12s\n", "", "cuda", "remote cuda");
    printf("  %-34s %10.1fus %10.1fus\n", "empty call + sync (latency)", local["call_us"], remote["call_us"]);
    printf("  %-34s %9.2fGB/s %9.2fGB/s\n", "64 MiB object to the device", local["h2d_gbps"], remote["h2d_gbps"]);
    printf("  %-34s %9.2fGB/s %9.2fGB/s\n", "64 MiB object back to the host", local["d2h_gbps"], remote["d2h_gbps"]);
    if (rma_w > 0 && rma_r > 0)
        printf("  remote cuda transfers / RMA alone: to the device %.2fx, back %.2fx\n", remote["h2d_gbps"] / rma_w,
               remote["d2h_gbps"] / rma_r);
    return true;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "--child")) return child();
    const char *fatbin = nullptr;
    if (argc == 3 && !strcmp(argv[1], "--cuda")) {
        fatbin = argv[2];
    } else if (argc != 1) {
        fprintf(stderr, "usage: adsm-bench-remote [--cuda FATBIN]\n");
        return 2;
    }
    std::string self = argv[0];
    std::string server_binary = self.substr(0, self.rfind('/') + 1) + "adsm-device-server";
    if (const char *s = getenv("ADSM_DEVICE_SERVER")) server_binary = s;
    // Serving sim devices, and cpu ones (each client's kernels in a process
    // of its own, its RMA landing in the memory they use).
    // And sim devices again with client and server spinning before they
    // sleep, and with neither: what spinning (ADSM_REMOTE_SPIN_US,
    // --spin-us) buys on this machine.
    Server server, cpu_server, spinning_server, asleep_server;
    if (!server.start(server_binary, "sim") || !cpu_server.start(server_binary, "cpu") ||
        !spinning_server.start(server_binary, "sim", {"--spin-us", "100"}) ||
        !asleep_server.start(server_binary, "sim", {"--spin-us", "0"})) {
        fprintf(stderr, "adsm-bench-remote: cannot start %s\n", server_binary.c_str());
        return 1;
    }
    auto on = [&](const Server &s, const char *spin_us = nullptr) {
        std::vector<std::string> env{"ADSM_DEVICE=remote", "ADSM_PROTOCOL=batch", "ADSM_REMOTE=127.0.0.1:" + s.port,
                                     "ADSM_REMOTE_KEY=" + s.key};
        if (spin_us) env.push_back(std::string("ADSM_REMOTE_SPIN_US=") + spin_us);
        return bench::run_child(argv[0], {"child"}, env);
    };
    auto sim = bench::run_child(argv[0], {"child"}, {"ADSM_DEVICE=sim", "ADSM_PROTOCOL=batch"});
    auto remote = on(server), remote_cpu = on(cpu_server), spinning = on(spinning_server, "100"),
         asleep = on(asleep_server, "0");
    if (sim.empty() || remote.empty() || remote_cpu.empty() || spinning.empty() || asleep.empty()) return 1;
    auto small = pingpong("64", 2000, 47611), large = pingpong("1048576", 200, 47612);
    // RMA alone, in the remote device's chunks (512 KiB, 8 in flight) and in
    // fi_rma_bw's window of 64: the better of the two bounds the device.
    const std::string rma_binary = self.substr(0, self.rfind('/') + 1) + "adsm-bench-rma-baseline";
    auto own = rma_alone(rma_binary, 512u << 10, 8), wide = rma_alone(rma_binary, 1u << 20, 64);
    const double rma_w = std::max(own.first, wide.first), rma_r = std::max(own.second, wide.second);
    printf("remote device on loopback (tcp provider) against sim and against fi_pingpong on the same provider\n");
    printf("  %-34s %12s %12s %12s %12s\n", "", "sim", "remote", "remote cpu", "fi_pingpong");
    printf("  %-34s %10.1fus %10.1fus %10.1fus ", "empty call + sync (latency)", sim["call_us"], remote["call_us"],
           remote_cpu["call_us"]);
    if (small.second > 0) printf("%10.1fus   (one 64-byte message each way: x2 = %.1f us)\n", small.second, 2 * small.second);
    else printf("%12s\n", "n/a");
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("  %-34s %12s %10.1fus   (%ld CPUs here: the default spins %s)\n", "  waits spin 100 us first", "",
           spinning["call_us"], cpus, cpus >= 4 ? "100 us" : "not at all");
    printf("  %-34s %12s %10.1fus   (spinning saves %.0f%% on a quiet machine)\n", "  waits sleep at once", "",
           asleep["call_us"], 100 * (1 - spinning["call_us"] / asleep["call_us"]));
    printf("  %-34s %9.2fGB/s %9.2fGB/s %9.2fGB/s ", "64 MiB object to the device", sim["h2d_gbps"], remote["h2d_gbps"],
           remote_cpu["h2d_gbps"]);
    if (large.first > 0) printf("%9.2fGB/s   (1 MiB messages)\n", large.first / 1000);
    else printf("%12s\n", "n/a");
    printf("  %-34s %9.2fGB/s %9.2fGB/s %9.2fGB/s\n", "64 MiB object back to the host", sim["d2h_gbps"],
           remote["d2h_gbps"], remote_cpu["d2h_gbps"]);
    if (rma_w > 0 && rma_r > 0) {
        printf("  %-34s %12s %12s %12s  %9.2fGB/s written, %.2fGB/s read\n", "RMA alone (fi_rma_bw's method)", "", "",
               "", rma_w, rma_r);
        printf("    (512 KiB x 8 in flight: %.2f / %.2f GB/s; 1 MiB x 64: %.2f / %.2f GB/s)\n", own.first, own.second,
               wide.first, wide.second);
        printf("  remote transfers / RMA alone: to the device %.2fx, back %.2fx (cpu: %.2fx, %.2fx)\n",
               remote["h2d_gbps"] / rma_w, remote["d2h_gbps"] / rma_r, remote_cpu["h2d_gbps"] / rma_w,
               remote_cpu["d2h_gbps"] / rma_r);
    }
    if (large.first > 0)
        printf("  remote transfers / fi_pingpong bandwidth: to the device %.2fx, back %.2fx\n",
               remote["h2d_gbps"] / (large.first / 1000), remote["d2h_gbps"] / (large.first / 1000));
    if (fatbin && !gpu_lines(argv[0], server_binary, fatbin, rma_w, rma_r)) return 1;
    return 0;
}
