// adsm-workloads: runs one workload as one variant and prints one JSON line
// with its timed wall-clock seconds and whether its output verified.
//
//   adsm-workloads --list | --variants
//   adsm-workloads [--module FILE|driver-double] [--scale FRACTION] WORKLOAD VARIANT [SCRATCH_DIR]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "variant.h"
#include "workload.h"

namespace wl {
namespace {
std::vector<Workload> &registry() {
    static std::vector<Workload> v;
    return v;
}
std::vector<Variant> &variants() {
    static std::vector<Variant> v;
    return v;
}
std::vector<const KernelDesc *> &kernels() {
    static std::vector<const KernelDesc *> v;
    return v;
}
std::chrono::steady_clock::time_point g_begin, g_end;
double g_scale = 1;

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::string s{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    if (!f.good() && !f.eof()) throw std::runtime_error("cannot read the module " + path);
    if (s.empty()) throw std::runtime_error("the module " + path + " is missing or empty");
    return s;
}
}  // namespace

const std::vector<Workload> &all() { return registry(); }
const std::vector<Variant> &all_variants() { return variants(); }
const std::vector<const KernelDesc *> &all_kernels() { return kernels(); }
Register::Register(const char *name, const char *what, Result (*run)(Gpu &, const std::string &)) {
    registry().push_back({name, what, run});
}
RegisterVariant::RegisterVariant(const char *name, const char *what, std::unique_ptr<Gpu> (*make)(const Options &)) {
    variants().push_back({name, what, make});
}
void register_kernel(const KernelDesc *k) { kernels().push_back(k); }
void timed_begin() { g_begin = std::chrono::steady_clock::now(); }
void timed_end() { g_end = std::chrono::steady_clock::now(); }
size_t scaled(size_t full, size_t unit) {
    size_t n = static_cast<size_t>(static_cast<double>(full) * g_scale) / unit * unit;
    return n < unit ? unit : n;
}

adsmKernel_t host_kernel(const KernelDesc &k) {
    adsmKernel_t h = nullptr;
    adsm::check(adsmRegisterKernel(k.name, k.host_function, k.arity, k.sizes, &h));
    return h;
}

std::string driver_double_module() {
    std::string image = "fake-module:";
    for (const KernelDesc *k : kernels()) {
        char entry[160];
        int at = snprintf(entry, sizeof entry, "%s%s@%p:", image.size() > 12 ? ";" : "", k->name,
                          reinterpret_cast<void *>(k->host_function));
        for (unsigned i = 0; i < k->arity; ++i)
            at += snprintf(entry + at, sizeof entry - static_cast<size_t>(at), "%s%zu", i ? "," : "", k->sizes[i]);
        image += entry;
    }
    return image;
}

}  // namespace wl

namespace {

int usage() {
    fprintf(stderr, "usage: adsm-workloads --list | --variants\n"
                    "       adsm-workloads [--module FILE|driver-double] [--scale FRACTION] WORKLOAD VARIANT [SCRATCH_DIR]\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (const wl::Workload &w : wl::all()) printf("%-14s %s\n", w.name, w.what);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--variants")) {
        for (const wl::Variant &v : wl::all_variants()) printf("%-10s %s\n", v.name, v.what);
        return 0;
    }
    wl::Options opts;
    std::string module_path;
#ifdef ADSM_WORKLOADS_MODULE
    module_path = ADSM_WORKLOADS_MODULE;  // the kernels nvcc built with this program
#endif
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "--module")) {
        module_path = argv[a + 1];
        a += 2;
    }
    if (a + 1 < argc && !strcmp(argv[a], "--scale")) {
        char *end = nullptr;
        wl::g_scale = strtod(argv[a + 1], &end);
        if (*end || !(wl::g_scale > 0 && wl::g_scale <= 1)) {
            fprintf(stderr, "adsm-workloads: --scale takes a fraction in (0, 1], not '%s'\n", argv[a + 1]);
            return 2;
        }
        a += 2;
    }
    if (argc - a < 2 || argc - a > 3) return usage();
    const char *workload = argv[a], *variant = argv[a + 1];
    const wl::Workload *w = nullptr;
    for (const wl::Workload &c : wl::all())
        if (!strcmp(c.name, workload)) w = &c;
    const wl::Variant *v = nullptr;
    for (const wl::Variant &c : wl::all_variants())
        if (!strcmp(c.name, variant)) v = &c;
    if (!w) {
        fprintf(stderr, "adsm-workloads: no workload '%s' (--list shows them)\n", workload);
        return 2;
    }
    if (!v) {
        fprintf(stderr, "adsm-workloads: no variant '%s' here (--variants shows them)\n", variant);
        return 2;
    }
    wl::Result r;
    try {
        if (module_path == "driver-double") opts.module_image = wl::driver_double_module();
        else if (!module_path.empty()) opts.module_image = wl::read_file(module_path);
        std::unique_ptr<wl::Gpu> gpu = v->make(opts);
        r = w->run(*gpu, argc - a == 3 ? argv[a + 2] : "/tmp");
    } catch (const std::exception &e) {
        fprintf(stderr, "adsm-workloads: %s %s: %s\n", workload, variant, e.what());
        return 1;
    }
    double secs = std::chrono::duration<double>(wl::g_end - wl::g_begin).count();
    double scale = std::fabs(r.reference) > 1 ? std::fabs(r.reference) : 1;
    bool ok = std::isfinite(r.checksum) && std::fabs(r.checksum - r.reference) <= r.tolerance * scale;
    printf("{\"workload\": \"%s\", \"variant\": \"%s\", \"seconds\": %.6f, \"verified\": %s, \"checksum\": %.9g, "
           "\"reference\": %.9g}\n",
           w->name, variant, secs, ok ? "true" : "false", r.checksum, r.reference);
    return ok ? 0 : 1;
}
