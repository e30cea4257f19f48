// Allocation by bdwgc object kind: the four predefined kinds (atomic,
// normal, and their uncollectable versions) and the program's own
// (GC_new_kind), whose descriptors become layouts of adsm's collector.
#pragma once

#include <cstddef>

#include "gc/collector.h"

namespace adsm::bdwgc {

// An object of a predefined kind (alloc.cpp); on failure, what the
// out-of-memory handler returns.
void *allocate(size_t n, bool pointers, bool uncollectable);
// An object of any kind, zeroed; on failure (a kind that does not exist
// included), what the out-of-memory handler returns.
void *allocate_kind(size_t n, int kind, bool uncollectable);
// An object of the same kind as the one described, for GC_realloc; null
// (with a warning) for one of GC_malloc_explicitly_typed's.
void *allocate_like(const gc::Collector::ObjectInfo &info, size_t n);

}  // namespace adsm::bdwgc
