// The workloads' kernels for adsm-device-server (--kernels), so that the
// suite runs on a remote device (scripts/bench --device remote).  The
// workloads register their kernels here as the library loads, by name,
// with the server's adsmRegisterKernel; nothing else of the suite runs in
// the server.
#include "workload.h"

namespace wl {

void register_kernel(const KernelDesc *k) {
    adsmKernel_t h = nullptr;
    if (adsmRegisterKernel(k->name, k->host_function, k->arity, k->sizes, &h) != adsmSuccess)
        fprintf(stderr, "adsm-workload-kernels: kernel '%s' was not registered\n", k->name);
}

// The workloads themselves run in the client only.
Register::Register(const char *, const char *, Result (*)(Gpu &, const std::string &)) {}
void timed_begin() {}
void timed_end() {}
size_t scaled(size_t full, size_t) { return full; }

}  // namespace wl
