// A coherence protocol decides when shared data moves between the host
// mirror and device memory, and what the CPU may touch in between.  The
// memory manager calls it at the two moments the ADSM model defines
// (release at adsmCall, acquire at adsmSync), when the runtime itself
// touches shared data for the program, and from the fault handler when the
// CPU touches a block it may not touch yet.  It sees the manager's regions
// and contexts as SharedObjects and ReleaseGroups (shared_object.h).
//
// release, acquire, read_out, write_in and fill run with the owning
// group's lock held;
// on_fault runs in a signal handler and must stay async-signal-safe.  Each
// protocol is one class in its own file, registered by one line in
// registry.cpp.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "os/vm.h"
#include "protocols/shared_object.h"
#include "support/config.h"
#include "support/status.h"

namespace adsm {

class Device;
struct ReleaseGroup;
namespace os {
class UffdTracker;
}

struct ProtocolEnv {
    // Device 0.  Every device of the process is integrated, or none is:
    // its kind picks the protocol.  Objects name their own (SharedObject::device).
    Device *device;
    const Config *config;
    os::UffdTracker *tracker;  // fault-free write tracking, or nullptr: write faults
    std::vector<Device *> devices = {};  // all of them, device 0 first (empty: device 0 alone)
    // Whether the program may launch a kernel yet: it has used the API or
    // routed GPU calls, or chaos mode forces releases.  Until then nothing
    // is sent ahead of a call or stored for the device alone: a preloaded
    // program that never calls a kernel moved its data to a device for
    // nothing (sort, 40 MB under rolling: 104 MB sent, 40 MB fetched
    // back).  nullptr: from the start.
    const std::atomic<bool> *kernels_expected = nullptr;
};

class Protocol {
public:
    virtual ~Protocol() = default;
    virtual const char *name() const = 0;
    // Whether CPU accesses can fault (the runtime then installs its handler).
    virtual bool uses_faults() const { return false; }
    // Whether a release or an acquire can copy bytes between the host copy
    // and a device's.  One that never does (integrated: every device works
    // on the host's own pages) cannot put older bytes over a CPU write, so
    // a chaos cycle need not stop the program's writers for it.
    virtual bool moves_data() const { return true; }

    virtual void context_created(ReleaseGroup &) {}
    virtual void context_destroyed(ReleaseGroup &) {}

    // A new object whose host copy is current (zeroed: and all zeros);
    // sets its block table, access and state.
    virtual Status on_alloc(SharedObject &r, bool zeroed) = 0;
    // The object is about to disappear; no copy may touch it afterwards.
    virtual void on_free(SharedObject &r) = 0;

    // adsmCall: make the device copy of every object of the group current
    // (a read_mostly one's as release_object(r, true) does).
    virtual Status release(ReleaseGroup &c) = 0;
    // adsmSync: the group's kernels are done; hand its objects back to the CPU.
    virtual Status acquire(ReleaseGroup &c) = 0;

    // A call that names the objects its kernel uses (adsmCallWith) releases
    // those alone, under their group's lock, and its sync acquires those
    // alone.  A read-only one stays readable by the CPU while the kernel
    // runs (the kernel does not change it), and at its acquire (`written`
    // false) nothing comes back.
    virtual Status release_object(SharedObject &r, bool read_only) = 0;
    virtual Status acquire_object(SharedObject &r, bool written) = 0;

    // A call on device `on` is about to launch (any context's, whole or
    // naming its objects): objects with a copy on every device bring that
    // device's copy up to date.
    virtual Status update_replicas(Device &) { return adsmSuccess; }

    // The runtime's own accesses to shared data, for the program (adsmMemcpy,
    // adsmMemset, interposed I/O and bulk memory): copy the object's current
    // contents of [off, off+len) to dst; write src there; fill it with a
    // byte.  The caller has checked the range.  Whole blocks whose current
    // copy is on the device move from or to the device directly, without a
    // round trip through the host copy.  With `ticket`, those device copies
    // may still be under way on return: the caller keeps dst or src as they
    // are until Device::wait_copies(*ticket).
    virtual Status read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) = 0;
    virtual Status write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) = 0;
    virtual Status fill(SharedObject &r, size_t off, int value, size_t len) = 0;

    // Moving an object to another device's memory (a migration; an
    // eviction when device memory runs out).  No kernel may be using it and
    // the caller holds its group's lock.
    //   settle_on_device: the device copy becomes the current one, as a
    //     release makes it for every object of the group (the CPU's next
    //     touch fetches it back); the device's memory can then be copied to
    //     another device's.
    //   evict: the host copy becomes the current one and the device copy
    //     is relied on no more: the CPU may touch all of it without a fault
    //     and the next release sends it whole, to whatever device then
    //     holds it.
    // A failure loses nothing: what did not move stays current where it was.
    virtual Status settle_on_device(SharedObject &r) = 0;
    virtual Status evict(SharedObject &r) = 0;
    // Brings [off, off+len) into the host copy now and lets the CPU read it
    // without a fault, as its reads would (adsmPrefetch to the host).  No
    // kernel uses it; the caller holds its group's lock.
    virtual Status fetch_range(SharedObject &r, size_t off, size_t len) = 0;
    // adsmPrefetch to the host: as fetch_range, or in the background where
    // the protocol can: the copies are queued when it returns, each block
    // opens as it lands, and a CPU access to a block still on its way waits
    // for it.  The caller holds its group's lock; the device's copies
    // landing mean the blocks landed.
    virtual Status prefetch_range(SharedObject &r, size_t off, size_t len) { return fetch_range(r, off, len); }

    // The CPU faulted at addr inside o's host range.  Async-signal-safe.
    enum class FaultOutcome {
        not_mine,  // nothing the protocol protects: the fault is the program's
        retry,     // the access may run again
        failed,    // the data could not be brought in (a device error): the
                   // access must not run again on stale data
    };
    virtual FaultOutcome on_fault(SharedObject &, uintptr_t, bool) { return FaultOutcome::not_mine; }

    // While a fork child copies the objects from the mirror it shares with
    // its parent, the parent's CPU writes must wait (os/write_hold.h):
    // hold_writes takes write access from the object's pages, so that a
    // write faults, and resume_writes gives back what the object's state
    // allows.  Both take r.lock and are async-signal-safe: a thread the hold
    // does not stop resumes an object it writes from the fault handler.  The
    // default is for objects whose pages are always writable.
    virtual Status hold_writes(SharedObject &r);
    virtual Status resume_writes(SharedObject &r);
    // Whether a hold is no more than the whole object read-only while
    // writes_held is set (its pages otherwise always writable).  Such
    // objects are held many at a time: neighbours' changes of protection
    // are made together (ProtectionRuns), where one mprotect per object
    // made a chaos cycle over thousands of small objects cost milliseconds.
    virtual bool holds_by_span(const SharedObject &) const { return true; }
    // For holds_by_span objects, under r.lock: marks a live object held
    // (true) or finds it held already or freed (false)...
    static bool mark_writes_held(SharedObject &r);
    // ... and, once its pages are writable again, unmarks it.
    static void clear_writes_held(SharedObject &r);

    // Writes the object's current contents to dst, zeroed memory (a fork
    // child keeps them).  Of what the host copy holds, only `held` (runs of
    // offsets into the object) is copied: the rest are pages never made,
    // zeros, and copying them would make them in the parent's mirror too.
    virtual Status snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held);
};

// Copies the bytes of [b, e) of the object's host copy that lie in `held` to dst.
void copy_held(const SharedObject &r, uint8_t *dst, size_t b, size_t e, const os::Runs &held);

// A protocol whose host copy is the current one whenever the runtime works
// for the program (batch between a sync and the next call; integrated
// always, the device using the same pages): its own accesses go through the
// alias view.
class HostCopyProtocol : public Protocol {
public:
    Status read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket = nullptr) override;
    Status write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket = nullptr) override;
    Status fill(SharedObject &r, size_t off, int value, size_t len) override;
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
