// What the CPU may do with shared memory: changes of protection in the
// user view, with their errors, for every protocol (and the memory manager's
// device allocations).  Async-signal-safe: the fault handler changes protections.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/shared_object.h"
#include "support/status.h"

namespace adsm {

// [at, at+len) of the window's user view (whole pages).
Status protect_range(uintptr_t at, size_t len, int prot);
// Blocks [first, last) of r.
Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot);
// One page of r, counted from its start.
Status protect_page(SharedObject &r, size_t page, int prot);

}  // namespace adsm
