#include "protocols/protocol.h"

#include "os/real_libc.h"

namespace adsm {

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
