// A hold on the program's changes to shared memory, for as long as a fork
// child copies the shared objects from the mirror it still shares with its
// parent (memory/fork_child.cpp), or a chaos cycle copies them to a device
// and back without faults to stop writers (memory/manager.cpp).  The forking thread waits for that copy;
// without a hold the parent's other threads wrote on meanwhile, and the
// child found a mix of before and after the fork that no instant held.
//
// Each change (a write fault, a store or fill for the program, an
// allocation, a free) runs inside a Change.  hold() waits for the changes
// under way to end, after which new ones wait until release().  Changes are
// counted on per-thread stripes, so that threads entering them do not
// share one cache line.  Async-signal-safe: the fault handler enters them.
//
// A change never waits where waiting could deadlock the hold: in the
// holding thread, nested in another change of its thread, or while the
// collector has the world stopped (the holder may be one of the stopped).
#pragma once

#include <atomic>
#include <cstdint>

namespace adsm::os::write_hold {

class Change {
public:
    Change();
    ~Change();
    Change(const Change &) = delete;
    Change &operator=(const Change &) = delete;

private:
    std::atomic<uint32_t> *counted_ = nullptr;
};

// Starts a hold (a fork's, or a chaos cycle's under a protocol that takes
// no faults): true once no change is under way, false (and no hold) if some,
// or another thread's hold, did not end within patience_ns, or the caller
// is inside a change.
bool hold(uint64_t patience_ns);
// Ends it: the waiting changes go on.
void release();
// Whether a hold is on (a hint without a lock).
bool held();
// Counts the holds that ended: a fault that began before one ended may
// have found a page the hold had closed.
uint32_t holds_ended();

// Around the collector's stop of the world.  Before it, waits for a hold to
// end, unless the caller is inside a change (nothing it could wait for).
void world_stopping();
void world_started();

// In a fork child: no hold, no changes under way (the parent's).
void reset_after_fork();

}  // namespace adsm::os::write_hold
