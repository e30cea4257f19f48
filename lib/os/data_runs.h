// Which pages of the host mirror's file hold data: pages never written, or
// given back, are holes and read as zeros.  A fork's copy of an object and
// the write tracker's first look at fresh memory each ask this of one
// object's range.
//
// The kernel's SEEK_HOLE walks every page of the data run it starts in,
// up to the run's end however far past the range asked about; objects
// side by side in the mirror make one run, and asking about each of n
// small objects cost O(n) pages each (20,000 objects of 4 KiB: 5 s at a
// first release).  Here the answer costs the pages of the range only.
#pragma once

#include <cstdint>

#include "os/vm.h"

namespace adsm::os {

// Calls fn(arg, begin, end) for each run of [off, off+len) of fd that holds
// data, as offsets relative to off, clipped to len, in order.  `view` maps
// fd at off (page-aligned).  tmpfs counts a page swapped out as data.
// Where the kernel will not say, the rest of the range counts as data and
// the result is false.  Async-signal-safe.
using DataRunFn = void (*)(void *arg, uint64_t begin, uint64_t end);
bool for_each_data_run(int fd, const void *view, uint64_t off, uint64_t len, DataRunFn fn, void *arg);

// The same runs, collected.  False, with *out untouched, where the kernel
// will not say.
bool data_runs(int fd, const void *view, uint64_t off, uint64_t len, Runs *out);

}  // namespace adsm::os
