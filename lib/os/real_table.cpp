#include "os/real_table.h"

#include <dlfcn.h>

#include <atomic>

#include "os/real_libc.h"

extern "C" {
// Hidden: the library and a program that links the runtime's objects each
// resolve their own entries.
extern adsm::os::RealFunction __start_adsm_real_functions[] __attribute__((visibility("hidden")));
extern adsm::os::RealFunction __stop_adsm_real_functions[] __attribute__((visibility("hidden")));
}

namespace adsm::os {
namespace {

enum State : int { kUnresolved, kResolving, kResolved };
std::atomic<int> g_state{kUnresolved};

// Set while this thread looks something up: the C library's lookups may
// allocate, and an allocation must not start another lookup.
__attribute__((tls_model("initial-exec"))) thread_local bool tls_looking_up = false;

using DlsymFn = void *(*)(void *, const char *);
std::atomic<DlsymFn> g_dlsym{nullptr};

// dlsym is the one function not found with dlsym: a call to dlsym from the
// runtime binds to the preload's own (libadsm exports one, to hand out GPU
// wrappers), which needs this table.  dlvsym is not interposed, and finds
// the C library's by version (2.34 moved it into libc proper).
DlsymFn libc_dlsym() {
    if (DlsymFn fn = g_dlsym.load(std::memory_order_acquire)) return fn;
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    // Before 2.34, the first version of each architecture's C library.
#if defined(__aarch64__)
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#else
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#endif
    DlsymFn fn = reinterpret_cast<DlsymFn>(p);
    g_dlsym.store(fn, std::memory_order_release);
    return fn;
}

// RTLD_NEXT is relative to the object this code is linked into: libadsm
// when preloaded, the program when a test links the runtime's objects.
void *look_up(const char *name) {
    DlsymFn fn = libc_dlsym();
    return fn ? fn(RTLD_NEXT, name) : nullptr;
}

class LookingUp {
public:
    LookingUp() : was_(tls_looking_up) { tls_looking_up = true; }
    ~LookingUp() { tls_looking_up = was_; }
    LookingUp(const LookingUp &) = delete;
    LookingUp &operator=(const LookingUp &) = delete;

private:
    bool was_;
};

void store(RealFunction &f, void *p) { __atomic_store_n(&f.address, p, __ATOMIC_RELAXED); }

__attribute__((constructor(101))) void resolve_at_load() { resolve_real_functions(); }

}  // namespace

void resolve_real_functions() {
    int expected = kUnresolved;
    if (!g_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) return;
    {
        LookingUp guard;
        for (RealFunction *f = __start_adsm_real_functions; f != __stop_adsm_real_functions; ++f)
            store(*f, look_up(f->name));
        dlerror();  // a name no library defines is no error of the program's
    }
    g_state.store(kResolved, std::memory_order_release);
}

void *resolve_real(RealFunction &f) {
    if (tls_looking_up) return __atomic_load_n(&f.address, __ATOMIC_RELAXED);
    resolve_real_functions();
    void *p = __atomic_load_n(&f.address, __ATOMIC_RELAXED);
    // Another thread is resolving the table: rather than wait for it (it
    // may need a lock this thread holds), look this entry up too.
    if (!p && g_state.load(std::memory_order_acquire) != kResolved) {
        LookingUp guard;
        p = look_up(f.name);
        store(f, p);
    }
    return p;
}

void *real_dlsym(void *handle, const char *name) {
    DlsymFn fn;
    {
        LookingUp guard;
        fn = libc_dlsym();
    }
    return fn ? fn(handle, name) : nullptr;
}

}  // namespace adsm::os
