// The shared window: one reserved range of virtual addresses out of which
// every shared, safe and device allocation is carved, so the same address
// names the same object on the CPU and on the accelerator.
//
// The host copy of shared data lives in a memfd mapped twice: the user view
// at the window (its protection is what coherence protocols change) and an
// alias elsewhere that is always writable, through which the runtime fills
// and drains pages without ever opening them to the application early.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "memory/range_allocator.h"
#include "os/vm.h"
#include "support/status.h"

namespace adsm {

class AddressSpace {
public:
    // Reserves `size` bytes, at `preferred` if that range is free.  With
    // `over_device`, [preferred, +size) is a range the device's driver has
    // reserved already, and the host mirror is mapped over it exactly there.
    Status init(uintptr_t preferred, uint64_t size, bool over_device = false);
    // Gives the window and its mirror back.  Only a failed start ends a
    // space; over a device's reservation the window's addresses go back to
    // what the driver left there, for the device to free.
    ~AddressSpace();
    // The device pins mirror pages for DMA: freed and zeroed ranges keep
    // their pages (a punched page would leave the device copying from a
    // page the mirror no longer holds).
    void keep_pages(bool keep) { keep_pages_ = keep; }

    uintptr_t base() const { return base_; }
    uint64_t size() const { return size_; }
    int host_fd() const { return host_fd_; }
    bool contains(uintptr_t a) const { return a >= base_ && a - base_ < size_; }
    uint8_t *alias(uintptr_t a) const { return alias_ + (a - base_); }

    // A free range of `span` bytes starting at a multiple of `align` (a
    // power of two; 0: a page); its user view stays inaccessible until it is
    // opened (protocols/protection.h).
    Status allocate(size_t span, uintptr_t *out, size_t align = 0);
    // Closes the user view and gives the range back (through quarantine).
    void release(uintptr_t addr, size_t span);

    // Zeroes [addr, addr+span) of the host mirror, giving large ranges'
    // pages back to the system where that is allowed.
    void zero(uintptr_t addr, size_t span);

    // Enters the mirror pages of [addr, addr+span), already allocated (the
    // device pinned them), into the user view's page tables, so that the
    // program's first touch of each page does not fault.
    void prefault(uintptr_t addr, size_t span);

    uint64_t free_bytes();

    // The runs of [addr, addr+len) whose host mirror pages hold data,
    // relative to addr; the rest read as zeros.  All of it where the mirror
    // will not say.
    os::Runs host_runs(uintptr_t addr, size_t len) const;

    // In a fork child, after the window became private memory: drop the
    // alias and the memfd so the parent's memory is not kept alive here.
    void detach_after_fork();

private:
    uintptr_t base_ = 0;
    uint64_t size_ = 0;
    int host_fd_ = -1;
    uint8_t *alias_ = nullptr;
    bool keep_pages_ = false;
    bool over_device_ = false;
    std::mutex mu_;
    RangeAllocator ranges_;
};

}  // namespace adsm
