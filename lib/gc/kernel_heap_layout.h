// A kernel heap's memory (adsm_gc_kernel.h), in the order it lies:
//   descriptor | buffer slots | buffer records | bitmap | eden (page-aligned)
// The sizes the runtime picks for a budget, the descriptor it writes at
// creation, and what it reads back from that metadata once the kernels are
// done: the objects, and each buffer taken back at its last good top.
// Pure functions over bytes, so the tests drive them on ordinary memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "adsm_gc_kernel.h"
#include "support/status.h"

namespace adsm::gc {

struct KernelHeapLayout {
    uint64_t eden_bytes = 0;  // the budget, rounded up to a granule
    uint64_t tlab_bytes = 0;
    uint64_t tlabs = 0;       // slots
    uint64_t records = 0;     // one sentinel per slot, then room for every buffer eden can give
    size_t slots_off = 0, records_off = 0, bitmap_off = 0, bitmap_bytes = 0, eden_off = 0, total_bytes = 0;

    // What the runtime reads back after the kernels: everything before eden.
    size_t meta_bytes() const { return bitmap_off + bitmap_bytes; }
};

// The descriptor is an object of its own once the heap closes.
constexpr size_t kKernelHeapHeaderBytes = (sizeof(adsmGcKernelHeap) + 15) & ~size_t(15);

Status plan_kernel_heap(size_t budget, const adsmGcKernelHeapOptions *options, KernelHeapLayout *out);

// The descriptor, slots and sentinel records of a heap at `base`: the first
// bitmap_off bytes of its memory.  The bitmap must be zero besides.
void format_kernel_heap(const KernelHeapLayout &l, uintptr_t base, uint8_t *out);

struct KernelHeapReport {
    uint64_t objects = 0, bytes = 0;
    uint64_t failed = 0, failed_bytes = 0, too_large = 0, late = 0;
    uint64_t tlabs = 0, overflows = 0, eden_objects = 0, unused_bytes = 0;
    // Bitmap entries that make no whole object handed out (a kernel that
    // stopped half-way, or wrote where it should not): left out.
    uint64_t dropped = 0;
};

// Reads the metadata (meta_bytes() from base, as the kernels left it) and
// calls emit(arg, offset from eden's start, bytes) for every object, in
// address order.
void parse_kernel_heap(const KernelHeapLayout &l, uintptr_t base, const uint8_t *meta, KernelHeapReport *report,
                       void (*emit)(void *arg, uint64_t offset, uint64_t bytes), void *arg);

}  // namespace adsm::gc
