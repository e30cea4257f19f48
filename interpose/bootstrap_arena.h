// Memory for the malloc family while the table of real functions is being
// resolved: the C library's dlsym may allocate (its error state, an error
// message), and those allocations come back to the preload's malloc before
// it knows where the next allocator is.  A small static arena serves them,
// zeroed and never reused; a free of one of its blocks is ignored.
#pragma once

#include <stddef.h>

namespace adsm::interpose {

// A zeroed block of n bytes aligned to `align` (a power of two), or null
// when the arena is full.
void *bootstrap_alloc(size_t n, size_t align = 16);

bool in_bootstrap_arena(const void *p);

// The size a block was asked for.
size_t bootstrap_size(const void *p);

}  // namespace adsm::interpose
