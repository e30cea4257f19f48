// Shared objects moving between devices: one object handed to another
// context (adsmMigrate), or a context with all its objects (adsmSetDevice,
// GMAC's gmacMigrate).  An object's addresses never change; its device copy
// goes device to device where the back-ends can, else through the host copy.
//
// A context's objects live on its device.  Moving a context moves its
// device memory (adsmDeviceAlloc) first, all of it or none, then its device
// and its shared objects.  One that does not fit on the new
// device waits on the host (as an allocation that finds the device full
// does); one whose copy failed stays current where it was.  Either way the
// context's next call brings it to the device before releasing anything.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "memory/manager.h"
#include "memory/owner_lock.h"
#include "protocols/protection.h"
#include "support/log.h"
#include "support/stats.h"

namespace adsm {

size_t Manager::device_index(const Device &d) const {
    for (size_t i = 0; i < devices_.size(); ++i)
        if (devices_[i] == &d) return i;
    return 0;
}

Status Manager::move_object(Region &r, Device &to, bool committed) {
    Device &from = *r.device;
    if (!r.resident) {
        // Current on the host alone: nothing to copy, and the next release
        // sends it whole wherever it is.
        os::FutexGuard g(r.lock);
        r.device = &to;
        r.resident = committed;
        return adsmSuccess;
    }
    if (&from == &to) return adsmSuccess;
    // The collector reads device copies before it stops the world: one that
    // moves meanwhile is a write it must not trust (collection.cpp).
    r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    Status s;
    bool peer = committed && from.can_copy_to(to);
    if (peer) {
        s = protocol_.settle_on_device(r);
        if (s == adsmSuccess) s = from.copy_to_peer(to, r.dev, r.size);
    } else {
        s = protocol_.evict(r);
    }
    if (s == adsmSuccess) {
        os::FutexGuard g(r.lock);
        r.device = &to;
        r.resident = committed;
    }
    r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    if (s != adsmSuccess) return s;
    from.decommit(r.dev, r.span);
    stats().add(Counter::migrations);
    return adsmSuccess;
}

Status Manager::relocate(Region &r, Device &to) {
    if (r.device == &to || r.pinned) return adsmSuccess;  // (a pinned one stays on its preferred device)
    if (r.home == Home::device && r.device->integrated() != to.integrated()) return change_memory_kind(r, to);
    if (r.home != Home::device && !one_memory_) {
        // Every device reaches it already (host-resident, replicated).
        os::FutexGuard g(r.lock);
        r.device = &to;
        return adsmSuccess;
    }
    if (!r.resident) {
        os::FutexGuard g(r.lock);
        r.device = &to;  // on the host alone: a call that needs it brings it in
        return adsmSuccess;
    }
    // No room there: it waits on the host, as an allocation that finds the
    // device full does, instead of evicting what is there now.
    if (r.device->shares_addresses_with(to)) {
        Status s = hand_over(r, to);
        return s == adsmErrorMemoryAllocation ? move_object(r, to, false) : s;
    }
    if (Status s = to.commit(r.dev, r.span); s != adsmSuccess)
        return s == adsmErrorMemoryAllocation ? move_object(r, to, false) : s;
    if (Status s = move_object(r, to); s != adsmSuccess) {
        to.decommit(r.dev, r.span);
        return s;
    }
    return adsmSuccess;
}

Status Manager::hand_over(Region &r, Device &to) {
    Device &from = *r.device;
    if (to.capacity() - std::min(to.capacity(), to.used()) < r.span)
        return fail(adsmErrorMemoryAllocation, "the %s device has no room for %llu bytes", to.name(),
                    static_cast<unsigned long long>(r.span));
    // Its granules change hands with what they hold: that must be the
    // current copy (see move_object for the collector's count).
    r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    Status s = protocol_.settle_on_device(r);
    if (s == adsmSuccess) s = from.hand_over(to, r.dev, r.span);
    if (s == adsmSuccess) {
        os::FutexGuard g(r.lock);
        r.device = &to;
    }
    r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    if (s == adsmSuccess) stats().add(Counter::migrations);
    return s;
}

Status Manager::change_memory_kind(Region &r, Device &to) {
    Device &from = *r.device;
    ReleaseGroup *group = r.group;
    // The object changes lists in its group (ReleaseGroup::link): it has
    // its own coherence on an integrated device.
    auto set_device = [&](Device *d, bool resident) {
        if (group) group->unlink(&r);
        {
            os::FutexGuard g(r.lock);
            r.device = d;
            r.resident = resident;
        }
        if (group) group->link(&r);
    };
    const bool was_resident = r.resident;
    if (to.integrated()) {
        // The host copy becomes the one copy: what the device holds comes
        // back first, then the protocol lets go of the object.  That copy
        // is in memory already: a device whose count of it is full leaves
        // it uncounted (not resident), where its kernels still reach it.
        Status room = to.commit(r.dev, r.span);
        if (room != adsmSuccess && room != adsmErrorMemoryAllocation) return room;
        r.program_writes.fetch_add(1, std::memory_order_seq_cst);  // see move_object
        Status s = was_resident ? protocol_.evict(r) : adsmSuccess;
        r.program_writes.fetch_add(1, std::memory_order_seq_cst);
        if (s != adsmSuccess) {
            if (room == adsmSuccess) to.decommit(r.dev, r.span);
            return s;
        }
        protocol_.on_free(r);
        set_device(&to, room == adsmSuccess);
        // (Own coherence now: this opens the object to the CPU for good.)
        if (Status e = protocol_.on_alloc(r, false); e != adsmSuccess) s = e;
        if (was_resident) from.decommit(r.dev, r.span);
        stats().add(Counter::migrations);
        return s;
    }
    // From the one copy to a discrete device: the protocol starts with the
    // host copy current and sends all of it at the next release.  Without
    // room there it waits on the host, as relocate's other objects do.
    Status room = to.commit(r.dev, r.span);
    if (room != adsmSuccess && room != adsmErrorMemoryAllocation) return room;
    set_device(&to, room == adsmSuccess);
    Status s = protocol_.on_alloc(r, false);
    if (s == adsmSuccess) s = protocol_.evict(r);
    if (s != adsmSuccess) {
        protocol_.on_free(r);
        if (room == adsmSuccess) to.decommit(r.dev, r.span);
        set_device(&from, true);
        if (protocol_.on_alloc(r, false) != adsmSuccess)
            ADSM_LOG(error, "the shared object at %p could not move, nor be set up again where it was: %s",
                     reinterpret_cast<void *>(r.host), last_detail());
        return s;
    }
    from.decommit(r.dev, r.span);
    stats().add(Counter::migrations);
    return adsmSuccess;
}

Status Manager::move_device_memory(Context &c, Device &to) {
    std::vector<Region *> regions, handed;
    table_.for_each_live([&](Region &r) {
        if (r.kind == RegionKind::device && r.owner() == &c && r.device != &to)
            (r.device->shares_addresses_with(to) ? handed : regions).push_back(&r);
    });
    // All of it moves, or none: it has no host copy to wait in.  Devices
    // sharing addresses hand theirs over (and back, if the rest fails).
    size_t given = 0;
    Status result = adsmSuccess;
    for (; given < handed.size() && result == adsmSuccess; ++given)
        result = handed[given]->device->hand_over(to, handed[given]->dev, handed[given]->span);
    if (result != adsmSuccess) --given;
    auto give_back = [&] {
        for (size_t i = 0; i < given; ++i) (void)to.hand_over(*handed[i]->device, handed[i]->dev, handed[i]->span);
    };
    if (result != adsmSuccess) {
        give_back();
        return fail(result, "the context's device memory (adsmDeviceAlloc) cannot move to the %s device: %s", to.name(),
                    std::string(last_detail()).c_str());
    }
    // The rest fits first, or nothing moves.
    size_t committed = 0;
    for (; committed < regions.size() && result == adsmSuccess; ++committed)
        result = commit_evicting(to, regions[committed]->dev, regions[committed]->span, &c);
    if (result != adsmSuccess) --committed;
    std::vector<uint8_t> bounce;
    for (size_t i = 0; i < committed && result == adsmSuccess; ++i) {
        Region &r = *regions[i];
        Device &from = *r.device;
        if (from.can_copy_to(to)) {
            result = from.copy_to_peer(to, r.dev, r.size);
            continue;
        }
        if (bounce.empty()) bounce.resize(4u << 20);
        for (size_t at = 0; at < r.size && result == adsmSuccess; at += bounce.size()) {
            size_t n = std::min(bounce.size(), r.size - at);
            result = from.copy_to_host(bounce.data(), r.dev + at, n);
            if (result == adsmSuccess) result = to.copy_to_device(r.dev + at, bounce.data(), n);
        }
    }
    if (result != adsmSuccess) {
        for (size_t i = 0; i < committed; ++i) to.decommit(regions[i]->dev, regions[i]->span);
        give_back();
        return fail(result, "the context's device memory (adsmDeviceAlloc) cannot move to the %s device: %s", to.name(),
                    std::string(last_detail()).c_str());
    }
    for (Region *r : handed) {
        r->device = &to;
        stats().add(Counter::migrations);
    }
    for (Region *r : regions) {
        r->device->decommit(r->dev, r->span);
        // The CPU may touch an integrated device's memory (device_alloc).
        if (r->device->integrated() != to.integrated())
            (void)protect_range(r->dev, r->span, to.integrated() ? PROT_READ | PROT_WRITE : PROT_NONE);
        r->device = &to;
        stats().add(Counter::migrations);
    }
    return adsmSuccess;
}

Status Manager::move_context(size_t to, Context *in) {
    if (to >= devices_.size())
        return fail(adsmErrorInvalidDevice, "device %zu does not exist: this process has %zu (0 to %zu; ADSM_DEVICE)", to,
                    devices_.size(), devices_.size() - 1);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    ContextGuard lock(*c);
    if (c->device == devices_[to]) return adsmSuccess;
    if (c->unsynced_calls > 0)
        return fail(adsmErrorBusy, "the context's kernels may still be running on device %zu: call adsmSync before moving it",
                    device_index(c));
    if (Status s = move_device_memory(*c, *devices_[to]); s != adsmSuccess) return s;
    if (c->has_stream) {
        c->device->destroy_stream(c->stream);
        c->has_stream = false;
    }
    c->device = devices_[to];
    // Listed first: an object that changes memory kind changes lists.
    std::vector<Region *> objects, placed;
    for (SharedObject *o = c->objects; o; o = o->next) objects.push_back(static_cast<Region *>(o));
    for (SharedObject *o = c->placed; o; o = o->next) placed.push_back(static_cast<Region *>(o));
    Status result = adsmSuccess;
    for (Region *r : objects)
        if (Status s = relocate(*r, *c->device); s != adsmSuccess && result == adsmSuccess) result = s;
    for (Region *r : placed) (void)relocate(*r, *c->device);
    return result;
}

Status Manager::migrate(void *p, adsmContext_t handle) {
    Context *to = nullptr;
    if (Status s = contexts_.resolve(handle, &to); s != adsmSuccess) return s;
    Status s = migrate_to(p, to);
    contexts_.unref(to);
    return s;
}

void Manager::hand_over_locked(Region &r, Context &from, Context &to) {
    from.unlink(&r);
    r.group = &to;
    // Kernels `to` launched before now never saw it.
    r.birth_call = to.calls.load();
    to.link(&r);
    to.refs.fetch_add(1);
}

void Manager::adopt_program_mallocs() {
    Context *from = contexts_.existing_program_context();
    Context *to = current();
    if (!from || !to || from == to) return;
    size_t moved = 0;
    {
        ContextPairGuard both(from, to);
        // A routed launch released them already: they are the routed calls'.
        if (from->calls.load() != 0 || from->device != to->device) return;
        for (SharedObject **list : {&from->objects, &from->placed}) {
            for (SharedObject *o = *list; o;) {
                SharedObject *next = o->next;
                Region *r = static_cast<Region *>(o);
                if (r->origin == RegionOrigin::malloc && r->live.load()) {
                    hand_over_locked(*r, *from, *to);
                    ++moved;
                }
                o = next;
            }
        }
    }
    for (size_t i = 0; i < moved; ++i) contexts_.unref(from);
}

void Manager::gather_companion(Context &c) {
    Context *program = contexts_.existing_program_context();
    if (!program) return;  // nothing routed
    Context *from = &c == program ? contexts_.current_if_made() : program;
    if (!from || from == &c || from->nobjects.load(std::memory_order_relaxed) == 0) return;
    settle(from);
    size_t moved = 0;
    {
        ContextPairGuard both(from, &c);
        if (from->device != c.device) return;  // (its objects are not on this kernel's device)
        for (SharedObject **list : {&from->objects, &from->placed}) {
            for (SharedObject *o = *list; o;) {
                SharedObject *next = o->next;
                Region *r = static_cast<Region *>(o);
                // (A kernel launched meanwhile keeps what it holds; the
                // collector's chunks stay with their context; a replica is
                // every context's already; device memory alone has no host
                // copy to keep coherent.)
                if (r->live.load() && r->kind != RegionKind::device && r->origin != RegionOrigin::collector &&
                    r->home != Home::every_device && !from->holds(*r)) {
                    hand_over_locked(*r, *from, c);
                    ++moved;
                }
                o = next;
            }
        }
    }
    for (size_t i = 0; i < moved; ++i) contexts_.unref(from);
}

void Manager::adopt_argument_mallocs(Context &c, const LaunchDesc &launch) {
    if (c.device->integrated() || !launch.args) return;
    const auto *b = static_cast<const uint8_t *>(launch.args);
    for (size_t off = 0; off + sizeof(uintptr_t) <= launch.args_size; off += sizeof(uintptr_t)) {
        uintptr_t a;
        std::memcpy(&a, b + off, sizeof a);
        Region *r = nullptr;
        if (table_.lookup(a, &r) != RegionTable::Lookup::live || r->origin != RegionOrigin::malloc ||
            r->home != Home::device)
            continue;
        // (Read unlocked, checked again under both locks.)
        Context *from = r->owner();
        if (!from || from == &c) continue;
        {
            ContextPairGuard both(from, &c);
            if (!r->live.load() || r->owner() != from || from->device != c.device || from->holds(*r)) continue;
            hand_over_locked(*r, *from, c);
        }
        contexts_.unref(from);
    }
}

Status Manager::migrate_to(void *p, Context *to) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = nullptr;
    if (table_.lookup(a, &r) != RegionTable::Lookup::live || r->kind == RegionKind::device || r->host != a)
        return fail(adsmErrorInvalidPointer, "%p is not the start of a live shared allocation", p);
    if (r->origin == RegionOrigin::collector)
        return fail(adsmErrorInvalidPointer,
                    "%p is in the collector's heap: collected objects stay with the context that allocated them", p);
    Context *from;
    {
        OwnerLock owner(r, p);
        if (!owner.valid() || r->host != a) return fail(adsmErrorInvalidPointer, "%p was freed", p);
        from = owner.owner();
    }
    if (from == to) return adsmSuccess;
    {
        ContextPairGuard both(from, to);
        // Freed or handed elsewhere between the two locks: as if never found.
        if (!r->live.load() || r->owner() != from || r->host != a)
            return fail(adsmErrorInvalidPointer, "%p was freed or migrated by another thread meanwhile", p);
        if (from->holds(*r))
            return fail(adsmErrorBusy, "%p may be in use by a kernel its context launched: call adsmSync before migrating it",
                        p);
        if (Status s = relocate(*r, *to->device); s != adsmSuccess) return s;
        hand_over_locked(*r, *from, *to);
    }
    contexts_.unref(from);
    return adsmSuccess;
}

}  // namespace adsm
