// valloc and pvalloc are obsolete, and an allocator may lack them (jemalloc
// has no pvalloc).  Preloaded with libadsm, in either order, the next
// definition may then belong to another allocator than the one whose free
// the program calls (the C library's, say, under jemalloc's free), and a
// block from one freed by the other corrupts both.  Such a function is made
// instead from the memalign of the allocator that frees.
#pragma once

#include <stddef.h>

namespace adsm::interpose {

using MemalignFn = void *(*)(size_t, size_t);

// Looks at which libraries define what; once, at load, after the table of
// real functions is resolved.  `next_*` are the definitions after libadsm.
void find_page_aligned_owner(void *next_free, void *next_memalign, void *next_valloc, void *next_pvalloc);

// The memalign to make valloc (pvalloc) from, or null to pass it on.
MemalignFn valloc_substitute();
MemalignFn pvalloc_substitute();

}  // namespace adsm::interpose
