// Marking: conservative scanning of ranges for words that point into
// allocated objects (interior pointers included), on every marker thread at
// once.  Work is ranges of readable memory; a marker that runs dry takes
// ranges others gave up to a shared pool, and marking ends when every
// marker is dry and the pool is empty.  An object with a layout (layouts.h)
// is work of its own: an entry whose start has its low bit set, [object|1,
// object end) in program addresses, which the marker that pops it hands to
// the layout's scan function.
//
// Objects are read through the runtime's alias of the host copy, never
// through the window the program uses (whose protection the coherence
// protocol owns), and blocks whose current copy is on the device are read
// from the copy the collector took of them as well.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gc/chunk.h"
#include "gc/range_buffer.h"
#include "os/futex_lock.h"

namespace adsm::gc {

// Ranges to scan, in private memory (pushed while the world is stopped).
using MarkStack = RangeBuffer;

class MarkPool;

// One marker's state; the collector's thread is marker 0.  Each on cache
// lines of its own (two, for the adjacent-line prefetcher): a marker writes
// its stack's top and its byte count for every object, and two markers
// sharing a line marked a 4 MiB tree in 5 ms, against 1.7 ms apart.
class alignas(128) Marker {
public:
    Marker(const ChunkMap &map, MarkPool &pool) : map_(map), pool_(pool) {}

    // Marks what w points into, queueing the object to be scanned.
    void consider(uintptr_t w);
    // Marks an object known to be allocated (start of its page or slot).
    void mark_object(Chunk &c, Page &p, uintptr_t start, size_t bytes, unsigned idx);
    // Marks it without scanning what it holds (the caller scans that);
    // true when this marker marked it.
    bool mark_only(Page &p, size_t bytes, unsigned idx) {
        uint64_t bit = uint64_t(1) << (idx & 63);
        std::atomic<uint64_t> &m = p.mark[idx >> 6];
        if (m.load(std::memory_order_relaxed) & bit) return false;
        if (m.fetch_or(bit, std::memory_order_relaxed) & bit) return false;
        marked_bytes += bytes;
        return true;
    }
    // Scans [lo, hi) later (roots: stacks, data, registered ranges).
    // (Ranges start word-aligned: a set low bit marks an object with a layout.)
    void push_range(uintptr_t lo, uintptr_t hi) { local_.push((lo + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1), hi); }
    // The same for a range given in the program's addresses, which may
    // hold collected objects: those parts are read through the collector's
    // view.  (For scan functions.)
    void push_program_range(uintptr_t lo, uintptr_t hi);
    // A readable address for the word at program address a: the
    // collector's view of a collected object, a itself elsewhere.
    const void *view_of(uintptr_t a) const {
        Chunk *c = map_.find(a);
        return c && a - c->base < c->bytes ? static_cast<const void *>(c->alias_of(a)) : reinterpret_cast<const void *>(a);
    }
    // Scans what an allocated object holds, as marking it would, without
    // marking it.
    void push_contents(Chunk &c, const Page &p, uintptr_t start, size_t bytes);
    // Scans [start, start+bytes) of chunk c later, as an object's contents.
    void scan_object(Chunk &c, uintptr_t start, size_t bytes) { push_object(c, start, bytes); }
    // Scans until this marker's work, and the pool, run dry, or the pool
    // is asked to stop (what is left then stays on this marker's stack).
    // A helper (not counted among the pool's markers) stops as soon as no
    // work comes to it (MarkPool::help_take).
    void drain(bool helper = false);
    bool overflowed() const { return overflowed_; }
    // Nothing to scan, no overflow: a collection that starts afresh.
    void reset() {
        local_.clear();
        deferred_.clear();
        overflowed_ = false;
    }
    // Scans now, with the world stopped, what was pushed so far (roots:
    // stacks and launch records are only there while it is stopped); what
    // it reaches waits on the stack.
    void scan_pushed();
    // While the world runs, objects with a layout are not scanned: their
    // scan functions may read memory the program frees meanwhile.  They
    // wait, marked, until the world stops again (resume_deferred).
    void set_concurrent(bool on) { concurrent_ = on; }
    void resume_deferred();
    // Takes another marker's stack (one stopped half-way).
    void take_stack(RangeBuffer &from) {
        if (!from.give(local_, from.size())) overflowed_ = true;
    }
    uint64_t marked_bytes = 0;

private:
    void scan(uintptr_t lo, uintptr_t hi);
    void scan_laid_out(uintptr_t obj, size_t bytes);
    void push_object(Chunk &c, uintptr_t start, size_t bytes);
    void push_device_copy(Chunk &c, uintptr_t start, size_t bytes);

    const ChunkMap &map_;
    MarkPool &pool_;
    MarkStack local_;
    MarkStack deferred_;  // objects with a layout reached while the world runs
    bool overflowed_ = false;
    bool concurrent_ = false;
};

// Work shared between markers, and the end of marking.
class MarkPool {
public:
    void begin(unsigned markers);
    // A marker with spare work gives some when others are idle, or a
    // helper wants some.
    bool hungry() const { return idle_.load(std::memory_order_relaxed) > 0 || wanted_.load(std::memory_order_relaxed) > 0; }
    void give(MarkStack &from);
    // Fills `to` from the pool, or waits for work; false when marking is
    // over or stopped.
    bool take(MarkStack &to);
    // For a helper, which the pool does not count among its markers: fills
    // `to` from the pool, asking the markers for work and waiting a moment
    // for it when there is none; false when none came or marking is over.
    bool help_take(MarkStack &to);
    // Markers stop at their next range, leaving their work on their stacks.
    void stop();
    bool stopping() const { return stop_.load(std::memory_order_relaxed); }
    // What the pool still holds, after a stop.
    void take_rest(MarkStack &to);
    // Empties the pool and forgets an overflow, no marker running; in a
    // fork child, whose lock a marker of the parent may have held.
    void reset();
    // Work was dropped on its way through the pool (no memory to hold it).
    bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

private:
    void share(MarkStack &to, size_t n);

    os::FutexLock mu_;
    MarkStack pool_;
    unsigned markers_ = 1;
    std::atomic<unsigned> idle_{0};
    std::atomic<uint32_t> version_{0};   // bumped when work or the end arrives: a futex word
    std::atomic<unsigned> sleepers_{0};  // markers in futex_wait on version_
    std::atomic<unsigned> wanted_{0};    // helpers waiting in help_take
    std::atomic<bool> stop_{false};
    std::atomic<bool> overflowed_{false};
    bool done_ = false;
};

}  // namespace adsm::gc
