// The GPU API functions the preload wraps (CUDA driver and runtime, Level
// Zero), kept in one table so that every way a program can reach one (a
// direct call, dlsym, cuGetProcAddress, a Level Zero function table) ends in
// the same wrapper, and the wrapper reaches the driver's own function
// whichever way that was found.
//
// A wrapper is an exported function named as the driver's; GPU_REAL(name)
// calls the driver's.  The driver's function is found on first use: after
// libadsm in lookup order, or in the driver library when the program loaded
// it privately (dlopen without RTLD_GLOBAL, as a static CUDA runtime does),
// or as handed over by an intercepted lookup or a driver's function table.
#pragma once

#include <atomic>
#include <cstddef>

#include "api/gpu_bridge.h"

namespace adsm::interpose {

// The address of function F, as the table keeps it: a function that
// returns it, since a cast to void * cannot be made at compile time, and a
// table built by code at load cost every process under the preload a page
// fault per page of it.
template <auto F>
void *address_of() {
    return reinterpret_cast<void *>(F);
}

struct GpuSymbol {
    const char *name;
    void *(*wrapper_address)();
    const char *library;  // the driver library's soname
    gpu_bridge::Api api;
    std::atomic<void *> real{nullptr};
    std::atomic<bool> absent{false};  // the driver is loaded and lacks it
    std::atomic<bool> from_table{false};
    void *wrapper() const { return wrapper_address(); }
};

// A family's table, defined next to its wrappers.
struct GpuFamily {
    GpuSymbol *symbols;
    size_t count;
};
GpuFamily cuda_driver_family();
GpuFamily cuda_launch_family();
GpuFamily cuda_copy_family();
GpuFamily cuda_hint_family();
GpuFamily cuda_graph_family();
GpuFamily cuda_runtime_family();
GpuFamily level_zero_family();
GpuFamily level_zero_table_family();

// The driver's function for s, or nullptr when the driver is not loaded.
void *gpu_real(GpuSymbol &s);
// Any other function of a driver library (one the preload does not wrap).
void *driver_function(const char *library, const char *name, bool *library_loaded = nullptr);

// The table entry for a name.
GpuSymbol *find_gpu_symbol(const char *name);

// The wrapper of a function of `library` that the driver handed out (by
// cuGetProcAddress, say), or nullptr when the preload does not wrap it.
void *gpu_wrapper_of(const char *library, void *real);

// The driver's function for s as its own function table holds it: it
// becomes the one every path to the wrapper calls, in place of one found
// by name, whose exported stub may dispatch through tables that hold the
// wrapper.  The first table's entry is kept; a later one is the same
// driver's.
void adopt_table_entry(GpuSymbol &s, void *entry);

// Calls made by a wrapper into the driver may come back into other wrappers
// (the CUDA runtime calls the driver); those pass straight through.
class GpuForwarding {
public:
    GpuForwarding();
    ~GpuForwarding();
    GpuForwarding(const GpuForwarding &) = delete;
    GpuForwarding &operator=(const GpuForwarding &) = delete;
    static bool active();
};

// Whether a wrapper should act: the API is routed, and this is the program's
// own call, not the driver calling itself.
inline bool gpu_routed(gpu_bridge::Api api) { return !GpuForwarding::active() && gpu_bridge::routed(api); }

}  // namespace adsm::interpose

// A family file lists its wrappers once, X(name) each, and gets from that an
// index per wrapper, the table, its GpuFamily accessor, and GPU_REAL(name).
#define ADSM_GPU_ID(name) name,
#define ADSM_GPU_ENTRY(name) {#name, &::adsm::interpose::address_of<&::name>, kLibrary, kApi},
#define ADSM_GPU_FAMILY(accessor, list)                                                       \
    namespace {                                                                              \
    enum class GpuId : size_t { list(ADSM_GPU_ID) };                                         \
    constinit ::adsm::interpose::GpuSymbol g_gpu_symbols[] = {list(ADSM_GPU_ENTRY)};         \
    }                                                                                        \
    ::adsm::interpose::GpuFamily adsm::interpose::accessor() {                              \
        return {g_gpu_symbols, sizeof g_gpu_symbols / sizeof g_gpu_symbols[0]};              \
    }
#define GPU_REAL(name) \
    reinterpret_cast<decltype(&::name)>(::adsm::interpose::gpu_real(g_gpu_symbols[static_cast<size_t>(GpuId::name)]))
