#include "api/exit_reports.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/gpu_bridge.h"
#include "api/preload.h"
#include "api/runtime.h"
#include "backend/device_process.h"
#include "gc/collector.h"
#include "os/error_text.h"
#include "os/kept_stderr.h"
#include "os/real_libc.h"
#include "support/config.h"
#include "support/inside.h"
#include "support/log.h"
#include "support/profile.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {

void print_stats() {
    Runtime *rt = started_runtime();
    if (!rt || forked_child()) return;
    Inside in;  // the report's own allocations and writes stay private
    std::vector<RegionSummary> live;
    rt->table.for_each_live([&](Region &r) { live.push_back(r.summary<RegionSummary>(false)); });
    if (!rt->config.stats_json.empty()) {
        std::string path = file_for_process(rt->config.stats_json);
        FILE *f = fopen(path.c_str(), "w");
        if (!f) {
            ADSM_LOG(error, "cannot write the statistics to %s: %s", path.c_str(), os::error_text(errno));
            return;
        }
        stats().write_json(f,
                           {{"runtime", "started"},
                            {"device", device_names(*rt)},
                            {"protocol", rt->protocol->name()},
                            {"block_size", std::to_string(rt->config.block_size)},
                            {"dirty_tracking", dirty_tracking_name(*rt)}},
                           live);
        fclose(f);
        return;
    }
    fflush(stdout);  // the program's own output first, even through a pipe
    FILE *out = report_stream();
    char heading[256];
    snprintf(heading, sizeof heading, "device %s, protocol %s, block %zu KiB, dirty tracking %s", device_names(*rt).c_str(),
             rt->protocol->name(), rt->config.block_size / 1024, dirty_tracking_name(*rt));
    stats().print(out, heading, live);
    if (rt->devices.size() > 1)
        for (size_t i = 0; i < rt->devices.size(); ++i)
            fprintf(out, "  device %zu (%s): %.1f of %.1f MiB in use at exit\n", i, rt->devices[i]->name(),
                    static_cast<double>(rt->devices[i]->used()) / (1 << 20),
                    static_cast<double>(rt->devices[i]->capacity()) / (1 << 20));
    if (gc::Collector *c = rt->collector.load(std::memory_order_acquire)) {
        adsmGcStats s;
        c->stats(&s);
        fprintf(out,
                "  collector: %llu collections (%llu minor), longest pause %.3f ms (minor %.3f ms), %.3f ms in all; "
                "heap %.1f MiB, %.1f MiB live after the last; %llu objects freed, %llu finalizers run, %llu weak links "
                "cleared\n",
                static_cast<unsigned long long>(s.collections), static_cast<unsigned long long>(s.minor_collections),
                static_cast<double>(s.max_pause_ns) / 1e6, static_cast<double>(s.max_minor_pause_ns) / 1e6,
                static_cast<double>(s.total_pause_ns) / 1e6, static_cast<double>(s.heap_bytes) / (1 << 20),
                static_cast<double>(s.live_bytes) / (1 << 20), static_cast<unsigned long long>(s.objects_freed),
                static_cast<unsigned long long>(s.finalizers_run), static_cast<unsigned long long>(s.weak_cleared));
    }
}

namespace {

bool launched_by_adsm_run() {
    const char *pid = os::env(kLaunchedPidVariable);
    return pid && strtoll(pid, nullptr, 10) == static_cast<long long>(getpid());
}

const char *routed_apis(const Config &c) {
    using gpu_bridge::Api;
    const bool cuda = gpu_bridge::routes(c, Api::cuda), level_zero = gpu_bridge::routes(c, Api::level_zero);
    return cuda && level_zero ? "CUDA and Level Zero" : cuda ? "CUDA" : level_zero ? "Level Zero" : "none";
}

void say_no_statistics(const Config &c, const char *failure) {
    fflush(stdout);  // the program's own output first
    FILE *out = report_stream();
    if (failure) {
        fprintf(out, "adsm statistics: none; the runtime could not start in %s (pid %d): %s\n",
                program_invocation_short_name, static_cast<int>(getpid()), failure);
        return;
    }
    fprintf(out,
            "adsm statistics: none; the runtime did not start in %s (pid %d): it allocated no shared memory and made "
            "no adsm call\n",
            program_invocation_short_name, static_cast<int>(getpid()));
    uint64_t threshold = UINT64_MAX;
    malloc_threshold_from(os::env("ADSM_MALLOC_THRESHOLD"), true, c.device.c_str(), &threshold);
    if (threshold == UINT64_MAX)
        fprintf(out, "  malloc stays the C library's on %s (ADSM_MALLOC_THRESHOLD=off%s; --threshold 1M shares it)",
                c.device.c_str(), os::env("ADSM_MALLOC_THRESHOLD") ? "" : ", the default there");
    else
        fprintf(out, "  malloc returns shared memory for %llu bytes or more (ADSM_MALLOC_THRESHOLD)",
                static_cast<unsigned long long>(threshold));
    fprintf(out, "; GPU calls routed: %s (ADSM_GPU_APIS=%s, device %s)\n", routed_apis(c), c.gpu_apis.c_str(),
            c.device.c_str());
}

// A file only where none is yet: a child of this process that did start
// the runtime and wrote the same file keeps its statistics.
void write_unstarted_json(const Config &c, const char *failure) {
    std::string path = file_for_process(c.stats_json);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && st.st_size > 0) return;
    FILE *f = fopen(path.c_str(), "w");
    if (!f) {
        fprintf(report_stream(), "adsm: cannot write the statistics to %s: %s\n", path.c_str(), os::error_text(errno));
        return;
    }
    std::string devices;
    for (const std::string &d : c.devices) devices += (devices.empty() ? "" : ",") + d;
    stats().write_json(f,
                       {{"runtime", failure ? "failed to start" : "not started"},
                        {"device", devices},
                        {"protocol", c.protocol},
                        {"block_size", std::to_string(c.block_size)},
                        {"dirty_tracking", "-"}},
                       {});
    fclose(f);
}

// A program that never started the runtime (it used no shared memory, or
// the start failed) would otherwise leave no trace and no statistics at
// all where it asked for them.
void report_without_runtime() {
    if (started_runtime() || forked_child() || in_device_process()) return;
    if (const char *pattern = os::env("ADSM_TRACE"); pattern && *pattern) trace::write_unused(pattern);
    Config c;
    // (A malformed variable was reported where the program first read it.)
    if (parse_config(os::env, &c) != adsmSuccess || !c.stats) return;
    const char *failure = start_failure();
    if (!c.stats_json.empty()) write_unstarted_json(c, failure);
    else if (launched_by_adsm_run()) say_no_statistics(c, failure);
}
__attribute__((constructor)) void watch_exit_without_runtime() { atexit(report_without_runtime); }

// Whether this process has a report to make on stderr at exit: the
// statistics' table, the profile.
bool reports_at_exit() {
    if (forked_child() || in_device_process()) return false;
    if (profile::on()) return true;
    if (Runtime *rt = started_runtime()) return rt->config.stats && rt->config.stats_json.empty();
    if (!os::env("ADSM_STATS") || !launched_by_adsm_run()) return false;
    Config c;
    return parse_config(os::env, &c) == adsmSuccess && c.stats && c.stats_json.empty();
}

}  // namespace

void preload::before_stderr_closes() {
    if (reports_at_exit()) os::keep_stderr();
}

}  // namespace adsm
