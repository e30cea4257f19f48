// Objects whose pointers the program describes (DESIGN: "precise where the
// user supplies layouts").  A layout is a scan function: a marker that
// reaches an object of the layout calls it instead of reading every word of
// the object, and the function tells the marker what the object points to.
// Runtimes of other languages need this: a weak table's entry whose key the
// collector must not see, or a thread object whose interpreter stack lives
// outside the heap.
//
// Layouts are few and process-wide (registered once per type, never
// removed).  Scan functions run on the marker threads while the world is
// stopped, several at once: they must not allocate, take a lock a program
// thread may hold, or wait.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::gc {

class Marker;

// Called for each marked object of the layout: `view` is a readable copy of
// its `bytes` bytes (the collector's view, not the program's address),
// `obj` its address in the program, `arg` the layout's argument.  Report
// pointers with Marker::consider and ranges to scan conservatively with
// Marker::push_program_range.
using ScanFunction = void (*)(Marker &m, const uintptr_t *view, size_t bytes, uintptr_t obj, uintptr_t arg);

struct Layout {
    ScanFunction scan = nullptr;
    uintptr_t arg = 0;
};

// Layout 0 means "none": the object is scanned conservatively, or not at
// all when it holds no pointers.
constexpr unsigned kMaxLayouts = 32;

// A new layout's number, or 0 when all are taken.
unsigned register_layout(ScanFunction scan, uintptr_t arg);
// The layout of a number register_layout returned.
const Layout &layout(unsigned id);

}  // namespace adsm::gc
