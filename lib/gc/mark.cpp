#include "gc/mark.h"

#include "gc/kernel_heap.h"
#include "gc/layouts.h"
#include "os/futex.h"

#include <new>

namespace adsm::gc {

namespace {
// A range longer than this is split, so that one huge object or stack does
// not keep the other markers idle.
constexpr size_t kSplitBytes = 64 * 1024;
// What an idle marker takes from the pool at least: less, and markers
// spend their time on the pool's lock instead of scanning.
constexpr size_t kShareEntries = 64;
// How long an idle marker polls for work before it sleeps.  Waking a
// sleeping thread costs tens of microseconds, what a marker needs to scan
// a few hundred objects, and a marker runs dry many times in a collection.
constexpr unsigned kSpins = 4000;
constexpr unsigned kPrefetchAhead = 16;
}  // namespace

void Marker::push_object(Chunk &c, uintptr_t start, size_t bytes) {
    uint8_t *a = c.alias_of(start);
    if (!local_.push(reinterpret_cast<uintptr_t>(a), reinterpret_cast<uintptr_t>(a) + bytes)) overflowed_ = true;
    push_device_copy(c, start, bytes);
}

void Marker::push_device_copy(Chunk &c, uintptr_t start, size_t bytes) {
    if (!c.block_size) return;  // no block of it is newer on the device (this collection)
    // The device may hold a newer copy: scan that one too.
    size_t off = start - c.base, end = off + bytes;
    for (size_t b = off - off % c.block_size; b < end; b += c.block_size) {
        size_t k = b / c.block_size;
        if (!c.all_on_device && (k >= 64 || !(c.device_blocks >> k & 1))) continue;
        size_t lo = b < off ? off : b, hi = b + c.block_size < end ? b + c.block_size : end;
        if (!local_.push(reinterpret_cast<uintptr_t>(c.device_copy + lo), reinterpret_cast<uintptr_t>(c.device_copy + hi)))
            overflowed_ = true;
    }
}

void Marker::mark_object(Chunk &c, Page &p, uintptr_t start, size_t bytes, unsigned idx) {
    if (mark_only(p, bytes, idx)) push_contents(c, p, start, bytes);
}

void Marker::push_contents(Chunk &c, const Page &p, uintptr_t start, size_t bytes) {
    if (!p.pointers) return;
    if (!p.layout) return push_object(c, start, bytes);
    if (!local_.push(start | 1, start + bytes)) overflowed_ = true;
    // Blocks newer on the device are read as they are, every word: their
    // copy is only a part of the object, not what a scan function expects.
    push_device_copy(c, start, bytes);
}

void Marker::scan_laid_out(uintptr_t obj, size_t bytes) {
    Chunk *c = map_.find(obj);
    if (!c) return;
    Page *p = c->page_of(obj);
    if (p->kind == PageKind::tail) p = &c->pages[p->head];
    const Layout &l = layout(p->layout);
    if (l.scan) l.scan(*this, reinterpret_cast<const uintptr_t *>(c->alias_of(obj)), bytes, obj, l.arg);
}

void Marker::push_program_range(uintptr_t lo, uintptr_t hi) {
    while (lo < hi) {
        Chunk *c = map_.find(lo);
        if (!c || lo - c->base >= c->bytes) {
            // Not the collected heap: read where the program says.  (Other
            // shared memory there is what the program itself allocated.)
            uintptr_t next = hi;
            if (lo - map_.base() < map_.size()) {
                uintptr_t boundary = (lo | (kChunkBytes - 1)) + 1;
                if (boundary < next) next = boundary;
            }
            push_range(lo, next);
            lo = next;
            continue;
        }
        uintptr_t end = c->base + c->bytes < hi ? c->base + c->bytes : hi;
        auto a = reinterpret_cast<uintptr_t>(c->alias_of(lo));
        push_range(a, a + (end - lo));
        lo = end;
    }
}

void Marker::consider(uintptr_t w) {
    Chunk *c = map_.find(w);
    if (!c) return;
    uintptr_t off = w - c->base;
    if (off >= c->bytes) return;
    Page *p = c->page_of(w);
    switch (p->kind) {
    case PageKind::small: {
        const SizeClass &sc = kSizeClasses[p->cls];
        uint32_t idx = object_index(static_cast<uint32_t>(off & (kPageBytes - 1)), sc);
        if (idx >= sc.objects || !(p->live[idx >> 6] >> (idx & 63) & 1)) return;
        mark_object(*c, *p, (w & ~(uintptr_t(kPageBytes) - 1)) + uintptr_t(idx) * sc.size, sc.size, idx);
        return;
    }
    case PageKind::tail:
        p = &c->pages[p->head];
        [[fallthrough]];
    case PageKind::large:
        if (!(p->live[0] & 1)) return;
        if (w - c->page_address(p) >= p->bytes) return;  // in the rounding after the object
        mark_object(*c, *p, c->page_address(p), p->bytes, 0);
        return;
    case PageKind::kernel: {
        // Open heaps are kept whole elsewhere; adopted ones know their objects.
        KernelArena *a = p->arena;
        uintptr_t start;
        size_t bytes;
        if (!a || !a->adopted() || !a->object_at(w, &start, &bytes) || !a->test_and_mark(start)) return;
        marked_bytes += bytes;
        if (a->scanned(start)) push_object(*c, start, bytes);
        return;
    }
    case PageKind::empty:
    case PageKind::reserved:
        return;
    }
}

// Conservative scanning reads whole stacks and data segments, the
// sanitizer's redzones among them: not the program's accesses to check.
// What runs for each word (consider, mark_object, the pushes) is inlined
// here, flattened: a tree marked about 8% faster than through the calls.
__attribute__((no_sanitize("address"), flatten)) void Marker::scan(uintptr_t lo, uintptr_t hi) {
    if (lo & 1) {
        if (concurrent_) {
            if (!deferred_.push(lo, hi)) overflowed_ = true;
            return;
        }
        return scan_laid_out(lo & ~uintptr_t(1), hi - (lo & ~uintptr_t(1)));
    }
    lo = (lo + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
    if (hi - lo > kSplitBytes && hi > lo) {
        // The rest waits on the stack, where another marker may take it.
        local_.push(lo + kSplitBytes, hi);
        hi = lo + kSplitBytes;
    }
    uintptr_t wbase = map_.base(), wsize = map_.size();
    for (uintptr_t p = lo; p + sizeof(uintptr_t) <= hi; p += sizeof(uintptr_t)) {
        uintptr_t w = *reinterpret_cast<const uintptr_t *>(p);
        if (w - wbase < wsize) consider(w);
    }
}

void Marker::scan_pushed() {
    RangeBuffer now;
    if (!local_.give(now, local_.size())) overflowed_ = true;
    for (const Range &r : now) {
        if (r.lo & 1) {  // an object with a layout: whenever
            if (!local_.push(r.lo, r.hi)) overflowed_ = true;
            continue;
        }
        // In pieces no longer than scan() takes at once: it would leave
        // the rest of a long stack for later.
        for (uintptr_t lo = r.lo; lo < r.hi; lo += kSplitBytes) scan(lo, r.hi - lo > kSplitBytes ? lo + kSplitBytes : r.hi);
    }
}

void Marker::resume_deferred() {
    if (!deferred_.give(local_, deferred_.size())) overflowed_ = true;
}

// Scanning waits on memory, object after object: each range is prefetched
// when it leaves the stack and scanned kPrefetchAhead ranges later, by
// which time it is in the cache (buffered prefetching, as in Cher, Hosking
// and Vijaykumar, ASPLOS 2004).
void Marker::drain(bool helper) {
    Range ahead[kPrefetchAhead];
    unsigned head = 0, n = 0;
    for (;;) {
        for (;;) {
            Range r;
            while (n < kPrefetchAhead && local_.pop(&r)) {
                __builtin_prefetch(reinterpret_cast<const void *>(r.lo));
                ahead[(head + n++) % kPrefetchAhead] = r;
            }
            if (!n) break;
            if (pool_.stopping()) {
                // (The ranges prefetched go back, unscanned.)
                for (; n; --n, head = (head + 1) % kPrefetchAhead)
                    if (!local_.push(ahead[head].lo, ahead[head].hi)) overflowed_ = true;
                return;
            }
            r = ahead[head];
            head = (head + 1) % kPrefetchAhead;
            --n;
            scan(r.lo, r.hi);
            if (local_.size() > 1 && pool_.hungry()) pool_.give(local_);
        }
        if (pool_.stopping() || !(helper ? pool_.help_take(local_) : pool_.take(local_))) return;
    }
}

void MarkPool::begin(unsigned markers) {
    markers_ = markers;
    idle_.store(0, std::memory_order_relaxed);
    done_ = false;
    stop_.store(false, std::memory_order_relaxed);
}

void MarkPool::reset() {
    // (Made anew, not unlocked: in a fork child its holder is gone.)
    mu_.~FutexLock();
    new (&mu_) os::FutexLock;
    pool_.clear();
    overflowed_.store(false, std::memory_order_relaxed);
    stop_.store(false, std::memory_order_relaxed);
    idle_.store(0, std::memory_order_relaxed);
    sleepers_.store(0, std::memory_order_relaxed);
}

void MarkPool::stop() {
    mu_.lock();
    stop_.store(true, std::memory_order_relaxed);
    mu_.unlock();
    version_.fetch_add(1, std::memory_order_seq_cst);
    os::futex_wake(&version_);
}

void MarkPool::take_rest(MarkStack &to) {
    mu_.lock();
    if (!pool_.give(to, pool_.size())) overflowed_.store(true, std::memory_order_relaxed);
    mu_.unlock();
}

void MarkPool::give(MarkStack &from) {
    mu_.lock();
    if (!from.give_oldest(pool_, (from.size() + 1) / 2)) overflowed_.store(true, std::memory_order_relaxed);
    mu_.unlock();
    // Sequentially consistent with take()'s count of sleepers: either this
    // sees the sleeper and wakes it, or the sleeper sees the new version and
    // does not sleep.  A marker that only polls needs no system call.
    version_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst)) os::futex_wake(&version_);
}

// With mu_ held: an even share of what waits, so that the next marker to
// run dry finds some too.
void MarkPool::share(MarkStack &to, size_t n) {
    size_t share = n / markers_;
    if (!pool_.give(to, share > kShareEntries ? share : kShareEntries)) overflowed_.store(true, std::memory_order_relaxed);
}

bool MarkPool::help_take(MarkStack &to) {
    wanted_.fetch_add(1, std::memory_order_seq_cst);
    bool got = false;
    // A marker that is running gives at its next object; one that is not
    // (its CPU taken by the program) gives nothing soon, and the helper
    // goes back to the program until its next allocation.
    for (unsigned spins = 0;;) {
        uint32_t v = version_.load(std::memory_order_acquire);
        mu_.lock();
        bool over = done_ || stop_.load(std::memory_order_relaxed);
        if (size_t n = pool_.size(); n && !over) {
            share(to, n);
            got = true;
        }
        mu_.unlock();
        if (got || over) break;
        while (spins < kSpins && version_.load(std::memory_order_relaxed) == v) {
            os::cpu_relax();
            ++spins;
        }
        if (spins >= kSpins) break;
    }
    wanted_.fetch_sub(1, std::memory_order_relaxed);
    return got;
}

bool MarkPool::take(MarkStack &to) {
    mu_.lock();
    idle_.fetch_add(1, std::memory_order_relaxed);
    for (;;) {
        if (size_t n = pool_.size()) {
            share(to, n);
            idle_.fetch_sub(1, std::memory_order_relaxed);
            mu_.unlock();
            return true;
        }
        if (done_ || stop_.load(std::memory_order_relaxed) || idle_.load(std::memory_order_relaxed) == markers_) {
            done_ = true;
            // (Gone, not idle: a helper still marking gives its work to no one.)
            idle_.fetch_sub(1, std::memory_order_relaxed);
            mu_.unlock();
            version_.fetch_add(1, std::memory_order_seq_cst);
            os::futex_wake(&version_);
            return false;
        }
        uint32_t v = version_.load(std::memory_order_acquire);
        mu_.unlock();
        for (unsigned i = 0; i < kSpins && version_.load(std::memory_order_relaxed) == v; ++i) os::cpu_relax();
        if (version_.load(std::memory_order_acquire) == v) {
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            os::futex_wait(&version_, v, 1000000);
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        mu_.lock();
    }
}

}  // namespace adsm::gc
