// The collector's roots outside thread stacks: the writable data and bss of
// every object loaded now (the program, its libraries, dlopen()ed ones),
// found at run time through the dynamic loader, and the static TLS layout
// that World uses to find each thread's thread-local storage.
#pragma once

#include "gc/range_buffer.h"
#include "support/status.h"

namespace adsm::gc {

// Appends the writable segments of every loaded object (PT_LOAD with PF_W,
// the pages PT_GNU_RELRO makes read-only excluded), less the runtime's own
// when it is a library of its own (linked into the program, as in the
// tests, its data is the program's) and less the vDSO.  Takes the loader's
// lock: called before the world stops.
Status data_segments(RangeBuffer *out);

}  // namespace adsm::gc
