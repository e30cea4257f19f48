#include "protocols/protocol.h"

#include <cstring>

#include "os/real_libc.h"
#include "os/vm.h"

namespace adsm {

Status set_access(uintptr_t host, size_t span, int prot) {
    if (int e = os::protect(reinterpret_cast<void *>(host), span, prot))
        return fail(adsmErrorMemoryAllocation, "mprotect(%p, %zu) failed: %s", reinterpret_cast<void *>(host), span,
                    strerror(-e));
    return adsmSuccess;
}

Status Protocol::snapshot(const SharedObject &r, uint8_t *dst) {
    os::real_memcpy(dst, r.alias, r.size);
    return adsmSuccess;
}

Status HostCopyProtocol::read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *) {
    os::real_memcpy(dst, r.alias + off, len);
    return adsmSuccess;
}

Status HostCopyProtocol::write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *) {
    os::real_memcpy(r.alias + off, src, len);
    return adsmSuccess;
}

Status HostCopyProtocol::fill(SharedObject &r, size_t off, int value, size_t len) {
    os::real_memset(r.alias + off, value, len);
    return adsmSuccess;
}

}  // namespace adsm
