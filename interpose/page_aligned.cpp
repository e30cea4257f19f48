#include "interpose/page_aligned.h"

#include <dlfcn.h>

#include <atomic>

#include "os/loaded_objects.h"
#include "os/real_libc.h"

namespace adsm::interpose {
namespace {

std::atomic<MemalignFn> g_valloc_from{nullptr}, g_pvalloc_from{nullptr};

bool same_library(void *a, void *b) {
    const void *x = a ? os::object_of(a) : nullptr;
    return x && x == os::object_of(b);
}

}  // namespace

void find_page_aligned_owner(void *next_free, void *next_memalign, void *next_valloc, void *next_pvalloc) {
    // The program's free is libadsm's (which passes blocks on to the next
    // allocator), or that of an allocator ahead of libadsm.
    void *first_free = os::real_dlsym(RTLD_DEFAULT, "free");
    void *owner_free = next_free, *owner_memalign = next_memalign;
    if (!same_library(first_free, reinterpret_cast<void *>(&find_page_aligned_owner))) {
        owner_free = first_free;
        owner_memalign = os::real_dlsym(RTLD_DEFAULT, "memalign");
    }
    if (!same_library(owner_memalign, owner_free)) return;  // nothing to make them from
    auto from = reinterpret_cast<MemalignFn>(owner_memalign);
    if (!same_library(next_valloc, owner_free)) g_valloc_from.store(from, std::memory_order_relaxed);
    if (!same_library(next_pvalloc, owner_free)) g_pvalloc_from.store(from, std::memory_order_relaxed);
}

MemalignFn valloc_substitute() { return g_valloc_from.load(std::memory_order_relaxed); }
MemalignFn pvalloc_substitute() { return g_pvalloc_from.load(std::memory_order_relaxed); }

}  // namespace adsm::interpose
