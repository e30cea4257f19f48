// The child of a fork keeps the program's shared objects as ordinary memory:
// the device stays the parent's, and the window's shared mappings would let
// parent and child write into each other's objects.
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>

#include <cstdint>
#include <vector>

#include "memory/manager.h"
#include "os/error_text.h"
#include "os/proc_text.h"
#include "os/vm.h"
#include "os/write_hold.h"
#include "protocols/protection.h"
#include "support/log.h"

namespace adsm {
namespace {
// A change to shared memory under way when a fork holds them is waited for
// this long at most (a fault waiting for a device's copy, a store's I/O).
constexpr uint64_t kForkHoldPatienceNs = 1'000'000'000ull;
}  // namespace

bool Manager::before_fork() {
    // (A process with device memory alone has nothing for a child to copy,
    // and is counted all the same: asking would walk every region.)
    const bool any = table_.live_regions() > 0;
    bool fetch = false;
    for (Device *d : devices_) fetch |= !d->serves_fork_child();
    if (!fetch || !any) return any;
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
    return true;
}

bool Manager::hold_writes() {
    // (No other thread, no other writer: only this one makes threads now.)
    if (os::thread_count() == 1) return false;
    if (!os::write_hold::hold(kForkHoldPatienceNs)) {
        ADSM_LOG(warn, "fork: a change to shared memory under way did not end within a second; the parent's other "
                       "threads go on while the child copies the shared objects, and what they write may reach it");
        return false;
    }
    close_to_writes();
    return true;
}

// No allocation or free runs during a hold: the regions stay as they are,
// and no thread but the holder changes shared memory (the others' changes
// wait), so an object marked held before its pages close, or writable
// before it is unmarked, is seen by no one in between.
void Manager::close_to_writes() {
    ProtectionRuns closing(PROT_READ);
    table_.for_each_live([&](Region &r) {
        if (r.kind == RegionKind::device || !r.host) return;
        if (protocol_.holds_by_span(r)) {
            if (Protocol::mark_writes_held(r)) closing.add(r.host, r.span);
        } else if (protocol_.hold_writes(r) != adsmSuccess) {
            ADSM_LOG(debug, "writes to the shared object at %p are not held: %s", reinterpret_cast<void *>(r.host),
                     last_detail());
        }
    });
    // (Failing, some objects marked held stay writable: their writes are
    // not held, as when one object's hold fails; each resumes as usual.)
    if (closing.flush() != adsmSuccess) ADSM_LOG(debug, "writes to some shared objects are not held: %s", last_detail());
}

void Manager::resume_writes() {
    ProtectionRuns opening(PROT_READ | PROT_WRITE);
    auto held = [](const Region &r) { return r.kind != RegionKind::device && r.host && r.writes_held.load(); };
    table_.for_each_live([&](Region &r) {
        if (!held(r)) return;
        if (protocol_.holds_by_span(r)) {
            opening.add(r.host, r.span);
        } else if (protocol_.resume_writes(r) != adsmSuccess) {
            // (Failing, the blocks stay read-only and each reopens at its next write.)
            ADSM_LOG(debug, "the shared object at %p stays read-only until its next write: %s",
                     reinterpret_cast<void *>(r.host), last_detail());
        }
    });
    // Failing, every such object stays marked: each reopens at its next write.
    if (opening.flush() == adsmSuccess) {
        table_.for_each_live([&](Region &r) {
            if (held(r) && protocol_.holds_by_span(r)) Protocol::clear_writes_held(r);
        });
    } else {
        ADSM_LOG(debug, "some shared objects stay read-only until their next write: %s", last_detail());
    }
    os::write_hold::release();
}

void Manager::become_fork_child() {
    // Only this thread exists now, and locks other threads held at the fork
    // stay held: read the tables without them.  A block's state only
    // changes after its data has moved, so state and data agree.
    const uintptr_t base = space_.base();
    const size_t size = space_.size();
    // A device that cannot serve the child must not be asked for anything
    // (its driver's or server's state is the parent's): copies from it fail
    // at once, and before_fork left nothing there that the child needs
    // unless a kernel was using it.
    for (Device *d : devices_)
        if (!d->serves_fork_child()) d->detach_after_fork();
    // Each object's private copy, made while the window still shows the
    // parent's pages.  (The child's allocator is whole again after fork.)
    struct Copy {
        uintptr_t at;
        size_t span;
        void *pages;
    };
    std::vector<Copy> copies;
    table_.for_each_live([&](Region &r) {
        if (r.kind == RegionKind::device || !r.host) return;
        void *pages = os::map_anon(r.span, PROT_READ | PROT_WRITE, true);
        if (pages == MAP_FAILED) {
            ADSM_LOG(error, "fork: no memory for the child's copy of the shared object at %p (%s): the child cannot use it",
                     reinterpret_cast<void *>(r.host), os::error_text(errno));
            return;
        }
        // Only what the mirror holds is copied: the pages the program never
        // made are zeros in the copy as they were, and making them to read
        // them would make them in the parent's mirror too (a 512 MiB object
        // with 4 MiB used took 340 ms a fork, and 512 MiB more of the
        // parent's memory).  Both sides' pages made in one call a run: a
        // fork leaves a shared mapping's page tables empty, and a fault per
        // page of a copy and of its source made a child of a program with a
        // 10 MiB heap take 150 ms to start.  (A side that cannot be made now
        // faults as before.)
        const os::Runs held = space_.host_runs(r.host, r.size);
        for (auto [b, e] : held) {
            os::populate(static_cast<uint8_t *>(pages) + b, e - b, true);
            if (r.alias) os::populate(r.alias + b, e - b, false);
        }
        if (protocol_.snapshot(r, static_cast<uint8_t *>(pages), held) != adsmSuccess)
            ADSM_LOG(error, "fork: the child's copy of the shared object at %p lacks what the device held: %s",
                     reinterpret_cast<void *>(r.host), last_detail());
        copies.push_back({r.host, r.span, pages});
    });
    // The whole window, shared mappings and device memory included, becomes
    // inaccessible private memory: nothing the child does reaches the
    // parent's objects.  Should that fail, closing it does as well; a child
    // that could do neither would write into its parent's memory, so it
    // stops instead.
    if (os::reserve(size, base, true) == MAP_FAILED && os::protect(reinterpret_cast<void *>(base), size, PROT_NONE) != 0) {
        ADSM_LOG(error, "fork: the child cannot part the shared window at %p from its parent's (%s); stopping it",
                 reinterpret_cast<void *>(base), os::error_text(errno));
        abort();
    }
    // Then each copy moves in on its own: before Linux 6.17 a move covers
    // exactly one mapping, and the copies are separate mappings.
    for (const Copy &c : copies)
        if (int e = os::remap_fixed(c.pages, c.span, reinterpret_cast<void *>(c.at)); e != 0) {
            ADSM_LOG(error, "fork: the child's copy of the shared object at %p cannot take its place (%s): the "
                            "child cannot use it",
                     reinterpret_cast<void *>(c.at), os::error_text(-e));
            os::unmap(c.pages, c.span);
        }
    for (Device *d : devices_)
        if (d->serves_fork_child()) d->detach_after_fork();
    space_.detach_after_fork();
}

}  // namespace adsm
