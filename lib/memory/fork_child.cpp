// The child of a fork keeps the program's shared objects as ordinary memory:
// the device stays the parent's, and the window's shared mappings would let
// parent and child write into each other's objects.
#include <sys/mman.h>

#include <cstdint>

#include "memory/manager.h"
#include "os/vm.h"
#include "support/log.h"

namespace adsm {

void Manager::become_fork_child() {
    // Only this thread exists now, and locks other threads held at the fork
    // stay held: read the tables without them.  A block's state only
    // changes after its data has moved, so state and data agree.
    const uintptr_t base = space_.base();
    const size_t size = space_.size();
    // Only the regions' pages open up; the rest of the window (device
    // memory included) stays inaccessible, as it is in the parent.
    void *copy = os::map_anon(size, PROT_NONE, true);
    if (copy == MAP_FAILED) return;
    table_.for_each_live([&](Region &r) {
        if (r.kind == RegionKind::device || !r.host) return;
        uint8_t *dst = static_cast<uint8_t *>(copy) + (r.host - base);
        os::protect(dst, r.span, PROT_READ | PROT_WRITE);
        if (protocol_.snapshot(r, dst) != adsmSuccess)
            ADSM_LOG(error, "fork: the child's copy of the shared object at %p lacks what the device held: %s",
                     reinterpret_cast<void *>(r.host), last_detail());
    });
    // One move replaces the whole window, shared mappings and all, with the
    // private copy: the regions become ordinary memory at the same addresses.
    os::remap_fixed(copy, size, reinterpret_cast<void *>(base));
    for (Device *d : devices_) d->detach_after_fork();
    space_.detach_after_fork();
}

}  // namespace adsm
