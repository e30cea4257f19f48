#include "interpose/gpu_symbols.h"

#include <dlfcn.h>
#include <string.h>

#include "os/real_libc.h"

namespace adsm::interpose {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local int tls_forwarding = 0;

template <class F>
GpuSymbol *search(F &&match) {
    const GpuFamily families[] = {
#ifdef ADSM_HAVE_CUDA
        cuda_driver_family(),
        cuda_launch_family(),
        cuda_copy_family(),
        cuda_hint_family(),
        cuda_graph_family(),
        cuda_runtime_family(),
#endif
        level_zero_family(),
        level_zero_table_family(),
    };
    for (const GpuFamily &f : families)
        for (size_t i = 0; i < f.count; ++i)
            if (match(f.symbols[i])) return &f.symbols[i];
    return nullptr;
}

}  // namespace

GpuForwarding::GpuForwarding() { ++tls_forwarding; }
GpuForwarding::~GpuForwarding() { --tls_forwarding; }
bool GpuForwarding::active() { return tls_forwarding > 0; }

void *driver_function(const char *library, const char *name, bool *library_loaded) {
    if (library_loaded) *library_loaded = false;
    if (void *p = os::real_dlsym(RTLD_NEXT, name)) return p;
    void *lib = library ? dlopen(library, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    if (!lib) return nullptr;
    if (library_loaded) *library_loaded = true;
    void *p = os::real_dlsym(lib, name);
    dlclose(lib);
    return p;
}

void *gpu_real(GpuSymbol &s) {
    if (void *p = s.real.load(std::memory_order_acquire)) return p;
    if (s.absent.load(std::memory_order_relaxed)) return nullptr;
    bool loaded = false;
    void *p = driver_function(s.library, s.name, &loaded);
    if (p == s.wrapper()) p = nullptr;
    // The driver is loaded and lacks it (an older version): final.
    if (!p && loaded) s.absent.store(true, std::memory_order_relaxed);
    if (p) s.real.store(p, std::memory_order_release);
    return p;
}

GpuSymbol *find_gpu_symbol(const char *name) {
    return search([name](const GpuSymbol &s) { return strcmp(s.name, name) == 0; });
}

void *gpu_wrapper_of(const char *library, void *real) {
    GpuSymbol *s = search([&](GpuSymbol &s) { return strcmp(s.library, library) == 0 && gpu_real(s) == real; });
    return s ? s->wrapper() : nullptr;
}

void adopt_table_entry(GpuSymbol &s, void *entry) {
    if (!entry || entry == s.wrapper() || s.from_table.exchange(true, std::memory_order_acq_rel)) return;
    s.real.store(entry, std::memory_order_release);
}


}  // namespace adsm::interpose
