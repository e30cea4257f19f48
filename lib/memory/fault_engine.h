// The fault engine: turns a SIGSEGV on a protected page of shared memory
// into a protocol transition, and a fault on anything else into the
// application's business (its own handler, or the default crash).
//
// The ordinary path is async-signal-safe and lock-free up to the region's
// own futex lock: an O(1) page-map lookup, then the protocol.  A CPU access
// to data a kernel may still be using (between adsmCall and adsmSync) is a
// race and follows ADSM_ON_RACE: wait for the kernels (default), warn, or
// abort, naming the faulting code once.  That path also takes the context's
// lock, which is safe because the runtime never touches the application's
// view of shared memory while holding it.
#pragma once


#include "support/status.h"

namespace adsm {

class RegionTable;
class Protocol;
class Manager;

enum class RacePolicy { sync, warn, abort };

Status install_fault_engine(RegionTable *table, Protocol *protocol, Manager *manager, RacePolicy policy);

}  // namespace adsm
