// libfabric's exported functions, loaded when a remote device or the device
// server first needs them rather than by every process the runtime is
// preloaded into: loading libfabric loads its providers' libraries, and one
// of them (PSM's, on Debian) sleeps about 0.2 s in its constructor, which a
// program that never uses a remote device would pay at every start.
//
// Everything else libfabric offers (fi_endpoint, fi_write, ...) is an inline
// call through the objects these functions make.  Each function is taken at
// the symbol version of the headers the build used (CMake reads them off the
// library it found), so a newer libfabric gives the ABI those headers
// describe, as the dynamic linker would.
#pragma once

#include <rdma/fabric.h>

#include "support/status.h"

namespace adsm::remote {

struct FabricLibrary {
    decltype(&::fi_getinfo) getinfo = nullptr;
    decltype(&::fi_freeinfo) freeinfo = nullptr;
    decltype(&::fi_dupinfo) dupinfo = nullptr;
    decltype(&::fi_fabric) fabric = nullptr;
    decltype(&::fi_strerror) strerror = nullptr;
};

// Loads libfabric once: every caller gets the same table, or the same
// failure with the same words.
Status load_fabric(const FabricLibrary **out);

// The table once load_fabric has succeeded (what uses it runs after).
const FabricLibrary &fabric_library();

}  // namespace adsm::remote
