#include "api/preload.h"

#include <atomic>

#include "api/gpu_bridge.h"
#include "api/runtime.h"
#include "os/deferred_signals.h"
#include "os/vm.h"
#include "support/log.h"

namespace adsm::preload {

std::atomic<uintptr_t> g_window_base{0};
std::atomic<uintptr_t> g_window_size{0};
std::atomic<bool> g_chaos{false};

namespace {
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tls_chaos_state = 0;

Runtime *ready_runtime() {
    Runtime *rt = nullptr;
    return runtime(&rt) == adsmSuccess ? rt : nullptr;
}
}  // namespace


bool detached() { return forked_child(); }
bool runs_here() { return in_runtime_process(); }

void *alloc(size_t n, bool zero, size_t room) {
    // The runtime's bookkeeping allocates from the C library here.
    os::DeferredSignals deferred;
    Scope in;
    Runtime *rt = ready_runtime();
    if (!rt) return nullptr;
    void *p = nullptr;
    // A routed GPU API releases the program context at its launches, so
    // memory the program allocates for its kernels must be there too;
    // unless the program launches them with the API (note_api_launch).
    Context *ctx = gpu_bridge::any_routed() && !rt->api_launches.load(std::memory_order_acquire)
                       ? rt->manager->program_context()
                       : nullptr;
    // The room first, then the size asked for within it (kept whole should
    // that fail: a block larger than asked for keeps every promise of
    // malloc); without the room where it does not fit.
    if (room && room <= SIZE_MAX - n && rt->manager->alloc(n + room, zero, &p, ctx, RegionOrigin::malloc) == adsmSuccess) {
        (void)rt->manager->resize(p, n);
    } else if (rt->manager->alloc(n, zero, &p, ctx, RegionOrigin::malloc) != adsmSuccess) {
        ADSM_LOG(debug, "shared allocation of %zu bytes failed (%s); using the C library", n, last_detail());
        return nullptr;
    }
    // (Another thread's first API launch may have adopted the program
    // context's objects while this one was being made there.)
    if (ctx && rt->api_launches.load(std::memory_order_acquire)) rt->manager->adopt_program_mallocs();
    return p;
}

bool resize(void *p, size_t n) {
    os::DeferredSignals deferred;  // as in alloc
    Scope in;
    // (A fork child's objects are ordinary memory the runtime no longer keeps.)
    Runtime *rt = forked_child() ? nullptr : started_runtime();
    return rt && in_window(p) && rt->manager->resize(p, n);
}

bool trim() {
    os::DeferredSignals deferred;  // as in alloc
    Scope in;
    Runtime *rt = forked_child() ? nullptr : started_runtime();
    return rt && rt->manager->trim_kept() > 0;
}

Release release(void *p) {
    os::DeferredSignals deferred;  // as in alloc
    Scope in;
    // In a fork child the allocation is ordinary memory that goes with the
    // process; a pointer that is no allocation is still a bug.
    if (forked_child()) return size_of(p) ? Release::freed : Release::invalid;
    Runtime *rt = started_runtime();
    if (!rt || !in_window(p)) return Release::not_shared;
    // Only what malloc handed out: free() of an adsmAlloc or managed
    // allocation is the program's bug, as it would be for the C library.
    if (!rt->manager->allocated_for(p, RegionOrigin::malloc)) return Release::invalid;
    return rt->manager->free(p, /*wait=*/true) == adsmSuccess ? Release::freed : Release::invalid;
}

size_t size_of(const void *p) {
    Runtime *rt = started_runtime();
    return rt && in_window(p) ? rt->manager->size_of(p) : 0;
}

size_t split(const void *p, size_t n, Piece *out, size_t max) {
    Runtime *rt = started_runtime();
    auto *a = static_cast<uint8_t *>(const_cast<void *>(p));
    uint8_t *end = a + n;
    size_t count = 0;
    while (a < end && count < max) {
        Region *r = rt && !forked_child() && in_window(a) ? rt->table.find(reinterpret_cast<uintptr_t>(a)) : nullptr;
        if (r && r->kind != RegionKind::device && r->contains_host(reinterpret_cast<uintptr_t>(a)) &&
            reinterpret_cast<uintptr_t>(a) - r->host < r->size) {
            uint8_t *stop = reinterpret_cast<uint8_t *>(r->host + r->size);
            if (stop > end) stop = end;
            out[count++] = {a, static_cast<size_t>(stop - a), true};
            a = stop;
            continue;
        }
        // Ordinary memory, or the window outside any allocation: the latter
        // ends at the next page (where an allocation may start); the former
        // at the window.
        uint8_t *stop = end;
        uintptr_t base = g_window_base.load(std::memory_order_relaxed);
        if (in_window(a)) stop = reinterpret_cast<uint8_t *>(os::page_up(reinterpret_cast<uintptr_t>(a) + 1));
        else if (reinterpret_cast<uintptr_t>(a) < base && reinterpret_cast<uintptr_t>(end) > base)
            stop = reinterpret_cast<uint8_t *>(base);
        if (stop > end) stop = end;
        if (count > 0 && !out[count - 1].shared) out[count - 1].n += static_cast<size_t>(stop - a);
        else out[count++] = {a, static_cast<size_t>(stop - a), false};
        a = stop;
    }
    return count;
}

Status read_shared(const void *src, void *dst, size_t n, uint64_t *ticket) {
    Scope in;
    Runtime *rt = started_runtime();
    if (!rt || forked_child()) return fail(adsmErrorNotSupported, "no runtime");
    return rt->manager->program_read(src, dst, n, ticket);
}

Status write_shared(void *dst, const void *src, size_t n, uint64_t *ticket) {
    Scope in;
    Runtime *rt = started_runtime();
    if (!rt || forked_child()) return fail(adsmErrorNotSupported, "no runtime");
    return rt->manager->program_write(dst, src, n, ticket);
}

Status wait_copies(uint64_t ticket) {
    if (ticket == 0) return adsmSuccess;
    Scope in;
    Runtime *rt = started_runtime();
    return rt ? rt->manager->wait_copies(ticket) : adsmSuccess;
}

bool pin_staging(void *p, size_t n) {
    Scope in;
    Runtime *rt = started_runtime();
    return rt && !forked_child() && rt->device->pin_staging(p, n);
}

void unpin_staging(void *p) {
    Scope in;
    Runtime *rt = started_runtime();
    if (rt && !forked_child()) rt->device->unpin_staging(p);
}

Status fill_shared(void *dst, int value, size_t n) {
    Scope in;
    Runtime *rt = started_runtime();
    if (!rt || forked_child()) return fail(adsmErrorNotSupported, "no runtime");
    return rt->manager->program_fill(dst, value, n);
}

void chaos_tick() {
    if (inside() || forked_child()) return;
    Runtime *rt = started_runtime();
    if (!rt || rt->config.chaos_every == 0) return;
    // A per-thread generator, seeded from the configured seed and the
    // thread's rank among those that reached here (not its address, which
    // changes from run to run), so a run repeats for a given seed and schedule.
    uint64_t &s = tls_chaos_state;
    if (s == 0) {
        static std::atomic<uint64_t> threads{0};
        uint64_t z = (rt->config.chaos_seed + 1) * 0x9e3779b97f4a7c15ull + threads.fetch_add(1) + 1;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finalizer
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        s = (z ^ (z >> 31)) | 1;  // never 0, which xorshift would keep
    }
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    if (s % rt->config.chaos_every != 0) return;
    Scope in;
    rt->manager->chaos_cycle();
}

}  // namespace adsm::preload
