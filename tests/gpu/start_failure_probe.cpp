// Starts the runtime on a driver's double and reports how the start went:
//
//   start_failure_probe LIBRARY PREFIX [--list] KIND...
//
// LIBRARY is the double as the runtime loads it (libcuda.so.1), PREFIX its
// functions' prefix (fake_cuda: fake_cuda_held counts what the program
// holds of each KIND, fake_cuda_entry lists the entry points called).  The
// double's FAKE_*_FAIL variable, set by the caller, makes one driver call
// fail.  Prints "probe: started" (and with --list, each entry point the
// start called and how often, a line each) or "probe: start failed: " and
// the error, on unbuffered output.  Exits 0
// when the start succeeded, or failed with a reported error having given
// back every KIND, the host mirror and its threads; 1 otherwise.
#include <adsm.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "start_check.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: start_failure_probe LIBRARY PREFIX [--list] KIND...\n");
        return 2;
    }
    const std::string prefix = argv[2];
    int a = 3;
    const bool list = a < argc && strcmp(argv[a], "--list") == 0;
    a += list;
    // Loaded first, to be asked before the runtime loads it.
    void *lib = dlopen(argv[1], RTLD_NOW);
    auto held = reinterpret_cast<long (*)(const char *)>(lib ? dlsym(lib, (prefix + "_held").c_str()) : nullptr);
    auto entry = reinterpret_cast<const char *(*)(int, long *)>(lib ? dlsym(lib, (prefix + "_entry").c_str()) : nullptr);
    if (!held || !entry) {
        fprintf(stderr, "%s is not a driver double with %s_held and %s_entry\n", argv[1], prefix.c_str(), prefix.c_str());
        return 2;
    }
    setvbuf(stdout, nullptr, _IONBF, 0);  // in order with the runtime's messages
    std::vector<long> before;
    for (int k = a; k < argc; ++k) before.push_back(held(argv[k]));
    const int threads_before = device_test::threads_in_process();

    int devices = 0;
    adsmError_t e = adsmGetDeviceCount(&devices);
    if (e == adsmSuccess) {
        printf("probe: started\n");
        long calls = 0;
        for (int i = 0; list && entry(i, &calls); ++i) printf("%s %ld\n", entry(i, &calls), calls);
        return 0;
    }
    printf("probe: start failed: %s: %s\n", adsmGetErrorString(e), adsmGetLastErrorDetail());
    bool ok = *adsmGetLastErrorDetail() != '\0';
    if (!ok) printf("the failure has no detail\n");
    for (int k = a; k < argc; ++k)
        if (long now = held(argv[k]); now != before[k - a]) {
            printf("%s held: %ld before the start, %ld after it failed\n", argv[k], before[k - a], now);
            ok = false;
        }
    if (int n = device_test::host_mirrors_left()) {
        printf("%d mappings or files of the host mirror left\n", n);
        ok = false;
    }
    if (int n = device_test::threads_settled_to(threads_before); n != threads_before) {
        printf("%d threads before the start, %d after it failed\n", threads_before, n);
        ok = false;
    }
    _exit(ok ? 0 : 1);  // (past the exit handlers: the start's leftovers are what was measured)
}
