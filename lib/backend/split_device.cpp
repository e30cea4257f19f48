#include "backend/split_device.h"

#include <algorithm>

#include "os/real_libc.h"

namespace adsm {

template <class F>
Status SplitDevice::each_piece(uintptr_t dev, size_t n, F &&f) const {
    for (const Part &p : parts_) {
        uintptr_t lo = std::max(dev, p.begin), hi = std::min(dev + n, p.end);
        if (lo >= hi) continue;
        if (Status s = f(p, lo, static_cast<size_t>(hi - lo)); s != adsmSuccess) return s;
    }
    return adsmSuccess;
}

Status SplitDevice::attach_window(uintptr_t, uint64_t, int, uint8_t *) {
    return fail(adsmErrorNotSupported, "a split object's memory is not a device of its own");
}

Status SplitDevice::commit(uintptr_t dev, uint64_t bytes) {
    std::vector<const Part *> done;
    Status s = each_piece(dev, bytes, [&](const Part &p, uintptr_t at, size_t len) {
        if (!p.device) return adsmSuccess;
        Status c = p.device->commit(at, len);
        if (c == adsmSuccess) done.push_back(&p);
        return c;
    });
    if (s != adsmSuccess)
        for (const Part *p : done)
            p->device->decommit(std::max(dev, p->begin), std::min(dev + bytes, p->end) - std::max(dev, p->begin));
    return s;
}

void SplitDevice::decommit(uintptr_t dev, uint64_t bytes) {
    (void)each_piece(dev, bytes, [](const Part &p, uintptr_t at, size_t len) {
        if (p.device) p.device->decommit(at, len);
        return adsmSuccess;
    });
}

Status SplitDevice::copy_to_device(uintptr_t dev, const void *src, size_t n) {
    const auto *from = static_cast<const uint8_t *>(src);
    return each_piece(dev, n, [&](const Part &p, uintptr_t at, size_t len) {
        const uint8_t *s = from + (at - dev);
        if (p.device) return p.device->copy_to_device(at, s, len);
        if (s != host_at(at)) os::real_memmove(host_at(at), s, len);
        return adsmSuccess;
    });
}

Status SplitDevice::copy_to_host(void *dst, uintptr_t dev, size_t n) {
    auto *to = static_cast<uint8_t *>(dst);
    return each_piece(dev, n, [&](const Part &p, uintptr_t at, size_t len) {
        uint8_t *d = to + (at - dev);
        if (p.device) return p.device->copy_to_host(d, at, len);
        if (d != host_at(at)) os::real_memmove(d, host_at(at), len);
        return adsmSuccess;
    });
}

Status SplitDevice::fill(uintptr_t dev, int value, size_t n) {
    return each_piece(dev, n, [&](const Part &p, uintptr_t at, size_t len) {
        if (p.device) return p.device->fill(at, value, len);
        os::real_memset(host_at(at), value, len);
        return adsmSuccess;
    });
}

Status SplitDevice::create_stream(StreamId *) {
    return fail(adsmErrorNotSupported, "kernels run on a split object's devices, not on the object");
}

Status SplitDevice::launch(StreamId, const LaunchDesc &) {
    return fail(adsmErrorNotSupported, "kernels run on a split object's devices, not on the object");
}

}  // namespace adsm
