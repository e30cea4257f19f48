// The child of a fork keeps the program's shared objects as ordinary memory:
// the device stays the parent's, and the window's shared mappings would let
// parent and child write into each other's objects.
#include <sys/mman.h>

#include <cstdint>
#include <vector>

#include "memory/manager.h"
#include "os/vm.h"
#include "support/log.h"

namespace adsm {

void Manager::before_fork() {
    bool any = false;
    for (Device *d : devices_) any |= !d->serves_fork_child();
    if (!any) return;
    // The objects first, then each on its own (fetch_to_host takes the
    // locks and looks each up again: one freed meanwhile is skipped).
    std::vector<std::pair<uintptr_t, size_t>> objects;
    table_.for_each_live([&](Region &r) {
        if (r.kind != RegionKind::device && r.host && r.device && !r.device->serves_fork_child())
            objects.emplace_back(r.host, r.size);
    });
    for (auto [host, size] : objects)
        if (fetch_to_host(reinterpret_cast<void *>(host), size) != adsmSuccess)
            ADSM_LOG(debug, "fork: the object at %p stays on the device: %s", reinterpret_cast<void *>(host),
                     last_detail());
}

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
    // A device that cannot serve the child must not be asked for anything
    // (its driver's or server's state is the parent's): copies from it fail
    // at once, and before_fork left nothing there that the child needs
    // unless a kernel was using it.
    for (Device *d : devices_)
        if (!d->serves_fork_child()) d->detach_after_fork();
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
    for (Device *d : devices_)
        if (d->serves_fork_child()) d->detach_after_fork();
    space_.detach_after_fork();
}

}  // namespace adsm
