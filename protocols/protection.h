// What the CPU may do with a block protocol's blocks and pages: changes of
// protection in the user view, shared by BlockProtocol and the ways it
// finds writes.  Async-signal-safe: the fault handler changes protections.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/shared_object.h"
#include "support/status.h"

namespace adsm {

// Blocks [first, last) of r.
Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot);
// One page of r, counted from its start.
Status protect_page(SharedObject &r, size_t page, int prot);

}  // namespace adsm
