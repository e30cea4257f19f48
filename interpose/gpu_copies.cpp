#include "interpose/gpu_copies.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "api/gpu_bridge.h"
#include "support/inside.h"

namespace adsm::interpose {
namespace {
constexpr size_t kBounce = 4 << 20;
namespace bridge = gpu_bridge;
}  // namespace

bool copy_with_shared(void *dst, Side dst_side, const void *src, Side src_side, size_t n, const DriverCopies &driver,
                      Status *result) {
    bool ds = bridge::is_shared(dst), ss = bridge::is_shared(src);
    if (!ds && !ss) return false;
    if (n == 0) {
        *result = adsmSuccess;
        return true;
    }
    if (ds && ss) {
        *result = bridge::copy_shared(dst, src, n);
        return true;
    }
    if (ss && dst_side == Side::host) {
        *result = bridge::read_shared(src, dst, n);
        return true;
    }
    if (ds && src_side == Side::host) {
        *result = bridge::write_shared(dst, src, n);
        return true;
    }
    // Shared memory on one side, the driver's device memory on the other.
    if (ss)
        *result = bounce_shared(const_cast<void *>(src), n, false, [&](size_t off, unsigned char *buf, size_t len) {
            return driver.to_device(static_cast<char *>(dst) + off, buf, len);
        });
    else
        *result = bounce_shared(dst, n, true, [&](size_t off, unsigned char *buf, size_t len) {
            return driver.to_host(buf, static_cast<const char *>(src) + off, len);
        });
    return true;
}

Status bounce_shared(void *shared, size_t n, bool into_shared, const DriverPiece &driver) {
    // The buffer (and whatever the driver allocates meanwhile) must be
    // ordinary memory, never shared: the driver would take a shared address
    // for device memory.
    Inside private_allocations;
    size_t chunk = n < kBounce ? n : kBounce;
    std::unique_ptr<unsigned char[]> bounce(new (std::nothrow) unsigned char[chunk ? chunk : 1]);
    if (!bounce) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte copy buffer", chunk);
    char *at = static_cast<char *>(shared);
    for (size_t done = 0; done < n;) {
        size_t len = n - done < chunk ? n - done : chunk;
        Status s = into_shared ? driver(done, bounce.get(), len) : bridge::read_shared(at + done, bounce.get(), len);
        if (s == adsmSuccess)
            s = into_shared ? bridge::write_shared(at + done, bounce.get(), len) : driver(done, bounce.get(), len);
        if (s != adsmSuccess) return s;
        done += len;
    }
    return adsmSuccess;
}

Status fill_shared_pattern(void *dst, const void *pattern, size_t width, size_t count) {
    if (count > SIZE_MAX / width) return fail(adsmErrorSizeOverflow, "%zu elements of %zu bytes overflow", count, width);
    if (width == 1) return bridge::fill_shared(dst, *static_cast<const unsigned char *>(pattern), count);
    // A buffer of whole elements, written again and again.
    Inside private_allocations;
    size_t bytes = count * width, chunk = bytes < kBounce ? bytes : kBounce / width * width;
    std::unique_ptr<unsigned char[]> buf(new (std::nothrow) unsigned char[chunk]);
    if (!buf) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte fill buffer", chunk);
    for (size_t i = 0; i < chunk; i += width) memcpy(buf.get() + i, pattern, width);
    for (size_t done = 0; done < bytes;) {
        size_t len = bytes - done < chunk ? bytes - done : chunk;
        if (Status s = bridge::write_shared(static_cast<char *>(dst) + done, buf.get(), len); s != adsmSuccess) return s;
        done += len;
    }
    return adsmSuccess;
}

}  // namespace adsm::interpose
