// One object's device copy split in equal parts over several kinds of
// memory (ADSM_SPILL=split): its context's device, the process's other
// devices, host memory.  The protocols see it as the object's device:
// copies and fills go to whichever memory holds each part.  A host part is
// the host mirror's own pages, which every device maps there (host-resident
// memory): the device copy of those blocks is the host copy, so copying it
// is a move within one memory, or nothing.  Kernels never run on it; its
// copies are synchronous (an asynchronous one is done on the spot), so
// copies that cross parts need no ticket of their own.
#pragma once

#include <vector>

#include "backend/device.h"

namespace adsm {

class SplitDevice final : public Device {
public:
    struct Part {
        uintptr_t begin, end;  // window addresses
        Device *device;        // nullptr: host memory
    };
    // host_alias: the runtime's writable view of the host mirror, whose
    // window starts at window_base.
    SplitDevice(std::vector<Part> parts, uintptr_t window_base, uint8_t *host_alias)
        : parts_(std::move(parts)), base_(window_base), alias_(host_alias) {}

    const std::vector<Part> &parts() const { return parts_; }

    const char *name() const override { return "split"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return 0; }
    uint64_t used() const override { return 0; }
    Status attach_window(uintptr_t, uint64_t, int, uint8_t *) override;

    // Every device part's memory, all or none.
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;

    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override;
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override;
    Status fill(uintptr_t dev, int value, size_t n) override;

    Status create_stream(StreamId *) override;
    void destroy_stream(StreamId) override {}
    Status launch(StreamId, const LaunchDesc &) override;
    Status synchronize(StreamId) override { return adsmSuccess; }

private:
    // Calls f(part, at, len) for each piece of [dev, dev+n) in one part.
    template <class F>
    Status each_piece(uintptr_t dev, size_t n, F &&f) const;
    uint8_t *host_at(uintptr_t dev) const { return alias_ + (dev - base_); }

    std::vector<Part> parts_;
    uintptr_t base_;
    uint8_t *alias_;
};

}  // namespace adsm
