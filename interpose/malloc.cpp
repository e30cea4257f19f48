// The malloc family.  Requests of at least ADSM_MALLOC_THRESHOLD bytes get
// shared memory, so that programs written for system-allocated unified
// memory hand malloc'd buffers straight to kernels; everything else (and
// every request the runtime cannot serve, and the C library's requests for
// its own buffers) goes on untouched to the allocator that comes next in
// lookup order: the C library's, or one preloaded after libadsm (jemalloc,
// tcmalloc), whose blocks must then be freed, resized and measured by that
// same allocator, so every function of the family passes on to its own
// next definition.
//
// The fast paths are one comparison each: a size against the threshold, a
// pointer against the shared window.  Calls made from inside the runtime
// (its own allocations, the fault handler) always pass on, so the runtime
// never re-enters itself.  While the next definitions are being looked up
// (interceptor.h), the lookups' own allocations come from a static arena.
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

#include "api/gpu_bridge.h"
#include "api/preload.h"
#include "interpose/bootstrap_arena.h"
#include "interpose/interceptor.h"
#include "interpose/page_aligned.h"
#include "os/loaded_objects.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "support/config.h"
#include "support/log.h"

DECLARE_REAL(malloc)
DECLARE_REAL(free)
DECLARE_REAL(memalign)
DECLARE_REAL(valloc)
DECLARE_REAL(pvalloc)
DECLARE_REAL(malloc_usable_size)

namespace {

using adsm::preload::in_window;

using adsm::interpose::bootstrap_alloc;
using adsm::interpose::in_bootstrap_arena;

std::atomic<size_t> g_threshold{SIZE_MAX};

// The code of the C library and the dynamic linker.  What they allocate for
// themselves (stdio and directory buffers, say) they hand to system calls
// from inside, where no interposer sees the call, so it must stay private:
// a closed shared page there would make the kernel fail with EFAULT.
struct CodeRange {
    uintptr_t lo = 0, hi = 0;
};
CodeRange g_private_callers[2];

int find_libc_code(struct dl_phdr_info *info, size_t, void *) {
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : nullptr;
    name = name ? name + 1 : info->dlpi_name;
    int slot = !name ? -1 : !strncmp(name, "libc.so", 7) ? 0 : !strncmp(name, "ld-linux", 8) ? 1 : -1;
    if (slot < 0) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        g_private_callers[slot].lo = info->dlpi_addr + ph.p_vaddr;
        g_private_callers[slot].hi = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    }
    return 0;
}

bool private_caller(void *ret) {
    uintptr_t a = reinterpret_cast<uintptr_t>(ret);
    for (const CodeRange &r : g_private_callers)
        if (a >= r.lo && a < r.hi) return true;
    return false;
}

// A GPU driver's own buffers stay private as well, once its API is routed:
// the CUDA driver hands them to its copy engine as host memory, and inside
// the window an address is a device address to it.  Asked only of large
// requests.
bool gpu_library_caller(void *ret) {
    if (!adsm::gpu_bridge::any_routed()) return false;
    const char *file = adsm::os::object_file(ret);
    if (!file) return false;
    const char *name = strrchr(file, '/');
    name = name ? name + 1 : file;
    return !strncmp(name, "libcuda.so", 10) || !strncmp(name, "libcudart.so", 12) || !strncmp(name, "libnvidia-", 10) ||
           !strncmp(name, "libze_", 6);
}

// Preloaded (rather than linked by a program that uses the API): the
// library's file is named in LD_PRELOAD.
bool preloaded() {
    const char *list = adsm::os::env("LD_PRELOAD");
    const char *file = list ? adsm::os::object_file(reinterpret_cast<void *>(&preloaded)) : nullptr;
    if (!file) return false;
    const char *self = strrchr(file, '/');
    self = self ? self + 1 : file;
    size_t len = strcspn(self, ".");  // "libadsm" of "libadsm.so.0"
    if (len == 0) return false;
    for (const char *p = list; *p; ++p)
        if ((p == list || p[-1] == '/' || p[-1] == ':' || p[-1] == ' ') && !strncmp(p, self, len) && p[len] == '.')
            return true;
    return false;
}

__attribute__((constructor(102))) void init_threshold() {
    namespace real = adsm::interpose::real;
    adsm::interpose::find_page_aligned_owner(adsm::os::real(real::free), adsm::os::real(real::memalign),
                                             adsm::os::real(real::valloc), adsm::os::real(real::pvalloc));
    dl_iterate_phdr(find_libc_code, nullptr);
    if (adsm::os::env("ADSM_SIM_SERVER")) return;  // the device process keeps to the C library
    uint64_t t;
    if (!adsm::malloc_threshold_from(adsm::os::env("ADSM_MALLOC_THRESHOLD"), preloaded(), adsm::os::env("ADSM_DEVICE"), &t))
        t = UINT64_MAX;
    g_threshold.store(t > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(t), std::memory_order_relaxed);
}

bool wants_shared(size_t n) {
    return n >= g_threshold.load(std::memory_order_relaxed) && !adsm::inside_runtime() && !adsm::preload::detached();
}

void tick() {
    if (adsm::preload::g_chaos.load(std::memory_order_relaxed)) adsm::preload::chaos_tick();
}

[[noreturn]] void invalid_pointer(const char *fn, void *p) {
    // As the C library does for a pointer it never handed out: stop here,
    // before anything is corrupted.
    adsm::log(adsm::LogLevel::error, "%s(): invalid pointer %p (inside shared memory, but not the start of a live allocation of the malloc family)", fn, p);
    abort();
}

// Shared memory for the program's request, or nullptr; `caller` is the
// program's return address.  (`room`: see adsm::preload::alloc.)
void *shared_or_libc(size_t n, bool zero, void *caller, size_t room = 0) {
    if (wants_shared(n) && !private_caller(caller) && !gpu_library_caller(caller)) {
        if (void *p = adsm::preload::alloc(n, zero, room)) {
            tick();
            return p;
        }
    }
    return nullptr;
}

// The next allocator's malloc, or the arena while it is being looked up.
void *next_malloc(size_t n) {
    if (auto fn = REAL(malloc)) return fn(n);
    return bootstrap_alloc(n);
}

void next_free(void *p) {
    if (in_bootstrap_arena(p)) return;
    // A block freed while the lookups are under way (none is known to be)
    // is left alone rather than given to an allocator it may not be from.
    if (auto fn = REAL(free)) fn(p);
}

size_t next_usable_size(void *p) {
    if (in_bootstrap_arena(p)) return adsm::interpose::bootstrap_size(p);
    auto fn = REAL(malloc_usable_size);
    return fn ? fn(p) : 0;
}

// An alignment that is not a power of two goes to the C library, which
// answers it as it would without the preload (rounds it up, or EINVAL).
bool shareable_alignment(size_t align) { return align && !(align & (align - 1)) && align <= adsm::os::kPageSize; }

// Room past a block that realloc moves to grow: half its size, so that
// growing it by small steps moves it O(log n) times, but no more than
// 64 MiB, which device memory holds for it.
size_t room_to_grow(size_t n) { return n / 2 < (size_t{64} << 20) ? n / 2 : size_t{64} << 20; }

}  // namespace

#define CALLER __builtin_return_address(0)

INTERCEPTOR(void *, malloc, size_t n) {
    if (void *p = shared_or_libc(n, false, CALLER)) return p;
    return next_malloc(n);
}

INTERCEPTOR(void *, calloc, size_t nmemb, size_t size) {
    if (size != 0 && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return nullptr;
    }
    if (void *p = shared_or_libc(nmemb * size, true, CALLER)) return p;
    if (auto fn = REAL(calloc)) return fn(nmemb, size);
    return bootstrap_alloc(nmemb * size);  // zeroed already
}

INTERCEPTOR(void, free, void *p) {
    if (!in_window(p)) return next_free(p);
    switch (adsm::preload::release(p)) {
    case adsm::preload::Release::freed: tick(); return;
    case adsm::preload::Release::not_shared: return next_free(p);
    case adsm::preload::Release::invalid: invalid_pointer("free", p);
    }
}

INTERCEPTOR(void *, realloc, void *p, size_t n) {
    if (!p) return malloc(n);
    if (in_window(p)) {
        size_t old = adsm::preload::size_of(p);
        if (old == 0) invalid_pointer("realloc", p);
        if (n == 0) {
            free(p);
            return nullptr;
        }
        // (Below the threshold it leaves shared memory, as a new block
        // would: on several GPUs an object's span is whole granules, and
        // any size fits the one it has.)
        if (wants_shared(n) && adsm::preload::resize(p, n)) {
            tick();
            return p;
        }
        // A block that grew past its pages gets room to grow again in
        // place, as glibc's mremap gives its large blocks: growing a buffer
        // a little at a time copied all of it each time (bash building a
        // string ran 45 times slower).
        void *q = shared_or_libc(n, false, CALLER, n > old ? room_to_grow(n) : 0);
        if (!q) q = next_malloc(n);
        if (!q) return nullptr;  // p stays valid, as realloc promises
        // Through the program's view: the protocol fetches what it must.
        memcpy(q, p, old < n ? old : n);
        free(p);
        return q;
    }
    void *q = wants_shared(n) ? shared_or_libc(n, false, CALLER) : nullptr;
    // The arena's blocks move out like blocks that become shared.
    if (!q && in_bootstrap_arena(p)) q = next_malloc(n);
    if (q) {
        size_t old = next_usable_size(p);
        memcpy(q, p, old < n ? old : n);
        next_free(p);
        return q;
    }
    if (in_bootstrap_arena(p)) return nullptr;  // p stays valid
    if (auto fn = REAL(realloc)) return fn(p, n);
    errno = ENOMEM;
    return nullptr;
}

INTERCEPTOR(int, posix_memalign, void **out, size_t align, size_t n) {
    if (align == 0 || (align & (align - 1)) != 0 || align % sizeof(void *) != 0) return EINVAL;
    // Shared allocations start on a page: any alignment up to that holds.
    if (align <= adsm::os::kPageSize) {
        if (void *p = shared_or_libc(n, false, CALLER)) {
            *out = p;
            return 0;
        }
    }
    if (auto fn = REAL(posix_memalign)) return fn(out, align, n);
    void *p = bootstrap_alloc(n, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

INTERCEPTOR(void *, memalign, size_t align, size_t n) {
    if (shareable_alignment(align))
        if (void *p = shared_or_libc(n, false, CALLER)) return p;
    if (auto fn = REAL(memalign)) return fn(align, n);
    return bootstrap_alloc(n, align);
}

INTERCEPTOR(void *, aligned_alloc, size_t align, size_t n) {
    if (shareable_alignment(align))
        if (void *p = shared_or_libc(n, false, CALLER)) return p;
    if (auto fn = REAL(aligned_alloc)) return fn(align, n);
    return bootstrap_alloc(n, align);
}

INTERCEPTOR(void *, valloc, size_t n) {
    if (void *p = shared_or_libc(n, false, CALLER)) return p;
    if (auto from = adsm::interpose::valloc_substitute()) return from(adsm::os::kPageSize, n);
    if (auto fn = REAL(valloc)) return fn(n);
    return bootstrap_alloc(n, adsm::os::kPageSize);
}

INTERCEPTOR(void *, pvalloc, size_t n) {
    size_t rounded;
    bool fits = adsm::os::page_round(n ? n : 1, &rounded);
    if (fits)
        if (void *p = shared_or_libc(rounded, false, CALLER)) return p;
    if (auto from = adsm::interpose::pvalloc_substitute()) {
        if (fits) return from(adsm::os::kPageSize, rounded);
        errno = ENOMEM;
        return nullptr;
    }
    if (auto fn = REAL(pvalloc)) return fn(n);
    if (fits) return bootstrap_alloc(rounded, adsm::os::kPageSize);
    errno = ENOMEM;
    return nullptr;
}

// The C library gives its free memory back here: the runtime gives back
// the freed shared blocks it keeps for reuse.
INTERCEPTOR(int, malloc_trim, size_t pad) {
    bool gave = adsm::preload::trim();
    auto fn = REAL(malloc_trim);
    return (fn && fn(pad)) || gave ? 1 : 0;
}

INTERCEPTOR(size_t, malloc_usable_size, void *p) {
    if (in_window(p)) return adsm::preload::size_of(p);
    return next_usable_size(p);
}
