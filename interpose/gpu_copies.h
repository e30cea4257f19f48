// A routed program's driver copies and fills that touch shared memory.  A
// shared pointer is a window address, which the driver would take for
// device memory (on the cuda device it is: the device copy, maybe stale);
// the data goes through the coherence protocol instead, as the program's
// own access would, and the driver sees only ordinary buffers.
#pragma once

#include <cstddef>

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

// Fills `count` elements of `width` bytes (1, 2 or 4) at shared dst with
// the element at `pattern`.
Status fill_shared_pattern(void *dst, const void *pattern, size_t width, size_t count);

}  // namespace adsm::interpose
