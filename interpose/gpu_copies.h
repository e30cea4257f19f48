// A routed program's driver copies and fills that touch shared memory.  A
// shared pointer is a window address, which the driver would take for
// device memory (on the cuda device it is: the device copy, maybe stale);
// the data goes through the coherence protocol instead, as the program's
// own access would, and the driver sees only ordinary buffers.
#pragma once

#include <cstddef>
#include <functional>

#include "support/status.h"

namespace adsm::interpose {

// What the side of a copy that is not shared memory is.
enum class Side { host, device };

// The driver's own synchronous copies, for the parts that stay with it.
struct DriverCopies {
    Status (*to_device)(void *dev, const void *host, size_t n);
    Status (*to_host)(void *host, const void *dev, size_t n);
};

// Copies n bytes when dst or src is shared memory; false when neither is
// (the driver's call then goes ahead untouched).
bool copy_with_shared(void *dst, Side dst_side, const void *src, Side src_side, size_t n, const DriverCopies &driver,
                      Status *result);

// Between shared memory [shared, shared+n) and memory only the driver
// reaches (its device memory, a CUDA array), through an ordinary buffer in
// pieces: into shared memory, driver(offset, buffer, len) fills the buffer
// with the driver's bytes from `offset` on; out of it, it takes them.
using DriverPiece = std::function<Status(size_t offset, unsigned char *buffer, size_t len)>;
Status bounce_shared(void *shared, size_t n, bool into_shared, const DriverPiece &driver);

// Fills `count` elements of `width` bytes (1, 2 or 4) at shared dst with
// the element at `pattern`.
Status fill_shared_pattern(void *dst, const void *pattern, size_t width, size_t count);

// One side of a 2D or 3D copy: its first byte, its row and slice pitches,
// and which memory it is.  (No first byte: a CUDA array, the driver's
// alone and never shared.)
struct Plane {
    char *at = nullptr;
    size_t pitch = 0, slice = 0;
    Side side = Side::host;
};

// A box of `depth` slices of `height` rows of `width` bytes, row by row
// (rows of shared memory are not contiguous for the driver): a row with
// shared memory on a side through the protocol, any other by
// own_row(dst, src, width), the driver's own copy.
template <class OwnRow>
Status copy_box(const Plane &dst, const Plane &src, size_t width, size_t height, size_t depth,
                const DriverCopies &driver, OwnRow &&own_row) {
    for (size_t z = 0; z < depth; ++z)
        for (size_t row = 0; row < height; ++row) {
            void *d = dst.at + z * dst.slice + row * dst.pitch;
            const void *s = src.at + z * src.slice + row * src.pitch;
            Status st = adsmSuccess;
            if (!copy_with_shared(d, dst.side, s, src.side, width, driver, &st)) st = own_row(d, s, width);
            if (st != adsmSuccess) return st;
        }
    return adsmSuccess;
}

}  // namespace adsm::interpose
