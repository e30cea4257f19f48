#include "memory/manager.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "os/clock.h"
#include "os/vm.h"
#include "os/invariant.h"
#include "support/log.h"
#include "support/profile.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm {
namespace {

// The context a thread works in, and the one it was given at first use (its
// own, kept until the thread ends so that binding elsewhere and back is safe).
__attribute__((tls_model("initial-exec"))) thread_local Context *tls_context = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local Context *tls_home = nullptr;
Manager *g_instance = nullptr;
constexpr size_t kBounce = 1 << 20;

void *ptr(uintptr_t a) { return reinterpret_cast<void *>(a); }

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

// Locks the owner of a region found by a lock-free lookup and checks that the
// region is still the one that was found.
class OwnerLock {
public:
    OwnerLock(Region *r) : r_(r), gen_(r->generation), owner_(r->owner()) {
        if (owner_) lock_.lock(*owner_);
    }
    bool valid() const { return owner_ && r_->live.load() && r_->generation == gen_ && r_->owner() == owner_; }
    Context *owner() const { return owner_; }

private:
    Region *r_;
    uint32_t gen_;
    Context *owner_;
    ContextGuard lock_;
};

}  // namespace

Manager::Manager(const Config &config, AddressSpace &space, RegionTable &table, Device &device, Protocol &protocol)
    : config_(config), space_(space), table_(table), device_(device), protocol_(protocol) {
    g_instance = this;
    pthread_key_create(&current_key_, &Manager::thread_exit);
    pthread_key_create(&home_key_, &Manager::thread_exit);
}

// ---------------------------------------------------------------- contexts

Context *Manager::new_context() {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    Context *c;
    if (!free_slots_.empty()) {
        c = contexts_[free_slots_.back()];
        free_slots_.pop_back();
    } else {
        c = new (std::nothrow) Context;
        if (!c) return nullptr;
        c->slot = static_cast<uint32_t>(contexts_.size());
        contexts_.push_back(c);
    }
    c->objects = nullptr;
    c->nobjects = 0;
    c->calls.store(0);
    c->unsynced_calls.store(0);
    c->has_stream = false;
    c->deferred = adsmSuccess;
    c->generation++;
    c->refs.store(1);
    protocol_.context_created(*c);
    c->live.store(true);
    return c;
}

void Manager::unref(Context *c) {
    if (c->refs.fetch_sub(1) != 1) return;
    std::lock_guard<std::mutex> lock(contexts_mu_);
    if (c->refs.load() != 0 || !c->live.load()) return;
    c->live.store(false);
    if (c->has_stream) {
        // Nobody is left to sync: let the kernels finish, then drop the stream.
        device_.synchronize(c->stream);
        device_.destroy_stream(c->stream);
        c->has_stream = false;
    }
    protocol_.context_destroyed(*c);
    c->generation++;  // outstanding handles now fail cleanly
    free_slots_.push_back(c->slot);
}

void Manager::thread_exit(void *ctx) {
    if (g_instance && ctx) g_instance->unref(static_cast<Context *>(ctx));
}

Context *Manager::home() {
    if (Context *c = tls_home) return c;
    Context *c = new_context();  // its one reference is the thread's
    if (!c) return nullptr;
    tls_home = c;
    pthread_setspecific(home_key_, c);
    return c;
}

void Manager::switch_to(Context *c) {
    Context *old = tls_context;
    tls_context = c;
    pthread_setspecific(current_key_, c);
    if (old) unref(old);
}

Context *Manager::current() {
    if (Context *c = tls_context) return c;
    Context *c = home();
    if (!c) return nullptr;
    c->refs.fetch_add(1);
    switch_to(c);
    return c;
}

adsmContext_t Manager::handle(Context *c) const {
    uint64_t h = (static_cast<uint64_t>(c->generation) << 32) | (c->slot + 1);
    return reinterpret_cast<adsmContext_t>(h);
}

Status Manager::bind(adsmContext_t h) {
    Context *c = nullptr;
    if (!h) {
        c = home();
        if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
        c->refs.fetch_add(1);
    } else {
        uint64_t v = reinterpret_cast<uint64_t>(h);
        uint32_t slot = static_cast<uint32_t>(v & 0xffffffffu) - 1, gen = static_cast<uint32_t>(v >> 32);
        std::lock_guard<std::mutex> lock(contexts_mu_);
        if (slot >= contexts_.size() || !contexts_[slot]->live.load() || contexts_[slot]->generation != gen)
            return fail(adsmErrorInvalidContext,
                        "%p is not a live context (it ends when its last thread exits and it owns no memory)", h);
        c = contexts_[slot];
        c->refs.fetch_add(1);
    }
    switch_to(c);
    return adsmSuccess;
}

// ---------------------------------------------------------------- regions

Status Manager::carve(size_t size, RegionKind kind, Region **out) {
    if (size == 0) return fail(adsmErrorInvalidValue, "size is zero");
    size_t span;
    if (!os::page_round(size, &span)) return fail(adsmErrorSizeOverflow, "size %zu overflows when rounded up to pages", size);
    if (span > space_.size())
        return fail(adsmErrorMemoryAllocation, "size %zu is larger than the shared window (%llu bytes, ADSM_VA_SIZE)", size,
                    static_cast<unsigned long long>(space_.size()));
    bool separate_dev = kind == RegionKind::safe && !device_.integrated();

    uintptr_t host = 0, dev = 0;
    if (Status s = space_.allocate(span, &dev); s != adsmSuccess) return s;
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
    if (Status s = device_.commit(dev, span); s != adsmSuccess) {
        undo();
        return s;
    }
    Region *r = table_.create();
    if (!r) {
        device_.decommit(dev, span);
        undo();
        return fail(adsmErrorMemoryAllocation, "the region table is full");
    }
    r->host = host;
    r->dev = dev;
    r->size = size;
    r->span = span;
    r->alias = host ? space_.alias(host) : nullptr;
    r->kind = kind;
    *out = r;
    return adsmSuccess;
}

// Gives a region's memory back once nothing can reach it any more.
void Manager::retire(Region *r) {
    stats().remember_freed(r->summary<RegionSummary>(true));
    table_.unmap_freed(r->dev, r->span);
    if (r->host && r->host != r->dev) table_.unmap_freed(r->host, r->span);
    device_.decommit(r->dev, r->span);
    space_.release(r->dev, r->span);
    if (r->host && r->host != r->dev) space_.release(r->host, r->span);
    table_.destroy(r);
}

Context *Manager::program_context() {
    if (Context *c = program_.load(std::memory_order_acquire)) return c;
    std::lock_guard<std::mutex> lock(program_mu_);
    if (Context *c = program_.load(std::memory_order_relaxed)) return c;
    Context *c = new_context();  // its one reference is never dropped
    program_.store(c, std::memory_order_release);
    return c;
}

Status Manager::alloc(size_t size, bool zero, void **out, Context *in, RegionOrigin origin) {
    *out = nullptr;
    Timed timed(Counter::memory_ns, trace::Kind::alloc);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    if (Status s = carve(size, RegionKind::shared, &r); s != adsmSuccess) return s;
    r->origin = origin;
    if (zero) space_.zero(r->host, r->span);
    if (Status s = protocol_.on_alloc(*r, zero); s != adsmSuccess) {
        retire(r);
        return s;
    }
    // Pinning allocated the mirror's pages: mapping them into the view in one
    // call costs an eighth of what faulting each page in does (measured on
    // an H100 host: 11 against 83 ms for 256 MiB).
    if (device_.pins_host_memory()) space_.prefault(r->host, r->span);
    {
        ContextGuard lock(*c);
        r->group = c;
        r->birth_call = c->calls.load();
        c->link(r);
        c->refs.fetch_add(1);
    }
    r->live.store(true, std::memory_order_release);
    table_.map(*r, r->host, r->span);
    stats().add(Counter::allocs);
    stats().add(Counter::bytes_allocated, size);
    *out = ptr(r->host);
    timed.set(size, r->host);
    return adsmSuccess;
}

Status Manager::safe_alloc(size_t size, void **out) {
    *out = nullptr;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    if (Status s = carve(size, RegionKind::safe, &r); s != adsmSuccess) return s;
    if (Status s = protocol_.on_alloc(*r, false); s != adsmSuccess) {
        retire(r);
        return s;
    }
    {
        ContextGuard lock(*c);
        r->group = c;
        r->birth_call = c->calls.load();
        c->link(r);
        c->refs.fetch_add(1);
    }
    r->live.store(true, std::memory_order_release);
    table_.map(*r, r->host, r->span);
    if (r->dev != r->host) table_.map(*r, r->dev, r->span);
    stats().add(Counter::allocs);
    stats().add(Counter::bytes_allocated, size);
    *out = ptr(r->host);
    return adsmSuccess;
}

Status Manager::free(void *p, bool wait) {
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
    if (a != r->host)
        return fail(adsmErrorInvalidPointer, "%p points %zu bytes into the allocation at %p; adsmFree takes the start", p,
                    static_cast<size_t>(a - r->host), ptr(r->host));
    Context *owner = nullptr;
    for (;;) {
        Context *busy = nullptr;
        {
            OwnerLock lock(r);
            if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
            owner = lock.owner();
            if (owner->holds(*r)) {
                if (!wait)
                    return fail(adsmErrorBusy,
                                "%p is in use by a kernel its context launched; call adsmSync before adsmFree", p);
                busy = owner;
            } else {
                owner->unlink(r);
                r->live.store(false, std::memory_order_release);
                protocol_.on_free(*r);
            }
        }
        if (!busy) break;
        settle(busy);  // then look again: another call may have come meanwhile
    }
    retire(r);
    unref(owner);
    stats().add(Counter::frees);
    return adsmSuccess;
}

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

Status Manager::range_of(const void *p, void **base, size_t *size) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = nullptr;
    if (table_.lookup(a, &r) != RegionTable::Lookup::live || r->kind == RegionKind::device || !r->contains_host(a) ||
        a - r->host >= r->size)
        return fail(adsmErrorInvalidPointer, "%p is not inside a live shared allocation", p);
    *base = ptr(r->host);
    *size = r->size;
    return adsmSuccess;
}

size_t Manager::size_of(const void *p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    Region *r = table_.find(a);
    if (!r || r->kind == RegionKind::device || r->host != a) return 0;
    return r->size;
}

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

Status Manager::memset(void *p, int value, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    Region *r;
    if (Status s = owned_range(p, n, false, &r); s != adsmSuccess) return s;
    OwnerLock lock(r);
    if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", p);
    if (lock.owner()->holds(*r)) return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", p);
    return protocol_.fill(*r, reinterpret_cast<uintptr_t>(p) - r->host, value, n);
}

Status Manager::memcpy(void *dst, const void *src, size_t n) {
    profile::Cause cause;
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
    // Lock both owners in a fixed order; the same context is locked once.
    Context *a = rd ? rd->owner() : nullptr, *b = rs ? rs->owner() : nullptr;
    if (a == b) b = nullptr;
    if (a && b && a > b) std::swap(a, b);
    ContextGuard la, lb;
    if (a) la.lock(*a);
    if (b) lb.lock(*b);
    for (Region *r : {rd, rs}) {
        if (!r) continue;
        if (!r->live.load()) return fail(adsmErrorInvalidPointer, "an operand was freed meanwhile");
        if (r->owner()->holds(*r)) return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", ptr(r->host));
    }
    if (rs && rd) return copy_shared(*rd, d - rd->host, *rs, s - rs->host, n);
    if (rs) return protocol_.read_out(*rs, s - rs->host, dst, n);
    return protocol_.write_in(*rd, d - rd->host, src, n);
}

// Shared to shared, through a bounce buffer, in the direction that keeps an
// overlapping move correct.
Status Manager::copy_shared(Region &rd, size_t doff, Region &rs, size_t soff, size_t n) {
    const size_t chunk = n < kBounce ? n : kBounce;
    std::unique_ptr<uint8_t[]> bounce(new (std::nothrow) uint8_t[chunk]);
    if (!bounce) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte bounce buffer", chunk);
    bool backward = &rd == &rs && doff > soff && doff < soff + n;
    for (size_t done = 0; done < n;) {
        size_t len = n - done < chunk ? n - done : chunk;
        size_t at = backward ? n - done - len : done;
        if (Status st = protocol_.read_out(rs, soff + at, bounce.get(), len); st != adsmSuccess) return st;
        if (Status st = protocol_.write_in(rd, doff + at, bounce.get(), len); st != adsmSuccess) return st;
        done += len;
    }
    return adsmSuccess;
}

template <class F>
Status Manager::for_program(const void *p, size_t n, F &&f) {
    if (n == 0) return adsmSuccess;
    Region *r;
    if (Status s = owned_range(p, n, false, &r); s != adsmSuccess) return s;
    for (;;) {
        Context *busy = nullptr;
        {
            OwnerLock lock(r);
            if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", p);
            if (!lock.owner()->holds(*r)) return f(*r, reinterpret_cast<uintptr_t>(p) - r->host);
            busy = lock.owner();
        }
        settle(busy);
    }
}

Status Manager::program_read(const void *src, void *dst, size_t n, uint64_t *ticket) {
    profile::Cause cause;
    return for_program(src, n, [&](Region &r, size_t off) { return protocol_.read_out(r, off, dst, n, ticket); });
}

Status Manager::program_write(void *dst, const void *src, size_t n, uint64_t *ticket) {
    profile::Cause cause;
    return for_program(dst, n, [&](Region &r, size_t off) { return protocol_.write_in(r, off, src, n, ticket); });
}

Status Manager::program_fill(void *dst, int value, size_t n) {
    profile::Cause cause;
    return for_program(dst, n, [&](Region &r, size_t off) { return protocol_.fill(r, off, value, n); });
}

void Manager::chaos_cycle() {
    // A forced cycle of a context that another thread may be writing is safe
    // only where the protocol protects what it releases (the write faults
    // and waits).  Batch protects nothing: its acquire would copy the device's
    // older bytes over the other thread's fresh writes.  There only the
    // caller's own context cycles, its thread being here and not writing.
    const bool others_too = protocol_.uses_faults();
    // Hold a reference to each live context, then cycle each under its own
    // lock (never under contexts_mu_, which frees take after a context's).
    std::vector<Context *> live;
    {
        std::lock_guard<std::mutex> lock(contexts_mu_);
        for (Context *c : contexts_)
            if (c->live.load() && (others_too || c == tls_context)) {
                c->refs.fetch_add(1);
                live.push_back(c);
            }
    }
    for (Context *c : live) {
        {
            ContextGuard lock(*c);
            if (c->unsynced_calls == 0) {
                // A failed cycle loses nothing (what did not reach the device
                // stays current on the host); the context's next sync reports it.
                Status s = protocol_.release(*c);
                if (s == adsmSuccess) s = protocol_.acquire(*c);
                defer_error(*c, s);
                stats().add(Counter::chaos_cycles);
            }
        }
        unref(c);
    }
}

// ---------------------------------------------------------------- device memory

Status Manager::device_alloc(size_t size, void **out) {
    *out = nullptr;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    Region *r;
    if (Status s = carve(size, RegionKind::device, &r); s != adsmSuccess) return s;
    if (device_.integrated()) {
        // On an integrated device the CPU may touch device memory too.
        if (Status s = space_.set_access(r->dev, r->span, PROT_READ | PROT_WRITE); s != adsmSuccess) {
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
    return device_.synchronize(c->stream);
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
        OwnerLock lock(r);
        if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was already freed (double free?)", p);
        owner = lock.owner();
        // As cudaFree: kernels of the owner may still use it, so wait for them.
        defer_error(*owner, wait_for_kernels(owner));
        r->live.store(false, std::memory_order_release);
    }
    retire(r);
    unref(owner);
    stats().add(Counter::frees);
    return adsmSuccess;
}

Status Manager::copy_to_device(void *dev_dst, const void *src, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    if (!dev_dst || !src) return fail(adsmErrorInvalidValue, "NULL %s", dev_dst ? "source" : "destination");
    Region *rd;
    if (Status s = owned_range(dev_dst, n, true, &rd); s != adsmSuccess) return s;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    {
        ContextGuard lock(*c);
        if (Status s = wait_for_kernels(c); s != adsmSuccess) return s;
    }
    uintptr_t sa = reinterpret_cast<uintptr_t>(src);
    if (space_.contains(sa)) {
        Region *rs;
        if (Status s = owned_range(src, n, false, &rs); s != adsmSuccess) return s;
        OwnerLock lock(rs);
        if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", src);
        if (lock.owner()->holds(*rs)) return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", src);
        return bounce_to_device(reinterpret_cast<uintptr_t>(dev_dst), *rs, sa - rs->host, n);
    }
    return device_.copy_to_device(reinterpret_cast<uintptr_t>(dev_dst), src, n);
}

Status Manager::copy_to_host(void *dst, const void *dev_src, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    if (!dst || !dev_src) return fail(adsmErrorInvalidValue, "NULL %s", dst ? "source" : "destination");
    Region *rs;
    if (Status s = owned_range(dev_src, n, true, &rs); s != adsmSuccess) return s;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    {
        ContextGuard lock(*c);
        if (Status s = wait_for_kernels(c); s != adsmSuccess) return s;
    }
    uintptr_t da = reinterpret_cast<uintptr_t>(dst);
    if (space_.contains(da)) {
        Region *rd;
        if (Status s = owned_range(dst, n, false, &rd); s != adsmSuccess) return s;
        OwnerLock lock(rd);
        if (!lock.valid()) return fail(adsmErrorInvalidPointer, "%p was freed meanwhile", dst);
        if (lock.owner()->holds(*rd)) return fail(adsmErrorBusy, "%p is in use by a kernel; call adsmSync first", dst);
        return bounce_from_device(*rd, da - rd->host, reinterpret_cast<uintptr_t>(dev_src), n);
    }
    return device_.copy_to_host(dst, reinterpret_cast<uintptr_t>(dev_src), n);
}

Status Manager::bounce_to_device(uintptr_t dev, Region &rs, size_t soff, size_t n) {
    const size_t chunk = n < kBounce ? n : kBounce;
    std::unique_ptr<uint8_t[]> bounce(new (std::nothrow) uint8_t[chunk]);
    if (!bounce) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte bounce buffer", chunk);
    for (size_t done = 0; done < n; done += chunk) {
        size_t len = n - done < chunk ? n - done : chunk;
        if (Status st = protocol_.read_out(rs, soff + done, bounce.get(), len); st != adsmSuccess) return st;
        if (Status st = device_.copy_to_device(dev + done, bounce.get(), len); st != adsmSuccess) return st;
    }
    return adsmSuccess;
}

Status Manager::bounce_from_device(Region &rd, size_t doff, uintptr_t dev, size_t n) {
    const size_t chunk = n < kBounce ? n : kBounce;
    std::unique_ptr<uint8_t[]> bounce(new (std::nothrow) uint8_t[chunk]);
    if (!bounce) return fail(adsmErrorMemoryAllocation, "no memory for a %zu-byte bounce buffer", chunk);
    for (size_t done = 0; done < n; done += chunk) {
        size_t len = n - done < chunk ? n - done : chunk;
        if (Status st = device_.copy_to_host(bounce.get(), dev + done, len); st != adsmSuccess) return st;
        if (Status st = protocol_.write_in(rd, doff + done, bounce.get(), len); st != adsmSuccess) return st;
    }
    return adsmSuccess;
}

Status Manager::device_memset(void *dev, int value, size_t n) {
    profile::Cause cause;
    if (n == 0) return adsmSuccess;
    Region *r;
    if (Status s = owned_range(dev, n, true, &r); s != adsmSuccess) return s;
    Context *c = current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    {
        ContextGuard lock(*c);
        if (Status s = wait_for_kernels(c); s != adsmSuccess) return s;
    }
    return device_.fill(reinterpret_cast<uintptr_t>(dev), value, n);
}

// ---------------------------------------------------------------- kernels

Status Manager::call(const LaunchDesc &launch, Context *in) {
    Timed timed(Counter::call_ns, trace::Kind::call, launch.kernel ? launch.kernel->name.c_str() : nullptr);
    Context *c = in ? in : current();
    if (!c) return fail(adsmErrorMemoryAllocation, "cannot create a context");
    ContextGuard lock(*c);
    if (!c->has_stream) {
        if (Status s = device_.create_stream(&c->stream); s != adsmSuccess) return s;
        c->has_stream = true;
    }
    if (Status s = protocol_.release(*c); s != adsmSuccess) return s;
    // From here on the objects belong to the device, launched or not, so
    // that the next adsmSync gives them back.
    c->calls++;
    c->unsynced_calls++;
    stats().add(Counter::kernels);
    return device_.launch(c->stream, launch);
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
        if (c->has_stream) result = device_.synchronize(c->stream);
        if (result != adsmSuccess) {
            detail = last_detail();
            stats().add(Counter::kernel_failures);
        }
        Status a = protocol_.acquire(*c);
        // The objects come back only once the acquire succeeds: a failed
        // one leaves them with the device, and the program's next adsmSync
        // tries again.
        if (a != adsmSuccess) {
            if (result != adsmSuccess) defer_error(*c, result);  // the kernel's error comes with the retry
            return a;
        }
        c->unsynced_calls = 0;
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
    Status st = c->has_stream ? device_.synchronize(c->stream) : adsmSuccess;
    defer_error(*c, st);
    if (protocol_.acquire(*c) == adsmSuccess) c->unsynced_calls = 0;  // else the next sync tries again
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
                     ptr(r.host), last_detail());
    });
    // One move replaces the whole window, shared mappings and all, with the
    // private copy: the regions become ordinary memory at the same addresses.
    os::remap_fixed(copy, size, reinterpret_cast<void *>(base));
    device_.detach_after_fork();
    space_.detach_after_fork();
}

}  // namespace adsm
