// A coherence protocol decides when shared data moves between the host
// mirror and device memory, and what the CPU may touch in between.  The
// memory manager calls it at the two moments the ADSM model defines
// (release at adsmCall, acquire at adsmSync) and whenever the runtime itself
// touches shared data on the program's behalf.
//
// A protocol works on one context's regions at a time, always under that
// context's lock.  Each protocol is one class in its own file, registered by
// one line in registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "memory/region.h"
#include "support/config.h"
#include "support/status.h"

namespace adsm {

class Device;
class AddressSpace;

struct ProtocolEnv {
    Device *device;
    AddressSpace *space;
    const Config *config;
};

class Protocol {
public:
    virtual ~Protocol() = default;
    virtual const char *name() const = 0;

    // A new region whose host copy is current; sets its access and state.
    virtual Status on_alloc(Region &r) = 0;
    // The region is about to disappear.
    virtual void on_free(Region &r) = 0;

    // adsmCall: make the device copy of every region in the list (linked by
    // Region::next) current for the kernel.
    virtual Status release(Region *regions) = 0;
    // adsmSync: the context's kernels are done; hand the regions back to the CPU.
    virtual Status acquire(Region *regions) = 0;

    // The runtime is about to read (write=false) or write [off, off+len) of
    // r's host copy through the alias view; make that copy current first.
    virtual Status host_access(Region &r, size_t off, size_t len, bool write) = 0;
};

struct ProtocolInfo {
    const char *name;
    const char *summary;
};
const std::vector<ProtocolInfo> &protocols();

// Builds the protocol `name`; an integrated device always gets the protocol
// that never copies, whatever was asked.
Status make_protocol(const std::string &name, const ProtocolEnv &env, std::unique_ptr<Protocol> *out);

}  // namespace adsm
