// What the interposers (interpose/) need from the runtime, and nothing
// else: a cheap test for "is this shared memory", allocation and release
// that never fail the program, buffers split into ordinary and shared
// pieces, copies in and out of shared memory that respect the protocol
// (waiting for kernels first, as a racing CPU access would), and the chaos
// mode's forced release/acquire cycles.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/inside.h"
#include "support/status.h"

namespace adsm::preload {

// The shared window; empty until the runtime starts.
extern std::atomic<uintptr_t> g_window_base;
extern std::atomic<uintptr_t> g_window_size;

inline bool in_window(const void *p) {
    return reinterpret_cast<uintptr_t>(p) - g_window_base.load(std::memory_order_relaxed) <
           g_window_size.load(std::memory_order_relaxed);
}
// Whether [p, p+n) overlaps the window at all.
inline bool touches_window(const void *p, size_t n) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p), base = g_window_base.load(std::memory_order_relaxed);
    uintptr_t size = g_window_size.load(std::memory_order_relaxed);
    if (size == 0 || n == 0) return false;
    uintptr_t end = a + n < a ? UINTPTR_MAX : a + n;
    return a < base + size && end > base;
}

// Interposed calls made from inside the runtime pass straight through.
using Scope = adsm::Inside;
inline bool inside() { return inside_runtime(); }

// Shared memory for an interposed allocation, or nullptr (the caller then
// uses the C library).  Starts the runtime if needed.  `room`: bytes past n
// reserved for it to grow into (resize), where there is memory for them.
void *alloc(size_t n, bool zero, size_t room = 0);

// realloc of the shared allocation at p without moving it: whether its size
// is now n (see Manager::resize).
bool resize(void *p, size_t n);

// malloc_trim: gives back the freed blocks kept for reuse; whether there
// were any.
bool trim();

enum class Release { freed, not_shared, invalid };
// Frees shared memory; waits for kernels that may still use it.
Release release(void *p);

// Bytes the shared allocation at p holds (0 if p is not one); works in the
// child of a fork, where the runtime is gone but the memory remains.
size_t size_of(const void *p);

// Whether the runtime is gone from this process (a fork child).
bool detached();
// Whether the runtime runs in this very process (not a fork or vfork child).
bool runs_here();

// Before the program closes its stderr (close, a range, fclose): a copy is
// kept where the runtime has a report to make at exit (os/kept_stderr.h).
void before_stderr_closes();

// The runtime's fork handlers (pthread_atfork's), for a fork that runs none
// (_Fork): before it in the forking thread, then in the child or the parent.
void fork_prepare();
void fork_child();
void fork_parent();

// A piece of a buffer: shared memory (which the runtime must move) or
// anything else (which the kernel may use directly, including unallocated
// parts of the window, which it reports as it would unmapped memory).
struct Piece {
    uint8_t *p;
    size_t n;
    bool shared;
};
// Splits [p, p+n) at the bounds of shared allocations.  Returns the number
// of pieces written: at most max, which then may cover only the start of
// the buffer (the caller goes on from the end of the last).
size_t split(const void *p, size_t n, Piece *out, size_t max);

// Copies between shared memory (one piece) and other memory.  With ticket,
// device copies may still run on return: keep the other memory as it is
// until wait_copies(*ticket), which says whether those copies landed.
Status read_shared(const void *src, void *dst, size_t n, uint64_t *ticket = nullptr);
Status write_shared(void *dst, const void *src, size_t n, uint64_t *ticket = nullptr);
Status fill_shared(void *dst, int value, size_t n);
Status wait_copies(uint64_t ticket);
// I/O staging memory [p, p+n) the caller keeps: pinned by the device where
// it pins host memory (see Device::pin_staging), so copies through it run
// at full speed.  False where it stays pageable, which works as well.
bool pin_staging(void *p, size_t n);
void unpin_staging(void *p);

// Chaos mode (ADSM_CHAOS_RELEASE_EVERY): called at interposed calls; now and
// then forces a release and an acquire of every context (Manager::chaos_cycle).
extern std::atomic<bool> g_chaos;
void chaos_tick();

}  // namespace adsm::preload
