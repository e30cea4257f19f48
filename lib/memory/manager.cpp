#include "memory/manager.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "backend/split_device.h"
#include "memory/owner_lock.h"
#include "os/clock.h"
#include "os/invariant.h"
#include "os/proc_text.h"
#include "os/vm.h"
#include "os/write_hold.h"
#include "protocols/protection.h"
#include "support/profile.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {
namespace {

// A chaos cycle under a protocol that takes no faults waits this long at
// most for changes under way to end (a store's I/O, another thread's hold),
// else it is skipped: it stands for a kernel call that may come at any
// moment, not one the program must wait for.
constexpr uint64_t kChaosHoldPatienceNs = 10'000'000ull;

// Counts the time a call spends in the runtime, draws it on the trace and
// makes the program's calling code the cause of its work.
class Timed {
public:
    Timed(Counter counter, trace::Kind kind, const char *name = nullptr)
        : counter_(counter), kind_(kind), name_(name), start_(os::now_ns()) {}
    // The cause is destroyed after the destructor's body: the time and the
    // work done in it are both charged while it is current.
    ~Timed() {
        uint64_t end = os::now_ns();
        stats().add(counter_, end - start_);
        if (trace::enabled()) trace::record(kind_, start_, end, a_, b_, name_);
    }
    Timed(const Timed &) = delete;
    Timed &operator=(const Timed &) = delete;
    void set(uint64_t a, uint64_t b) { a_ = a, b_ = b; }

private:
    profile::Cause cause_;
    Counter counter_;
    trace::Kind kind_;
    const char *name_;
    uint64_t start_, a_ = 0, b_ = 0;
};

}  // namespace

Manager::Manager(const Config &config, AddressSpace &space, RegionTable &table, std::vector<Device *> devices,
                 Protocol &protocol)
    : config_(config), space_(space), table_(table), devices_(std::move(devices)), protocol_(protocol),
      contexts_(*devices_.front(), protocol),
      spill_(config.spill == "evict"  ? Spill::evict
             : config.spill == "fail" ? Spill::fail
             : config.spill == "next" ? Spill::next
                                      : Spill::host),
      kept_(config.malloc_keep) {
    for (size_t i = 0; i < devices_.size(); ++i) victims_.push_back(std::make_unique<VictimList>());
    contexts_.set_orphan_handler(&Manager::orphaned, this);
    one_memory_ = all_integrated(devices_);
    for (Device *a : devices_)
        for (Device *b : devices_)
            if (a->shares_addresses_with(*b)) apart_ = std::max<uint64_t>(apart_, a->mapping_granularity());
}

// ---------------------------------------------------------------- regions

bool Manager::span_for(size_t size, size_t *span) const {
    if (!os::page_round(size, span)) return false;
    if (!apart_) return true;
    // Whole granules: no other device's object may share one.
    if (*span > UINT64_MAX - apart_) return false;
    *span = (*span + apart_ - 1) / apart_ * apart_;
    return true;
}

Status Manager::carve(size_t size, RegionKind kind, Device &on, Region **out, size_t align, Placement place) {
    if (size == 0) return fail(adsmErrorInvalidValue, "size is zero");
    size_t span;
    if (!span_for(size, &span)) return fail(adsmErrorSizeOverflow, "size %zu overflows when rounded up", size);
    if (apart_) align = std::max<size_t>(align, apart_);
    if (span > space_.size())
        return fail(adsmErrorMemoryAllocation, "size %zu is larger than the shared window (%llu bytes, ADSM_VA_SIZE)", size,
                    static_cast<unsigned long long>(space_.size()));
    bool separate_dev = kind == RegionKind::safe && !on.integrated();
    if (kind != RegionKind::shared) {
        place.home = Home::device;
        place.preferred = nullptr;
    }
    if (place.home != Home::device) place.preferred = nullptr;

    uintptr_t host = 0, dev = 0;
    if (Status s = space_.allocate(span, &dev, align); s != adsmSuccess) return s;
    if (separate_dev) {
        if (Status s = space_.allocate(span, &host); s != adsmSuccess) {
            space_.release(dev, span);
            return s;
        }
    } else if (kind != RegionKind::device) {
        host = dev;
    }
    auto undo = [&] {
        if (separate_dev) space_.release(host, span);
        space_.release(dev, span);
    };
    bool resident = true;
    SplitDevice *split = nullptr;
    if (Status s = commit_placed(on, dev, span, kind, &place, &resident, &split); s != adsmSuccess) {
        undo();
        return s;
    }
    Region *r = table_.create();
    if (!r) {
        if (split) release_split(split, resident);
        else uncommit_placed(on, dev, span, place.home, place.preferred != nullptr, resident);
        undo();
        return fail(adsmErrorMemoryAllocation, "the region table is full");
    }
    r->host = host;
    r->dev = dev;
    r->size = size;
    r->span = span;
    r->alias = host ? space_.alias(host) : nullptr;
    r->device = split ? static_cast<Device *>(split) : &on;
    r->split = split;
    if (split)
        for (const SplitDevice::Part &p : split->parts())
            if (p.device) r->split_on |= 1u << device_index(*p.device);
    r->home = place.home;
    r->pinned = place.home == Home::device && (place.preferred || split);
    r->resident = resident;
    r->priority = place.priority;
    // An allocation counts as a use: eviction takes older objects first.
    r->last_release = release_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
    r->kind = kind;
    *out = r;
    return adsmSuccess;
}

Status Manager::commit_placed(Device &on, uintptr_t dev, uint64_t span, RegionKind kind, Placement *place,
                              bool *resident, SplitDevice **split) {
    *resident = true;
    *split = nullptr;
    // One memory serves the host and integrated devices: every kind is
    // the same memory (a replicated object is still every context's), and
    // there is no other memory to wait in when it is full.  In a list
    // mixing kinds, the discrete devices map the host's pages for an object
    // placed elsewhere or kept on an integrated device (below).
    if (one_memory_ || (on.integrated() && place->home == Home::device && !place->preferred))
        return on.commit(dev, span);
    const int below = kind == RegionKind::device ? INT32_MAX : place->priority;
    if (place->home == Home::every_device && apart_)
        return fail(adsmErrorNotSupported,
                    "a replica on every device needs devices with memories of their own at one address; the %s "
                    "devices share one address space (an object on a preferred device is reached by the others over "
                    "their peer links)",
                    on.name());
    if (place->home == Home::every_device) {
        // A replica on each device, idle objects making room for it: it has
        // no other place that every device's kernels could read.
        size_t done = 0;
        Status s = adsmSuccess;
        for (; done < devices_.size() && s == adsmSuccess; ++done)
            s = commit_evicting(*devices_[done], dev, span, nullptr, kNothingNeeded, below);
        if (s == adsmSuccess) return adsmSuccess;
        for (size_t i = 0; i + 1 < done; ++i) devices_[i]->decommit(dev, span);
        if (s != adsmErrorMemoryAllocation || place->spill != Spill::next) return s;
        place->home = Home::host;  // the next kind: every device reads the host's copy
    }
    if (place->home == Home::host) {
        *resident = false;
        return map_everywhere(nullptr, dev, span);
    }
    // A full device leaves an object with a host copy on the host alone,
    // evicting nothing: a call that needs it makes room then (an eviction
    // now could move data back for an object no kernel may ever use).
    // Device memory has no other place: idle objects make room for it.
    // (ADSM_SPILL and adsmAllocEx choose otherwise.)
    Status committed = kind == RegionKind::device || place->spill == Spill::evict || place->spill == Spill::fail
                           ? commit_evicting(on, dev, span, nullptr, kNothingNeeded, below)
                           : on.commit(dev, span);
    if (committed != adsmSuccess) {
        if (committed != adsmErrorMemoryAllocation || kind == RegionKind::device || place->spill == Spill::fail)
            return committed;
        *resident = false;
        // The next kind of memory, where the devices can reach the host's;
        // else the host alone, as `host`.
        if (place->spill == Spill::next && kind == RegionKind::shared && map_everywhere(nullptr, dev, span) == adsmSuccess) {
            place->home = Home::host;
            return adsmSuccess;
        }
        // In equal parts over this device and the next kinds; else, again,
        // the host alone.
        if (place->spill == Spill::split && kind == RegionKind::shared && !place->preferred &&
            split_object(on, dev, span, split) == adsmSuccess) {
            *resident = true;
            return adsmSuccess;
        }
    }
    if (!place->preferred) return adsmSuccess;
    // Kept on its preferred device: kernels on the others reach it there.
    Status s = map_everywhere(&on, dev, span);
    if (s != adsmSuccess && *resident) on.decommit(dev, span);
    return s;
}

Status Manager::map_everywhere(Device *holder, uintptr_t dev, uint64_t span) {
    size_t done = 0;
    Status s = adsmSuccess;
    for (; done < devices_.size() && s == adsmSuccess; ++done) {
        Device &d = *devices_[done];
        if (&d != holder) s = holder ? d.map_peer_memory(*holder, dev, span) : d.map_host_memory(dev, span);
    }
    if (s == adsmSuccess) {
        if (!holder) stats().add(Counter::host_resident_allocs);
        return adsmSuccess;
    }
    for (size_t i = 0; i + 1 < done; ++i)
        if (devices_[i] != holder) devices_[i]->unmap_memory(dev, span);
    return s;
}

Status Manager::split_object(Device &first, uintptr_t dev, uint64_t span, SplitDevice **out) {
    // The kinds in order: this device, the others, host memory (always
    // room there); those without room for a part are passed over.
    std::vector<Device *> kinds = {&first};
    for (Device *d : devices_)
        if (d != &first) kinds.push_back(d);
    kinds.push_back(nullptr);
    const uint64_t unit = apart_ ? apart_ : os::kPageSize;  // (granules, where devices share addresses)
    const uint64_t pages = span / unit;
    for (size_t k = 2; k <= kinds.size() && k <= pages; ++k) {
        // As few parts as hold it, each a whole number of pages.
        const uint64_t part = (pages + k - 1) / k * unit;
        std::vector<SplitDevice::Part> parts;
        for (size_t i = 0; i < kinds.size() && parts.size() < k; ++i) {
            uintptr_t b = dev + parts.size() * part, e = std::min<uintptr_t>(b + part, dev + span);
            if (b >= e) break;
            if (kinds[i] && kinds[i]->commit(b, e - b) != adsmSuccess) continue;
            parts.push_back({b, e, kinds[i]});
        }
        if (parts.empty() || parts.back().end != dev + span) {
            for (const SplitDevice::Part &p : parts)
                if (p.device) p.device->decommit(p.begin, p.end - p.begin);
            continue;
        }
        auto *s = new (std::nothrow) SplitDevice(parts, space_.base(), space_.alias(space_.base()));
        if (!s) {
            for (const SplitDevice::Part &p : parts)
                if (p.device) p.device->decommit(p.begin, p.end - p.begin);
            return fail(adsmErrorMemoryAllocation, "no memory to split an object");
        }
        // Every device reaches the parts it does not hold.
        Status mapped = adsmSuccess;
        for (Device *d : devices_)
            for (const SplitDevice::Part &p : parts) {
                if (p.device == d || mapped != adsmSuccess) continue;
                mapped = p.device ? d->map_peer_memory(*p.device, p.begin, p.end - p.begin)
                                  : d->map_host_memory(p.begin, p.end - p.begin);
            }
        if (mapped != adsmSuccess) {
            release_split(s, true);
            return mapped;
        }
        stats().add(Counter::split_allocs);
        *out = s;
        return adsmSuccess;
    }
    return fail(adsmErrorMemoryAllocation, "the object does not fit in equal parts over the devices and host memory");
}

void Manager::release_split(SplitDevice *s, bool resident) {
    for (Device *d : devices_)
        for (const SplitDevice::Part &p : s->parts())
            if (p.device != d) d->unmap_memory(p.begin, p.end - p.begin);
    // (An evicted object's parts were given back at its eviction.)
    const auto &parts = s->parts();
    if (resident) s->decommit(parts.front().begin, parts.back().end - parts.front().begin);
    delete s;
}

void Manager::uncommit_placed(Device &on, uintptr_t dev, uint64_t span, Home home, bool pinned, bool resident) {
    if (one_memory_) return on.decommit(dev, span);
    switch (home) {
    case Home::device:
        if (resident) on.decommit(dev, span);
        if (pinned)
            for (Device *d : devices_)
                if (d != &on) d->unmap_memory(dev, span);
        break;
    case Home::host:
        for (Device *d : devices_) d->unmap_memory(dev, span);
        break;
    case Home::every_device:
        for (Device *d : devices_) d->decommit(dev, span);
        break;
    }
}

Manager::MirrorRange Manager::ready_mirror(Region &r, uintptr_t a, bool first) {
    // An object waiting on the host has no device memory to pin against.
    if (!r.resident.load(std::memory_order_acquire) || r.own_coherence() || r.split || !r.contains_host(a)) return {};
    size_t off = a - r.host, lo = 0, hi = r.span;
    if (uint64_t bs = r.block_size; bs && bs < r.span) {
        lo = off / bs * bs;
        hi = std::min<size_t>(lo + bs, r.span);
    }
    uintptr_t start = r.dev + lo;
    uint64_t len = hi - lo;
    // Once per piece of the mirror, and once per object (another object may
    // have used a piece they share first).
    Device::MirrorUse use = r.device->pin_for_cpu(r.dev, r.dev + r.span, &start, &len);
    if (use != Device::MirrorUse::first && !(use == Device::MirrorUse::again && first)) return {};
    MirrorRange m{r.host + (start - r.dev), len, r.host + lo, hi - lo};
    // (Within the widened range: another thread may have pinned the rest.)
    if (m.block < m.start || m.block + m.block_len > m.start + m.len) m.block_len = 0;
    return m;
}

void Manager::enter_mirror(const MirrorRange &m) {
    if (!m.len) return;
    if (!m.block_len) {
        space_.prefault(m.start, m.len);
        return;
    }
    space_.prefault(m.block, m.block_len);
    if (m.block > m.start) space_.prefault(m.start, m.block - m.start);
    if (uintptr_t end = m.start + m.len, block_end = m.block + m.block_len; end > block_end)
        space_.prefault(block_end, end - block_end);
}

// The protocol's state for a new region.  One left on the host alone (the
// device was full) is current there, all of it, from the start.
Status Manager::start_coherence(Region &r, bool zeroed) {
    if (Status s = protocol_.on_alloc(r, zeroed && r.resident); s != adsmSuccess) return s;
    if (r.resident || r.own_coherence()) return adsmSuccess;
    stats().add(Counter::host_only_allocs);
    Status s = protocol_.evict(r);
    if (s != adsmSuccess) protocol_.on_free(r);
    return s;
}

// A region made for c joins it and becomes the program's: found at its
// addresses (a safe region's device ones too) from now on.
void Manager::publish(Region &r, Context &c) {
    {
        ContextGuard lock(c);
        r.group = &c;
        r.birth_call = c.calls.load();
        c.link(&r);
        c.refs.fetch_add(1);
    }
    r.live.store(true, std::memory_order_release);
    table_.map(r, r.host, r.span);
    if (r.dev != r.host) table_.map(r, r.dev, r.span);
    stats().add(Counter::allocs);
    stats().add(Counter::bytes_allocated, r.size);
}

// Gives a region's memory back once nothing can reach it any more.
void Manager::retire(Region *r) {
    stats().remember_freed(r->summary<RegionSummary>(true));
    table_.unmap_freed(r->dev, r->span);
    if (r->host && r->host != r->dev) table_.unmap_freed(r->host, r->span);
    if (r->split) release_split(r->split, r->resident);
    else uncommit_placed(*r->device, r->dev, r->span, r->home, r->pinned, r->resident);
    for (Device *d : devices_) {
        d->forget_host_copy(r->dev, r->span);
        if (r->host && r->host != r->dev) d->forget_host_copy(r->host, r->span);
    }
    space_.release(r->dev, r->span);
    if (r->host && r->host != r->dev) space_.release(r->host, r->span);
    table_.destroy(r);
}

Status Manager::alloc(size_t size, bool zero, void **out, Context *in, RegionOrigin origin, size_t align,
                      const Placement *place) {
    *out = nullptr;
    os::write_hold::Change change;  // (a fork child must not find an object half made)
    Timed timed(Counter::memory_ns, trace::Kind::alloc);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    Placement chosen;
    chosen.spill = spill_;
    if (place) chosen = *place;
    if (origin == RegionOrigin::collector) {
        // The collector reads its chunks' block states: they stay device
        // memory, on the host alone while the device is full.
        chosen.home = Home::device;
        chosen.preferred = nullptr;
        if (chosen.spill == Spill::next || chosen.spill == Spill::split) chosen.spill = Spill::host;
    }
    // (A kept block's bytes are what they were: not for calloc.)
    if (origin == RegionOrigin::malloc && !zero && !align && !place)
        if (void *p = reuse_kept(size, *c)) {
            *out = p;
            timed.set(size, reinterpret_cast<uintptr_t>(p));
            return adsmSuccess;
        }
    Device &on = chosen.preferred ? *chosen.preferred : *c->device;
    if (Status s = carve(size, RegionKind::shared, on, &r, align, chosen); s != adsmSuccess) return s;
    r->origin = origin;
    if (zero) space_.zero(r->host, r->span);
    if (Status s = start_coherence(*r, zero); s != adsmSuccess) {
        retire(r);
        return s;
    }
    // Pinning at commit allocated the mirror's pages: mapping them into the
    // view in one call costs an eighth of what faulting each page in does
    // (measured on an H100 host: 11 against 83 ms for 256 MiB).  An object
    // waiting on the host has nothing pinned: entering its pages would
    // allocate all of them (seconds for an object larger than the GPU).
    if (r->resident && r->device->pins_at_commit()) space_.prefault(r->host, r->span);
    publish(*r, *c);
    *out = ptr(r->host);
    timed.set(size, r->host);
    return adsmSuccess;
}

Status Manager::safe_alloc(size_t size, void **out) {
    *out = nullptr;
    os::write_hold::Change change;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    Placement chosen;
    chosen.spill = spill_;
    if (Status s = carve(size, RegionKind::safe, *c->device, &r, 0, chosen); s != adsmSuccess) return s;
    if (Status s = start_coherence(*r, false); s != adsmSuccess) {
        retire(r);
        return s;
    }
    publish(*r, *c);
    *out = ptr(r->host);
    return adsmSuccess;
}

Status Manager::free(void *p, bool wait, bool collector) {
    if (!p) return adsmSuccess;
    Timed timed(Counter::memory_ns, trace::Kind::free);
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    timed.set(0, a);
    Region *r = nullptr;
    switch (table_.lookup(a, &r)) {
    case RegionTable::Lookup::outside:
        return fail(adsmErrorInvalidPointer, "%p is not shared memory (it did not come from adsmAlloc)", p);
    case RegionTable::Lookup::none:
        return fail(adsmErrorInvalidPointer, "%p is not an allocated shared address", p);
    case RegionTable::Lookup::freed:
        return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
    case RegionTable::Lookup::live: break;
    }
    if (r->kind == RegionKind::device)
        return fail(adsmErrorInvalidPointer, "%p is device memory; free it with adsmDeviceFree", p);
    if (!r->contains_host(a))
        return fail(adsmErrorInvalidPointer, "%p is the device address of a safe allocation; free its CPU address %p", p,
                    ptr(r->host));
    if ((r->origin == RegionOrigin::collector) != collector)
        return fail(adsmErrorInvalidPointer, "%p is in the collector's heap; collected objects are freed by the collector",
                    p);
    if (a != r->host)
        return fail(adsmErrorInvalidPointer, "%p points %zu bytes into the allocation at %p; adsmFree takes the start", p,
                    static_cast<size_t>(a - r->host), ptr(r->host));
    Context *owner = nullptr;
    KeptBlocks::Entry kept;
    // What a free gives back a fork child may be copying: the hold waits
    // for it (not across the wait for a kernel, which could be long).
    std::optional<os::write_hold::Change> change;
    for (;;) {
        Context *busy = nullptr;
        change.emplace();
        {
            OwnerLock lock(r, p);
            if (!lock.valid() || r->host != a)
                return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
            owner = lock.owner();
            if (owner->holds(*r)) {
                if (!wait)
                    return fail(adsmErrorBusy,
                                "%p is in use by a kernel its context launched; call adsmSync before adsmFree", p);
                busy = owner;
            } else if (keeps(*r)) {
                kept = keep_locked(*r, *owner);
            } else {
                end_locked(*r, *owner);
            }
        }
        if (!busy) break;
        change.reset();
        settle(busy);  // then look again: another call may have come meanwhile
    }
    stats().add(Counter::frees);
    if (kept.r) {
        keep(kept);
        return adsmSuccess;
    }
    retire(r);
    contexts_.unref(owner);
    return adsmSuccess;
}

void Manager::end_locked(Region &r, Context &owner) {
    owner.unlink(&r);
    r.live.store(false, std::memory_order_release);
    protocol_.on_free(r);
}

bool Manager::resize(void *p, size_t n) {
    os::write_hold::Change change;  // (what it gives back a fork child may be copying)
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    size_t fresh;
    Region *r = table_.find(a);
    if (n == 0 || !span_for(n, &fresh) || !r || r->kind != RegionKind::shared || r->host != a) return false;
    OwnerLock lock(r, p);
    // Only an object that is the malloc family's, whose size nothing but
    // its owner's calls reads meanwhile: not one a kernel may be using
    // (moving it waits for the kernel), nor one in parts or placed outside
    // device memory, whose device copies know their extent.  (In an
    // integrated device's memory it has one copy, the host's: on the cpu
    // device a buffer grown by realloc moved at every step.)
    if (!lock.valid() || r->host != a || r->origin != RegionOrigin::malloc || lock.owner()->holds(*r) ||
        r->home != Home::device || r->split)
        return false;
    // Within its pages, and not so far below them that a new object would
    // give most of them back.
    if (n > r->span || fresh <= r->span / 2) return false;
    // The blocks and their states cover the whole span, and every copy
    // stops at `size`: only the bytes between the two sizes change hands.
    // Those a larger size takes in hold whatever either copy held (realloc
    // promises nothing for them), and the first write to them opens their
    // block as any write does.
    os::FutexGuard g(r->lock);
    r->size = n;
    stats().add(Counter::resizes);
    return true;
}

// ---------------------------------------------------------------- lookups

Status Manager::safe(const void *cpu_addr, void **dev_addr) {
    uintptr_t a = reinterpret_cast<uintptr_t>(cpu_addr);
    Region *r = nullptr;
    auto k = table_.lookup(a, &r);
    if (k != RegionTable::Lookup::live || r->kind == RegionKind::device || !r->contains_host(a) || a - r->host >= r->size)
        return fail(adsmErrorInvalidPointer, "%p is not inside a live shared allocation", cpu_addr);
    *dev_addr = ptr(r->dev + (a - r->host));
    return adsmSuccess;
}

bool Manager::allocated_for(const void *p, RegionOrigin origin) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = table_.find(a);
    return r && r->kind == RegionKind::shared && r->host == a && r->origin == origin;
}

Status Manager::range_of(const void *p, void **base, size_t *size, uint64_t *identity) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = host_object_at(a);
    if (!r) return fail(adsmErrorInvalidPointer, "%p is not inside a live shared allocation", p);
    *base = ptr(r->host);
    *size = r->size;
    if (identity) *identity = uint64_t{r->id} << 32 | r->generation;
    return adsmSuccess;
}

size_t Manager::size_of(const void *p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = table_.find(a);
    if (!r || r->kind == RegionKind::device || r->host != a) return 0;
    return r->size;
}

// ---------------------------------------------------------------- device memory

Status Manager::device_alloc(size_t size, void **out) {
    *out = nullptr;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    if (Status s = carve(size, RegionKind::device, *c->device, &r); s != adsmSuccess) return s;
    if (r->device->integrated()) {
        // On an integrated device the CPU may touch device memory too.
        if (Status s = protect_range(r->dev, r->span, PROT_READ | PROT_WRITE); s != adsmSuccess) {
            retire(r);
            return s;
        }
    }
    r->group = c;
    c->refs.fetch_add(1);
    r->live.store(true, std::memory_order_release);
    table_.map(*r, r->dev, r->span);
    stats().add(Counter::allocs);
    stats().add(Counter::bytes_allocated, size);
    *out = ptr(r->dev);
    return adsmSuccess;
}

Status Manager::wait_for_kernels(Context *c) {
    if (!c->has_stream || c->unsynced_calls == 0) return adsmSuccess;
    return c->device->synchronize(c->stream);
}

Status Manager::device_free(void *p) {
    if (!p) return adsmSuccess;
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = nullptr;
    auto k = table_.lookup(a, &r);
    if (k == RegionTable::Lookup::freed) return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
    if (k != RegionTable::Lookup::live) return fail(adsmErrorInvalidPointer, "%p is not device memory from adsmDeviceAlloc", p);
    if (r->kind != RegionKind::device)
        return fail(adsmErrorInvalidPointer, "%p is shared memory; free it with adsmFree", p);
    if (a != r->dev)
        return fail(adsmErrorInvalidPointer, "%p points %zu bytes into the device allocation at %p; pass the start", p,
                    static_cast<size_t>(a - r->dev), ptr(r->dev));
    Context *owner;
    {
        OwnerLock lock(r, p);
        if (!lock.valid() || r->dev != a) return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
        owner = lock.owner();
        // As cudaFree: kernels of the owner may still use it, so wait for them.
        defer_error(*owner, wait_for_kernels(owner));
        r->live.store(false, std::memory_order_release);
    }
    retire(r);
    contexts_.unref(owner);
    stats().add(Counter::frees);
    return adsmSuccess;
}

// ---------------------------------------------------------------- kernels

Status Manager::call(const LaunchDesc &launch, Context *in, uint64_t synced_limit, const ObjectUse *uses, size_t n) {
    // (A kernel launched while a fork child copies the objects could change
    // the device copies it takes.)
    os::write_hold::Change change;
    Timed timed(Counter::call_ns, trace::Kind::call, launch.kernel ? launch.kernel->name.c_str() : nullptr);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    if (!uses) {  // (a call that names its objects names only its own)
        gather_companion(*c);
        adopt_argument_mallocs(*c, launch);
    }
    ContextGuard lock(*c);
    // Syncs take this lock too: if none closed the launch's kernel heaps by
    // now, none can before this launch counts in `calls` (which keeps the
    // heaps open until the sync that follows it).
    if (c->synced_calls.load(std::memory_order_relaxed) > synced_limit)
        return fail(adsmErrorInvalidValue,
                    "a kernel heap this launch passes was closed by its context's sync in another thread, after it "
                    "was checked: a heap serves only the kernels launched before that sync; create another for this "
                    "launch");
    if (!uses)
        if (Status s = check_arguments_owned(*c, launch); s != adsmSuccess) return s;
    if (!c->has_stream) {
        if (Status s = c->device->create_stream(&c->stream); s != adsmSuccess) return s;
        c->has_stream = true;
    }
    if (Status s = release_for_call(*c, uses, n); s != adsmSuccess) return s;
    stats().add(Counter::kernels);
    if (Status s = c->device->launch(c->stream, launch); s != adsmSuccess) return s;
    c->launched_call.store(c->calls.load(std::memory_order_relaxed), std::memory_order_release);
    return adsmSuccess;
}

Status Manager::release_for_call(Context &c, const ObjectUse *uses, size_t n) {
    c.call_made();  // (what stores learnt of the CPU: the protocol's)
    if (uses) {
        if (Status s = release_named(c, uses, n); s != adsmSuccess) return s;
    } else {
        if (Status s = gather_objects(c); s != adsmSuccess) return s;
        if (Status s = protocol_.release(c); s != adsmSuccess) return s;
        c.whole_call.store(c.calls.load() + 1, std::memory_order_release);
    }
    // Whatever the call names, objects on every device are readable there.
    if (Status s = protocol_.update_replicas(*c.device); s != adsmSuccess) return s;
    // From here on the objects belong to the device, launched or not, so
    // that the next adsmSync gives them back.
    c.calls++;
    c.unsynced_calls++;
    return adsmSuccess;
}

Status Manager::release_driver_work(Context &c) {
    if (Status s = release_for_call(c, nullptr, 0); s != adsmSuccess) return s;
    // (The program's own launch follows: whether it fails is the driver's to say.)
    c.launched_call.store(c.calls.load(std::memory_order_relaxed), std::memory_order_release);
    for (Device *d : devices_)
        if (Status s = d->wait_copies(Device::kAllCopies); s != adsmSuccess) return s;
    return adsmSuccess;
}

Status Manager::release_for_driver(Context *in) {
    Timed timed(Counter::call_ns, trace::Kind::call, "(the program's command list)");
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    gather_companion(*c);
    ContextGuard lock(*c);
    return release_driver_work(*c);
}

Status Manager::release_for_driver_launch(Context *in, void *program_stream, const std::function<Status()> &launch) {
    os::write_hold::Change change;  // (as in call)
    Timed timed(Counter::call_ns, trace::Kind::call, "(the program's graph)");
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    gather_companion(*c);
    ContextGuard lock(*c);
    if (!c->has_stream) {
        if (Status s = c->device->create_stream(&c->stream); s != adsmSuccess) return s;
        c->has_stream = true;
    }
    if (Status s = release_driver_work(*c); s != adsmSuccess) return s;
    if (Status s = launch(); s != adsmSuccess) return s;
    return c->device->follow(c->stream, program_stream);
}

Status Manager::sync(Context *in) {
    Timed timed(Counter::sync_ns, trace::Kind::sync);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    ContextGuard lock(*c);
    stats().add(Counter::syncs);
    Status result = adsmSuccess;
    std::string detail;
    if (c->unsynced_calls > 0) {
        if (c->has_stream) result = c->device->synchronize(c->stream);
        if (result != adsmSuccess) {
            detail = last_detail();
            stats().add(Counter::kernel_failures);
        }
        Status a = acquire_released(*c);
        // The objects come back only once the acquire succeeds: a failed
        // one leaves them with the device, and the program's next adsmSync
        // tries again.
        if (a != adsmSuccess) {
            if (result != adsmSuccess) defer_error(*c, result);  // the kernel's error comes with the retry
            return a;
        }
        c->unsynced_calls = 0;
        c->synced_calls.store(c->calls.load(), std::memory_order_release);
    }
    // Prefetches to the host land (their blocks open) before it returns.
    if (c->host_prefetches.exchange(false, std::memory_order_acq_rel))
        for (Device *d : devices_)
            if (Status s = d->wait_copies(Device::kAllCopies); s != adsmSuccess && result == adsmSuccess) {
                result = s;
                detail = last_detail();
            }
    if (c->deferred != adsmSuccess) {
        if (result == adsmSuccess) {
            result = c->deferred;
            detail = c->deferred_detail;
        }
        c->deferred = adsmSuccess;
    }
    if (result != adsmSuccess) fail(result, "%s", detail.c_str());
    return result;
}

void Manager::settle(Context *c) {
#if ADSM_CHECK_INVARIANTS
    ADSM_INVARIANT(!c->mu.held_by_me(), "a racing access waits for kernels while its thread holds the context's lock");
#endif
    ContextGuard lock(*c);
    if (c->unsynced_calls == 0) return;
    Status st = c->has_stream ? c->device->synchronize(c->stream) : adsmSuccess;
    defer_error(*c, st);
    if (acquire_released(*c) == adsmSuccess) {  // else the next sync tries again
        c->unsynced_calls = 0;
        c->synced_calls.store(c->calls.load(), std::memory_order_release);
    }
}

void Manager::orphaned(Context &c, void *manager) {
    // What its calls released stays the device's until a sync, and none
    // will come: every later CPU access would be a race, and the
    // collector's heaps there (a kernel heap above all) would stay open for
    // good.  The thread's end waits for its kernels instead.
    if (c.unsynced_calls.load(std::memory_order_acquire) == 0) return;
    static_cast<Manager *>(manager)->settle(&c);
    ContextGuard lock(c);
    if (c.deferred != adsmSuccess)
        ADSM_LOG(error,
                 "kernels of a thread that ended without adsmSync failed: %s (kept for the next adsmSync in its "
                 "context, if a thread binds to it)",
                 c.deferred_detail);
}

Region *Manager::host_object_at(uintptr_t a) const {
    Region *r = nullptr;
    if (table_.lookup(a, &r) != RegionTable::Lookup::live || r->kind == RegionKind::device || !r->contains_host(a) ||
        a - r->host >= r->size)
        return nullptr;
    return r;
}

Status Manager::check_arguments_owned(Context &c, const LaunchDesc &launch) {
    // (One copy on an integrated device: nothing to move.  Pointers inside
    // objects cannot be told from data: only the arguments are looked at.)
    if (c.device->integrated() || !launch.args) return adsmSuccess;
    const auto *b = static_cast<const uint8_t *>(launch.args);
    for (size_t off = 0; off + sizeof(uintptr_t) <= launch.args_size; off += sizeof(uintptr_t)) {
        uintptr_t a;
        std::memcpy(&a, b + off, sizeof a);  // (Manager::memcpy is the program's)
        Region *r = host_object_at(a);
        if (!r) continue;
        // (Ownership moves only under both contexts' locks: one not c's
        // now cannot become c's meanwhile.  The collector says its own.)
        if (r->owner() == &c || r->home != Home::device || r->origin == RegionOrigin::collector) continue;
        return fail(adsmErrorInvalidPointer,
                    "kernel '%s': the argument at byte %zu, %p, is inside a shared allocation of another context: "
                    "only the calling context's objects are released by its calls, so the kernel would read the "
                    "device's old copy (adsmMigrate hands it over; threads that share objects share a context, "
                    "adsmSetContext)",
                    launch.kernel ? launch.kernel->name.c_str() : "?", off, reinterpret_cast<void *>(a));
    }
    return adsmSuccess;
}

Status Manager::release_named(Context &c, const ObjectUse *uses, size_t n) {
    // Every name is checked before anything moves.
    std::vector<Region *> regions(n);
    for (size_t i = 0; i < n; ++i) {
        uintptr_t a = reinterpret_cast<uintptr_t>(uses[i].ptr);
        Region *r = host_object_at(a);
        if (!r)
            return fail(adsmErrorInvalidPointer, "object %zu of the call, %p, is not inside a live shared allocation", i,
                        uses[i].ptr);
        // (Every context's kernels read a replicated object.)
        if (r->owner() != &c && r->home != Home::every_device)
            return fail(adsmErrorInvalidPointer,
                        "object %zu of the call, %p, belongs to another context: only the calling context's objects "
                        "are released by its calls (adsmMigrate hands it over)",
                        i, uses[i].ptr);
        regions[i] = r;
    }
    // Stamped together first, so that making one resident never evicts another.
    const uint64_t now = release_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
    for (Region *r : regions) r->last_release = now;
    for (Region *r : regions)
        if (Status s = make_resident(*r, *c.device, c, now); s != adsmSuccess) return s;
    const uint64_t call = c.calls.load() + 1;
    for (size_t i = 0; i < n; ++i) {
        Region *r = regions[i];
        if (r->home == Home::every_device) continue;  // update_replicas, after
        // Named twice, once for writing: it is written.
        bool read_only = uses[i].read_only;
        for (size_t j = 0; j < n && read_only; ++j)
            if (regions[j] == r && !uses[j].read_only) read_only = false;
        if (Status s = protocol_.release_object(*r, read_only); s != adsmSuccess) return s;
        r->named_call.store(call, std::memory_order_release);
        c.released.push_back({r, !read_only});
    }
    return adsmSuccess;
}

Status Manager::acquire_released(Context &c) {
    Status result = adsmSuccess;
    if (c.whole_call.load(std::memory_order_relaxed) > c.synced_calls.load(std::memory_order_relaxed)) {
        result = protocol_.acquire(c);
    } else {
        for (const Context::Released &e : c.released)
            if (Status s = protocol_.acquire_object(*e.region, e.written); s != adsmSuccess && result == adsmSuccess)
                result = s;
    }
    if (result == adsmSuccess) c.released.clear();
    return result;
}

void Manager::chaos_cycle() {
    // A forced cycle of a context that another thread may be writing is safe
    // only while that thread's writes wait.  Under a protocol that protects
    // what it releases, they fault and wait for the cycle.  Batch protects
    // nothing: its acquire would copy the device's older bytes over another
    // thread's fresh writes, to any object (one thread's malloc'd buffer is
    // often another's to fill).  There the cycle closes every object to
    // writes for its length (the hold a fork takes), or does not run.  A
    // protocol that moves nothing (integrated) needs no hold: one made every
    // other call stopped git's threads for 100 s of a 5 s gc.
    bool held = false;
    if (!protocol_.uses_faults() && protocol_.moves_data() && os::thread_count() != 1) {
        if (!os::write_hold::hold(kChaosHoldPatienceNs)) return;
        close_to_writes();
        held = true;
    }
    // Hold a reference to each live context, then cycle each under its own
    // lock (never under the table's, which frees take after a context's).
    for (Context *c : contexts_.hold_live()) {
        {
            ContextGuard lock(*c);
            if (c->unsynced_calls == 0) {
                // A failed cycle loses nothing (what did not reach the device
                // stays current on the host); the context's next sync reports it.
                Status s = gather_objects(*c);
                if (s == adsmSuccess) s = protocol_.release(*c);
                if (s == adsmSuccess) s = protocol_.acquire(*c);
                defer_error(*c, s);
                stats().add(Counter::chaos_cycles);
            }
        }
        contexts_.unref(c);
    }
    if (held) resume_writes();
}

// Keeps the first error of an implicit wait for the next adsmSync, which
// reports it.  Async-signal-safe (settle runs in the fault handler).
void Manager::defer_error(Context &c, Status st) {
    if (st == adsmSuccess || c.deferred != adsmSuccess) return;
    c.deferred = st;
    const char *d = last_detail();
    size_t i = 0;
    for (; d[i] && i + 1 < sizeof c.deferred_detail; ++i) c.deferred_detail[i] = d[i];
    c.deferred_detail[i] = '\0';
}

}  // namespace adsm
