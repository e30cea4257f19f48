// bdwgc's mark descriptors (gc_mark.h), read by adsm's markers: the scan
// functions of the layouts that kinds and typed objects become.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interpose/bdwgc/state.h"

namespace adsm::gc {
class Marker;
}

namespace adsm::bdwgc {

// Reports to the marker what an object of `bytes` bytes, readable at
// `view`, points to according to descr.
void scan_described(gc::Marker &m, const uintptr_t *view, size_t bytes, GC_word descr);

// Mark procedure numbers: the program's from GC_RESERVED_MARK_PROCS on;
// kLongBitmapProc is a reserved one that reads a bitmap too long for one
// word (its env: the bitmap's number).
constexpr unsigned kLongBitmapProc = 1;
unsigned add_mark_proc(GC_mark_proc proc);  // 0 when none is left
// A bitmap's number for kLongBitmapProc (bit i: word i), or -1 when the
// table is full.
long add_long_bitmap(const GC_word *bitmap, size_t words);

}  // namespace adsm::bdwgc
