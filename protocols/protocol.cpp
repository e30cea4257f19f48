#include "protocols/protocol.h"

#include <sys/mman.h>

#include <algorithm>

#include "os/real_libc.h"
#include "protocols/protection.h"

namespace adsm {

void copy_held(const SharedObject &r, uint8_t *dst, size_t b, size_t e, const os::Runs &held) {
    // The first run that ends past b, then each while it starts before e.
    auto it = std::upper_bound(held.begin(), held.end(), b, [](size_t at, const auto &run) { return at < run.second; });
    for (; it != held.end() && it->first < e; ++it) {
        size_t lo = std::max<size_t>(b, it->first), hi = std::min<size_t>(e, it->second);
        os::real_memcpy(dst + lo, r.alias + lo, hi - lo);
    }
}

Status Protocol::snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held) {
    copy_held(r, dst, 0, r.size, held);
    return adsmSuccess;
}

Status Protocol::hold_writes(SharedObject &r) {
    os::FutexGuard g(r.lock);
    if (!r.live.load(std::memory_order_acquire) || r.writes_held) return adsmSuccess;
    if (Status s = protect_range(r.host, r.span, PROT_READ); s != adsmSuccess) return s;
    r.writes_held = true;
    return adsmSuccess;
}

bool Protocol::mark_writes_held(SharedObject &r) {
    os::FutexGuard g(r.lock);
    if (!r.live.load(std::memory_order_acquire) || r.writes_held) return false;
    r.writes_held = true;
    return true;
}

void Protocol::clear_writes_held(SharedObject &r) {
    os::FutexGuard g(r.lock);
    r.writes_held = false;
}

Status Protocol::resume_writes(SharedObject &r) {
    os::FutexGuard g(r.lock);
    if (!r.writes_held) return adsmSuccess;
    r.writes_held = false;
    return protect_range(r.host, r.span, PROT_READ | PROT_WRITE);
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
