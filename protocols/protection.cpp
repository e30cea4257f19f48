#include "protocols/protection.h"

#include <cstring>

#include "os/error_text.h"
#include "os/vm.h"

namespace adsm {

Status protect_range(uintptr_t at, size_t len, int prot) {
    if (int e = os::protect(reinterpret_cast<void *>(at), len, prot); e != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of %zu bytes of shared memory at %p: %s", len,
                    reinterpret_cast<void *>(at), os::error_text(-e));
    return adsmSuccess;
}

Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot) {
    size_t b = r.block_begin(first), e = r.block_end(last - 1);
    return protect_range(r.host + b, e - b, prot);
}

Status protect_page(SharedObject &r, size_t page, int prot) {
    return protect_range(r.host + page * os::kPageSize, os::kPageSize, prot);
}

}  // namespace adsm
