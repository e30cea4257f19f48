// dlsym: a program (or a statically linked CUDA runtime) that looks up a
// wrapped GPU function by name gets the wrapper, so that calls through the
// pointer reach the runtime as direct calls do.  Every other lookup goes to
// the C library untouched.
//
// dlsym(RTLD_NEXT, ...) resolves relative to its caller, which the C
// library finds from its return address.  So the pass-through is a tail
// call (this file is compiled with sibling-call optimisation): the C
// library then sees the program's return address, not ours.  A test checks
// that RTLD_NEXT still means "after the caller".  (How the runtime itself
// finds the C library's dlsym is in os/real_table.cpp.)
#include <dlfcn.h>

#include "interpose/gpu_symbols.h"
#include "interpose/interceptor.h"
#include "os/real_libc.h"

namespace {

// Cheap first test: every wrapped name starts so.
inline bool maybe_gpu(const char *name) {
    return (name[0] == 'c' && name[1] == 'u') || (name[0] == 'z' && name[1] == 'e') || name[0] == '_';
}

struct Found {
    bool handled;
    void *ptr;
};

Found gpu_lookup(void *handle, const char *name) {
    using namespace adsm::interpose;
    GpuSymbol *s = find_gpu_symbol(name);
    if (!s) return {false, nullptr};
    void *real = adsm::os::real_dlsym(handle, name);
    // The lookup found libadsm's export first (RTLD_DEFAULT, the program's
    // handle): the driver's is the next one, and without a driver there is
    // none, as without the preload.
    if (real == s->wrapper()) real = adsm::os::real_dlsym(RTLD_NEXT, name);
    if (!real) return {true, nullptr};
    if (!adsm::gpu_bridge::routed(s->api)) return {true, real};
    void *none = nullptr;
    s->real.compare_exchange_strong(none, real, std::memory_order_acq_rel);
    return {true, s->wrapper()};
}

}  // namespace

INTERCEPTOR(void *, dlsym, void *handle, const char *name) {
    // The C library declares name non-null; a program may still pass null,
    // and the C library, not this test, should be the one to answer it.
    const char *checked = name;
    asm("" : "+r"(checked));
    if (handle != RTLD_NEXT && checked && maybe_gpu(checked)) {
        Found f = gpu_lookup(handle, name);
        if (f.handled) return f.ptr;
    }
    return REAL(dlsym)(handle, name);
}
