// The collector's roots outside thread stacks: the writable data and bss of
// every object loaded now (the program, its libraries, dlopen()ed ones),
// found at run time through the dynamic loader, and the static TLS layout
// that World uses to find each thread's thread-local storage.
#pragma once

#include "gc/range_buffer.h"
#include "support/status.h"

namespace adsm::gc {

// Which objects the loader had loaded (in every namespace, where glibc
// chains them: 2.35 and later), to tell whether one came or went since.
struct LoadedObjects {
    uint64_t count = 0, hash = 0;
    bool operator==(const LoadedObjects &o) const { return count == o.count && hash == o.hash; }
};

// Appends the writable segments of every loaded object (PT_LOAD with PF_W,
// the pages PT_GNU_RELRO makes read-only excluded), less the runtime's own
// when it is a library of its own (linked into the program, as in the
// tests, its data is the program's) and less the vDSO.  Takes the loader's
// lock: called before the world stops.  *seen: the objects listed.
Status data_segments(RangeBuffer *out, LoadedObjects *seen);

// With the world stopped: whether the loaded objects are still those
// data_segments listed.  False while a stopped thread is inside the loader
// changing them, or once one was loaded or unloaded since: a library
// dlopen()ed meanwhile may already hold collected pointers its constructor
// stored in data no root covers.  Takes no lock.
bool loaded_objects_unchanged(const LoadedObjects &seen);

}  // namespace adsm::gc
