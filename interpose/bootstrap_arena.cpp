#include "interpose/bootstrap_arena.h"

#include <errno.h>
#include <stdint.h>

#include <atomic>

namespace adsm::interpose {
namespace {

// A few lookups' worth; the table's resolution needs far less.
constexpr size_t kArenaSize = 64 * 1024;
constexpr size_t kArenaAlign = 4096;  // valloc's
alignas(kArenaAlign) unsigned char g_arena[kArenaSize];
std::atomic<size_t> g_used{0};

// Each block is preceded by its size.
constexpr size_t kHeader = 16;

void *full() {
    errno = ENOMEM;
    return nullptr;
}

}  // namespace

void *bootstrap_alloc(size_t n, size_t align) {
    if (align < kHeader) align = kHeader;
    if (align > kArenaAlign || n > kArenaSize) return full();
    size_t used = g_used.load(std::memory_order_relaxed);
    size_t start;
    do {
        start = (used + kHeader + align - 1) & ~(align - 1);
        if (start + n > kArenaSize) return full();
    } while (!g_used.compare_exchange_weak(used, start + n, std::memory_order_relaxed));
    *reinterpret_cast<size_t *>(g_arena + start - kHeader) = n;
    return g_arena + start;
}

bool in_bootstrap_arena(const void *p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(g_arena);
    return a >= base && a < base + kArenaSize;
}

size_t bootstrap_size(const void *p) { return *reinterpret_cast<const size_t *>(static_cast<const unsigned char *>(p) - kHeader); }

}  // namespace adsm::interpose
