// A coherence protocol decides when shared data moves between the host
// mirror and device memory, and what the CPU may touch in between.  The
// memory manager calls it at the two moments the ADSM model defines
// (release at adsmCall, acquire at adsmSync), when the runtime itself
// touches shared data for the program, and from the fault handler when the
// CPU touches a block it may not touch yet.
//
// release, acquire, read_out, write_in and fill run with the owning
// context's lock held;
// on_fault runs in a signal handler and must stay async-signal-safe.  Each
// protocol is one class in its own file, registered by one line in
// registry.cpp.
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
struct Context;
namespace os {
class UffdTracker;
}

struct ProtocolEnv {
    Device *device;
    AddressSpace *space;
    const Config *config;
    os::UffdTracker *tracker;  // fault-free write tracking, or nullptr: write faults
};

class Protocol {
public:
    virtual ~Protocol() = default;
    virtual const char *name() const = 0;
    // Whether CPU accesses can fault (the runtime then installs its handler).
    virtual bool uses_faults() const { return false; }

    virtual void context_created(Context &) {}
    virtual void context_destroyed(Context &) {}

    // A new region whose host copy is current (zeroed: and all zeros);
    // sets its block table, access and state.
    virtual Status on_alloc(Region &r, bool zeroed) = 0;
    // The region is about to disappear; no copy may touch it afterwards.
    virtual void on_free(Region &r) = 0;

    // adsmCall: make the device copy of every region of the context current.
    virtual Status release(Context &c) = 0;
    // adsmSync: the context's kernels are done; hand its regions back to the CPU.
    virtual Status acquire(Context &c) = 0;

    // The runtime's own accesses to shared data, for the program (adsmMemcpy,
    // adsmMemset, interposed I/O and bulk memory): copy the region's current
    // contents of [off, off+len) to dst; write src there; fill it with a
    // byte.  The caller has checked the range.  Whole blocks whose current
    // copy is on the device move from or to the device directly, without a
    // round trip through the host copy.  With `ticket`, those device copies
    // may still be under way on return: the caller keeps dst or src as they
    // are until Device::wait_copies(*ticket).
    virtual Status read_out(Region &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) = 0;
    virtual Status write_in(Region &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) = 0;
    virtual Status fill(Region &r, size_t off, int value, size_t len) = 0;

    // The CPU faulted at addr inside r's host range.  Async-signal-safe.
    enum class FaultOutcome {
        not_mine,  // nothing the protocol protects: the fault is the program's
        retry,     // the access may run again
        failed,    // the data could not be brought in (a device error): the
                   // access must not run again on stale data
    };
    virtual FaultOutcome on_fault(Region &, uintptr_t, bool) { return FaultOutcome::not_mine; }

    // Writes the region's current contents to dst (a fork child keeps them).
    virtual Status snapshot(const Region &r, uint8_t *dst);
};

// A protocol whose host copy is the current one whenever the runtime works
// for the program (batch between a sync and the next call; integrated
// always, the device using the same pages): its own accesses go through the
// alias view.
class HostCopyProtocol : public Protocol {
public:
    Status read_out(Region &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) override;
    Status write_in(Region &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) override;
    Status fill(Region &r, size_t off, int value, size_t len) override;
};

struct ProtocolInfo {
    const char *name;
    const char *summary;
    bool tracks_writes;  // uses ProtocolEnv::tracker when there is one
};
const std::vector<ProtocolInfo> &protocols();
// nullptr if there is no such protocol.
const ProtocolInfo *find_protocol(const std::string &name);

// Builds the protocol `name`; an integrated device always gets the protocol
// that never copies, whatever was asked.
Status make_protocol(const std::string &name, const ProtocolEnv &env, std::unique_ptr<Protocol> *out);

}  // namespace adsm
