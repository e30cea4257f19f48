// Starts the runtime on a driver's double, and with --alloc makes, fills and
// frees one object, or with --call has a kernel scale one of FLOATS floats,
// and reports how that went:
//
//   start_failure_probe LIBRARY PREFIX [--list] [--alloc BYTES | --call FLOATS] KIND...
//
// LIBRARY is the double as the runtime loads it (libcuda.so.1), PREFIX its
// functions' prefix (fake_cuda: fake_cuda_held counts what the program
// holds of each KIND, fake_cuda_entry lists the entry points called).  The
// double's FAKE_*_FAIL variable, set by the caller, makes one driver call
// fail.  Prints, on unbuffered output in order with the runtime's messages,
// "probe: started" or "probe: start failed: " and the error, then with
// --alloc "probe: allocated" or "probe: allocation failed: " and the error,
// and "probe: freed, all given back" when the free left the double holding
// what it held before the allocation; with --call "probe: called, every
// element scaled" or "probe: call failed: " and the step and error, the
// object holding each element scaled or as it was, never anything else (a
// read the runtime cannot serve raises SIGBUS, saying why);
// with --list, last, each entry point called and how often, a line each.
// Exits 0 when each step succeeded, or the one that failed reported an
// error having given back every KIND it took (a start, its host mirror and
// threads too); 1 otherwise.
#include <adsm.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device_test_kernels.h"
#include "start_check.h"

namespace {

long (*g_held)(const char *);
const char *(*g_entry)(int, long *);
std::vector<const char *> g_kinds;

std::vector<long> held_now() {
    std::vector<long> v;
    for (const char *k : g_kinds) v.push_back(g_held(k));
    return v;
}

// Whether the step that failed reported why and gave back what it took.
bool gave_back(const std::vector<long> &before, const char *step) {
    bool ok = *adsmGetLastErrorDetail() != '\0';
    if (!ok) printf("the failure has no detail\n");
    const std::vector<long> now = held_now();
    for (size_t k = 0; k < g_kinds.size(); ++k)
        if (now[k] != before[k]) {
            printf("%s held: %ld before the %s, %ld after it failed\n", g_kinds[k], before[k], step, now[k]);
            ok = false;
        }
    return ok;
}

// A kernel scales an object of n floats by 2 (the doubles run kernels as
// the host functions their modules name): every step reports an error or
// succeeds, and the object holds each element either scaled or as it was.
bool call_a_kernel(unsigned n) {
    auto *x = static_cast<float *>(adsmAlloc(n * sizeof(float)));
    auto failed = [](const char *step) {
        printf("probe: call failed: %s: %s: %s\n", step, adsmGetErrorString(adsmPeekAtLastError()),
               adsmGetLastErrorDetail());
        return *adsmGetLastErrorDetail() != '\0';
    };
    if (!x) return failed("allocation");
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    const std::string image = device_test::module_image();
    adsmModule_t m = nullptr;
    adsmKernel_t k = nullptr;
    float f = 2;
    unsigned count = n;
    void *args[] = {&x, &f, &count};
    const size_t sizes[] = {sizeof x, sizeof f, sizeof count};
    bool ok = true, done = false;
    if (adsmLoadModuleData(image.c_str(), image.size() + 1, &m) != adsmSuccess) ok = failed("module");
    else if (adsmModuleGetKernelWithParams(m, "scale", 3, sizes, &k) != adsmSuccess) ok = failed("kernel");
    else if (adsmCall(k, {n / 256, 1, 1}, {256, 1, 1}, args) != adsmSuccess) ok = failed("launch");
    else if (adsmSync() != adsmSuccess) ok = failed("sync");
    else done = true;
    unsigned scaled = 0, other = 0;
    for (unsigned i = 0; i < n; ++i) {
        scaled += x[i] == 2.0f * static_cast<float>(i) && i;
        other += x[i] != 2.0f * static_cast<float>(i) && x[i] != static_cast<float>(i);
    }
    if (other || (done && scaled != n - 1)) {
        printf("the object lost data: %u elements are neither scaled nor as they were, %u of %u scaled\n", other,
               scaled, n - 1);
        ok = false;
    }
    if (done && ok) printf("probe: called, every element scaled\n");
    if (adsmError_t e = adsmFree(x); e != adsmSuccess)
        printf("probe: the object cannot be freed: %s: %s\n", adsmGetErrorString(e), adsmGetLastErrorDetail());
    return ok;
}

void list_calls() {
    long calls = 0;
    for (int i = 0; g_entry(i, &calls); ++i) printf("%s %ld\n", g_entry(i, &calls), calls);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: start_failure_probe LIBRARY PREFIX [--list] [--alloc BYTES | --call FLOATS] KIND...\n");
        return 2;
    }
    const std::string prefix = argv[2];
    int a = 3;
    const bool list = a < argc && strcmp(argv[a], "--list") == 0;
    a += list;
    size_t alloc = 0;
    if (a + 1 < argc && strcmp(argv[a], "--alloc") == 0) {
        alloc = strtoull(argv[a + 1], nullptr, 0);
        a += 2;
    }
    unsigned call = 0;
    if (a + 1 < argc && strcmp(argv[a], "--call") == 0) {
        call = static_cast<unsigned>(strtoul(argv[a + 1], nullptr, 0));
        a += 2;
    }
    g_kinds.assign(argv + a, argv + argc);
    // Loaded first, to be asked before the runtime loads it.
    void *lib = dlopen(argv[1], RTLD_NOW);
    g_held = reinterpret_cast<long (*)(const char *)>(lib ? dlsym(lib, (prefix + "_held").c_str()) : nullptr);
    g_entry = reinterpret_cast<const char *(*)(int, long *)>(lib ? dlsym(lib, (prefix + "_entry").c_str()) : nullptr);
    if (!g_held || !g_entry) {
        fprintf(stderr, "%s is not a driver double with %s_held and %s_entry\n", argv[1], prefix.c_str(), prefix.c_str());
        return 2;
    }
    setvbuf(stdout, nullptr, _IONBF, 0);
    // (Each exit is past the exit handlers: the leftovers are what is measured.)
    bool ok = true;
    const std::vector<long> before_start = held_now();
    const int threads_before = device_test::threads_in_process();
    int devices = 0;
    if (adsmError_t e = adsmGetDeviceCount(&devices); e != adsmSuccess) {
        printf("probe: start failed: %s: %s\n", adsmGetErrorString(e), adsmGetLastErrorDetail());
        ok = gave_back(before_start, "start");
        if (int n = device_test::host_mirrors_left()) {
            printf("%d mappings or files of the host mirror left\n", n);
            ok = false;
        }
        if (int n = device_test::threads_settled_to(threads_before); n != threads_before) {
            printf("%d threads before the start, %d after it failed\n", threads_before, n);
            ok = false;
        }
        _exit(ok ? 0 : 1);
    }
    printf("probe: started\n");
    if (alloc) {
        const std::vector<long> before_alloc = held_now();
        if (auto *p = static_cast<unsigned char *>(adsmAlloc(alloc)); !p) {
            printf("probe: allocation failed: %s: %s\n", adsmGetErrorString(adsmPeekAtLastError()),
                   adsmGetLastErrorDetail());
            ok = gave_back(before_alloc, "allocation");
        } else {
            printf("probe: allocated\n");
            memset(p, 0x5a, alloc);
            for (size_t i = 0; i < alloc; i += 4096) ok &= p[i] == 0x5a;
            if (!ok) printf("the object does not hold what was written\n");
            if (adsmError_t e = adsmFree(p); e != adsmSuccess) {
                printf("the object cannot be freed: %s: %s\n", adsmGetErrorString(e), adsmGetLastErrorDetail());
                ok = false;
            } else if (const std::vector<long> now = held_now(); now == before_alloc) {
                printf("probe: freed, all given back\n");
            } else {
                for (size_t k = 0; k < g_kinds.size(); ++k)
                    if (now[k] != before_alloc[k])
                        printf("probe: freed; %s held: %ld before the allocation, %ld now\n", g_kinds[k],
                               before_alloc[k], now[k]);
            }
        }
    }
    if (call) ok = call_a_kernel(call);
    if (list) list_calls();
    _exit(ok ? 0 : 1);
}
