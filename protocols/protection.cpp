#include "protocols/protection.h"

#include <cstring>

#include "os/vm.h"

namespace adsm {

Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot) {
    size_t b = r.block_begin(first), e = r.block_end(last - 1);
    if (int e2 = os::protect(reinterpret_cast<void *>(r.host + b), e - b, prot); e2 != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of %zu bytes of shared memory at %p: %s", e - b,
                    reinterpret_cast<void *>(r.host + b), strerror(-e2));
    return adsmSuccess;
}

Status protect_page(SharedObject &r, size_t page, int prot) {
    void *at = reinterpret_cast<void *>(r.host + page * os::kPageSize);
    if (int e = os::protect(at, os::kPageSize, prot); e != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of the shared page at %p: %s", at, strerror(-e));
    return adsmSuccess;
}

}  // namespace adsm
