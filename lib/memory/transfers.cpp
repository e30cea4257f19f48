// The runtime moving bytes on the program's behalf: between shared and
// ordinary memory, within shared memory, and in and out of device memory.
// Shared memory is only ever reached through the protocol, under its
// owner's lock, and never while a kernel of that owner may be using it.
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "memory/manager.h"
#include "memory/owner_lock.h"
#include "os/uffd.h"
#include "os/write_hold.h"
#include "support/profile.h"

namespace adsm {
namespace {

constexpr size_t kBounce = 1 << 20;

// The protocol moves a region's bytes only to or from plain memory, so a
// copy between a region and another region or device memory goes through a
// buffer, a chunk at a time to keep the buffer small.  Each chunk is the
// part of the n bytes at offset `at`: `in` fills the buffer with it, `out`
// stores it.  Backward walks from the end, as an overlapping move to a
// higher address needs.
template <class In, class Out>
Status chunked_copy(size_t n, bool backward, In &&in, Out &&out) {
    const size_t chunk = n < kBounce ? n : kBounce;
    std::unique_ptr<uint8_t[]> bounce(new (std::nothrow) uint8_t[chunk]);
    if (!bounce) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte bounce buffer", chunk);
    for (size_t done = 0; done < n;) {
        size_t len = n - done < chunk ? n - done : chunk;
        size_t at = backward ? n - done - len : done;
        if (Status st = in(at, bounce.get(), len); st != adsmSuccess) return st;
        if (Status st = out(at, bounce.get(), len); st != adsmSuccess) return st;
        done += len;
    }
    return adsmSuccess;
}

}  // namespace

// Finds the live region that holds all of [p, p+n): its host side, or with
// device_side the memory of a device allocation.
Status Manager::owned_range(const void *p, size_t n, bool device_side, Region **out) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = nullptr;
    auto k = table_.lookup(a, &r);
    const char *what = device_side ? "device memory (adsmDeviceAlloc)" : "shared memory (adsmAlloc)";
    if (k == RegionTable::Lookup::freed) return fail(adsmErrorInvalidPointer, "%p points into freed memory", p);
    if (k != RegionTable::Lookup::live) return fail(adsmErrorInvalidPointer, "%p is not %s", p, what);
    uintptr_t start = device_side ? r->dev : r->host;
    bool right_kind = device_side ? r->kind == RegionKind::device : (r->kind != RegionKind::device && r->contains_host(a));
    if (!right_kind) return fail(adsmErrorInvalidPointer, "%p is not %s", p, what);
    size_t off = a - start;
    if (off > r->size || n > r->size - off)
        return fail(adsmErrorInvalidValue, "[%p, +%zu) runs past the end of the allocation at %p (%zu bytes)", p, n,
                    ptr(start), r->size);
    *out = r;
    return adsmSuccess;
}

template <class F>
Status Manager::with_idle(const void *p, size_t n, bool wait, F &&f) {
    if (n == 0) return adsmSuccess;
    Region *r;
    if (Status s = owned_range(p, n, false, &r); s != adsmSuccess) return s;
    for (;;) {
        Context *busy = nullptr;
        {
            OwnerLock lock(r, p, n);
            if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", p);
            if (!lock.owner()->holds(*r)) return f(*r, reinterpret_cast<uintptr_t>(p) - r->host);
            if (!wait) return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", p);
            busy = lock.owner();
        }
        settle(busy);  // then look again: another call may have come meanwhile
    }
}

// The protocol writes through the alias view, where the write tracker
// cannot see it: readers other than the protocol are told, before and
// after, so that a reader that takes the log between the two (a collection
// that stopped this thread) still finds the write the next time.  A write
// into a collector chunk is counted (Region::program_writes) before and
// after, odd while it is under way.
template <class Write>
Status Manager::program_store(Region &r, size_t off, size_t n, Write &&write) {
    os::UffdTracker *t = write_log_.load(std::memory_order_acquire);
    bool counted = r.origin == RegionOrigin::collector;
    if (counted) r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    if (t) t->note_unseen(r.host + off, n);
    Status st = write();
    if (t) t->note_unseen(r.host + off, n);
    if (counted) r.program_writes.fetch_add(1, std::memory_order_seq_cst);
    return st;
}

// A write into a collector chunk has landed when it returns, asynchronous
// or not: the count the collector compares must not move on before the
// data does.
Status Manager::write_in(Region &r, size_t off, const void *src, size_t n, uint64_t *ticket) {
    if (r.origin == RegionOrigin::collector) ticket = nullptr;
    return program_store(r, off, n, [&] { return protocol_.write_in(r, off, src, n, ticket); });
}

Status Manager::fill(Region &r, size_t off, int value, size_t n) {
    return program_store(r, off, n, [&] { return protocol_.fill(r, off, value, n); });
}

Status Manager::wait_for_own_kernels() {
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    ContextGuard lock(*c);
    return wait_for_kernels(c);
}

// ---------------------------------------------------------------- shared memory

Status Manager::memset(void *p, int value, size_t n) {
    profile::Cause cause;
    os::write_hold::Change change;  // (stores for the program wait for a fork's copy as its writes do)
    return with_idle(p, n, false, [&](Region &r, size_t off) { return fill(r, off, value, n); });
}

Status Manager::memcpy(void *dst, const void *src, size_t n) {
    profile::Cause cause;
    os::write_hold::Change change;
    if (n == 0) return adsmSuccess;
    if (!dst || !src) return fail(adsmErrorInvalidValue, "NULL %s", dst ? "source" : "destination");
    uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    Region *rd = nullptr, *rs = nullptr;
    if (space_.contains(d) || space_.contains(s)) {
        if (space_.contains(d))
            if (Status st = owned_range(dst, n, false, &rd); st != adsmSuccess) return st;
        if (space_.contains(s))
            if (Status st = owned_range(src, n, false, &rs); st != adsmSuccess) return st;
    }
    if (!rd && !rs) return fail(adsmErrorInvalidValue, "neither %p nor %p is shared memory; use memcpy", dst, src);
    for (;;) {
        Context *a = rd ? rd->owner() : nullptr, *b = rs ? rs->owner() : nullptr;
        ContextPairGuard both(a, b);
        // (A migration may have handed an operand to another context first.)
        if ((rd && rd->owner() != a) || (rs && rs->owner() != b)) continue;
        for (Region *r : {rd, rs}) {
            if (!r) continue;
            if (!r->live.load()) return fail(adsmErrorInvalidPointer, "an operand was freed meanwhile");
            if (r->owner()->holds(*r))
                return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", ptr(r->host));
        }
        if (rs && rd) return copy_shared(*rd, d - rd->host, *rs, s - rs->host, n);
        if (rs) return protocol_.read_out(*rs, s - rs->host, dst, n);
        return write_in(*rd, d - rd->host, src, n);
    }
}

// Shared to shared, in the direction that keeps an overlapping move correct.
Status Manager::copy_shared(Region &rd, size_t doff, Region &rs, size_t soff, size_t n) {
    const bool backward = &rd == &rs && doff > soff && doff < soff + n;
    return chunked_copy(
        n, backward, [&](size_t at, uint8_t *buf, size_t len) { return protocol_.read_out(rs, soff + at, buf, len); },
        [&](size_t at, uint8_t *buf, size_t len) { return write_in(rd, doff + at, buf, len); });
}

// A device's tickets count its own copies: the caller's ticket carries the
// device's index + 1 in its top byte, and a copy on another device than
// the one it already names, or on several (a split object's parts, a
// replicated object's copies), runs synchronously.
template <class Copy>
Status Manager::with_ticket(Region &r, uint64_t *ticket, Copy &&copy) {
    if (!ticket || r.split || r.own_coherence()) return copy(nullptr);
    const uint64_t mine = device_index(*r.device) + 1, named = *ticket >> kTicketDeviceShift;
    if (named && named != mine) return copy(nullptr);
    uint64_t own = *ticket & ((uint64_t{1} << kTicketDeviceShift) - 1);
    Status s = copy(&own);
    if (own) *ticket = mine << kTicketDeviceShift | own;
    return s;
}

Status Manager::wait_copies(uint64_t ticket) {
    if (ticket == 0) return adsmSuccess;
    const uint64_t d = (ticket >> kTicketDeviceShift) - 1;
    if (d >= devices_.size()) return fail(adsmErrorInvalidValue, "no device's copies carry ticket %#llx",
                                          static_cast<unsigned long long>(ticket));
    return devices_[d]->wait_copies(ticket & ((uint64_t{1} << kTicketDeviceShift) - 1));
}

Status Manager::program_read(const void *src, void *dst, size_t n, uint64_t *ticket) {
    profile::Cause cause;
    return with_idle(src, n, true, [&](Region &r, size_t off) {
        return with_ticket(r, ticket, [&](uint64_t *t) { return protocol_.read_out(r, off, dst, n, t); });
    });
}

Status Manager::program_write(void *dst, const void *src, size_t n, uint64_t *ticket, bool wait) {
    profile::Cause cause;
    os::write_hold::Change change;
    return with_idle(dst, n, wait, [&](Region &r, size_t off) {
        return with_ticket(r, ticket, [&](uint64_t *t) { return write_in(r, off, src, n, t); });
    });
}

Status Manager::program_fill(void *dst, int value, size_t n) {
    profile::Cause cause;
    os::write_hold::Change change;
    return with_idle(dst, n, true, [&](Region &r, size_t off) { return fill(r, off, value, n); });
}

// ---------------------------------------------------------------- prefetch

Status Manager::prefetch(const void *p, size_t n, int device) {
    profile::Cause cause;
    if (device != kHost && (device < 0 || static_cast<size_t>(device) >= devices_.size()))
        return fail(adsmErrorInvalidDevice, "device %d does not exist: this process has %zu (ADSM_DEVICE)", device,
                    devices_.size());
    return with_idle(p, n, false, [&](Region &r, size_t off) {
        if (device == kHost) {
            r.owner()->host_prefetches.store(true, std::memory_order_release);
            return protocol_.prefetch_range(r, off, n);
        }
        Context &owner = *r.owner();
        // (One kept on a preferred device lives there, whoever releases it.)
        Device &home = r.pinned ? *r.device : *owner.device;
        if (devices_[device] != &home && !r.split)  // (a split one's parts go to their devices)
            return fail(adsmErrorInvalidValue,
                        "%p lives on device %zu, where its calls release it: prefetching it to device %d would not last "
                        "(adsmMigrate hands it to a context on that device)",
                        p, device_index(home), device);
        // The whole object goes: a release would send all of it.
        const uint64_t now = release_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
        r.last_release = now;
        if (Status s = make_resident(r, *owner.device, owner, now); s != adsmSuccess) return s;
        return protocol_.settle_on_device(r);
    });
}

Status Manager::fetch_to_host(const void *p, size_t n) {
    return with_idle(p, n, false, [&](Region &r, size_t off) { return protocol_.fetch_range(r, off, n); });
}

Status Manager::advise(const void *p, size_t n, Advice advice) {
    Region *r;
    if (Status s = owned_range(p, n ? n : 1, false, &r); s != adsmSuccess) return s;
    // Under its owner's lock, which a release holds while it reads them; a
    // kernel running now keeps what its call gave it.
    OwnerLock lock(r, p, n ? n : 1);
    if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", p);
    switch (advice) {
    case Advice::read_mostly: r->read_mostly = true; break;
    case Advice::not_read_mostly: r->read_mostly = false; break;
    case Advice::prefer_host: r->prefers_host = true; break;
    case Advice::no_preference: r->prefers_host = false; break;
    }
    return adsmSuccess;
}

// ---------------------------------------------------------------- device memory

Status Manager::copy_to_device(void *dev_dst, const void *src, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    if (!dev_dst || !src) return fail(adsmErrorInvalidValue, "NULL %s", dev_dst ? "source" : "destination");
    Region *rd;
    if (Status s = owned_range(dev_dst, n, true, &rd); s != adsmSuccess) return s;
    if (Status s = wait_for_own_kernels(); s != adsmSuccess) return s;
    const uintptr_t dev = reinterpret_cast<uintptr_t>(dev_dst);
    Device &device = *rd->device;
    if (!space_.contains(reinterpret_cast<uintptr_t>(src))) return device.copy_to_device(dev, src, n);
    return with_idle(src, n, false, [&](Region &rs, size_t soff) {
        return chunked_copy(
            n, false, [&](size_t at, uint8_t *buf, size_t len) { return protocol_.read_out(rs, soff + at, buf, len); },
            [&](size_t at, uint8_t *buf, size_t len) { return device.copy_to_device(dev + at, buf, len); });
    });
}

Status Manager::copy_to_host(void *dst, const void *dev_src, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    if (!dst || !dev_src) return fail(adsmErrorInvalidValue, "NULL %s", dst ? "source" : "destination");
    Region *rs;
    if (Status s = owned_range(dev_src, n, true, &rs); s != adsmSuccess) return s;
    if (Status s = wait_for_own_kernels(); s != adsmSuccess) return s;
    const uintptr_t dev = reinterpret_cast<uintptr_t>(dev_src);
    Device &device = *rs->device;
    if (!space_.contains(reinterpret_cast<uintptr_t>(dst))) return device.copy_to_host(dst, dev, n);
    return with_idle(dst, n, false, [&](Region &rd, size_t doff) {
        return chunked_copy(
            n, false, [&](size_t at, uint8_t *buf, size_t len) { return device.copy_to_host(buf, dev + at, len); },
            [&](size_t at, uint8_t *buf, size_t len) { return write_in(rd, doff + at, buf, len); });
    });
}

Status Manager::device_memset(void *dev, int value, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    Region *r;
    if (Status s = owned_range(dev, n, true, &r); s != adsmSuccess) return s;
    if (Status s = wait_for_own_kernels(); s != adsmSuccess) return s;
    return r->device->fill(reinterpret_cast<uintptr_t>(dev), value, n);
}

}  // namespace adsm
