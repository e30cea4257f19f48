// adsm-workloads: runs one workload variant and prints one JSON line with
// its timed wall-clock seconds and whether its output verified.
//
//   adsm-workloads --list
//   adsm-workloads WORKLOAD explicit|adsm [SCRATCH_DIR]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "workload.h"

namespace wl {
namespace {
std::vector<Workload> &registry() {
    static std::vector<Workload> v;
    return v;
}
std::chrono::steady_clock::time_point g_begin, g_end;
}  // namespace

const std::vector<Workload> &all() { return registry(); }
Register::Register(const char *name, const char *what, Result (*run)(Variant, const std::string &)) {
    registry().push_back({name, what, run});
}
void timed_begin() { g_begin = std::chrono::steady_clock::now(); }
void timed_end() { g_end = std::chrono::steady_clock::now(); }

}  // namespace wl

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (const wl::Workload &w : wl::all()) printf("%-14s %s\n", w.name, w.what);
        return 0;
    }
    if (argc < 3 || argc > 4 || (strcmp(argv[2], "explicit") && strcmp(argv[2], "adsm"))) {
        fprintf(stderr, "usage: adsm-workloads --list | WORKLOAD explicit|adsm [SCRATCH_DIR]\n");
        return 2;
    }
    const wl::Workload *w = nullptr;
    for (const wl::Workload &c : wl::all())
        if (!strcmp(c.name, argv[1])) w = &c;
    if (!w) {
        fprintf(stderr, "adsm-workloads: no workload '%s' (--list shows them)\n", argv[1]);
        return 2;
    }
    wl::Variant v = !strcmp(argv[2], "adsm") ? wl::Variant::adsm : wl::Variant::explicit_copies;
    // Start the runtime and its device before timing: both variants pay it once.
    adsm::sync();
    wl::Result r;
    try {
        r = w->run(v, argc == 4 ? argv[3] : "/tmp");
    } catch (const std::exception &e) {
        fprintf(stderr, "adsm-workloads: %s %s: %s\n", argv[1], argv[2], e.what());
        return 1;
    }
    double secs = std::chrono::duration<double>(wl::g_end - wl::g_begin).count();
    double scale = std::fabs(r.reference) > 1 ? std::fabs(r.reference) : 1;
    bool ok = std::isfinite(r.checksum) && std::fabs(r.checksum - r.reference) <= r.tolerance * scale;
    printf("{\"workload\": \"%s\", \"variant\": \"%s\", \"seconds\": %.6f, \"verified\": %s, \"checksum\": %.6g, "
           "\"reference\": %.6g}\n",
           w->name, argv[2], secs, ok ? "true" : "false", r.checksum, r.reference);
    return ok ? 0 : 1;
}
