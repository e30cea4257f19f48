// One collection, in the order it happens: what must be read before the
// world stops (loaded objects, device copies), the stop, marking from the
// roots and from what kernels may reach, weak links, finalizers, the
// sweep, the restart, and what waits for the world to run again.

#include <algorithm>
#include <cstring>

#include "backend/device.h"
#include "gc/collector.h"
#include "gc/page_runs.h"
#include "gc/roots.h"
#include "memory/manager.h"
#include "os/clock.h"
#include "os/uffd.h"
#include "support/log.h"

namespace adsm::gc {

namespace {

// f(i, j) for each run [i, j) of marked slots among a page's first n.
template <class F>
void for_each_marked_run(const Page &p, unsigned n, F &&f) {
    auto bit = [&](unsigned k) { return p.mark[k >> 6].load(std::memory_order_relaxed) >> (k & 63) & 1; };
    unsigned i = 0;
    while (i < n) {
        if (!bit(i)) {
            ++i;
            continue;
        }
        unsigned j = i + 1;
        while (j < n && bit(j)) ++j;
        f(i, j);
        i = j;
    }
}

template <class F>
void for_each_live(Page &p, const SizeClass &sc, F &&f) {
    for (unsigned w = 0; w < kMaskWords; ++w)
        for (uint64_t m = p.live[w]; m; m &= m - 1) {
            unsigned i = w * 64 + static_cast<unsigned>(__builtin_ctzll(m));
            f(i, uintptr_t(i) * sc.size);
        }
}
}  // namespace

// ---- before the world stops

namespace {
// Whether a page holds no object and none can be allocated there before the
// world stops: empty, or of a size class with every object free and no
// thread's cache owning it (a cache allocates without the heap's lock,
// which the collection holds from its device copies to the restart).
bool page_holds_nothing(const Page &p) {
    if (p.kind == PageKind::empty || p.kind == PageKind::reserved) return true;
    if (p.kind != PageKind::small || p.cache_mask) return false;
    const unsigned n = kSizeClasses[p.cls].objects;
    for (unsigned w = 0; w < kMaskWords && w * 64 < n; ++w) {
        const unsigned bits = n - w * 64 < 64 ? n - w * 64 : 64;
        const uint64_t all = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
        if ((p.free[w] & all) != all) return false;
    }
    return true;
}

// Whether no object of [off, off + n) of the chunk can be reached while
// the world is stopped: marking never reads its device copy.
bool holds_nothing(const Chunk &c, size_t off, size_t n) {
    if (c.huge) return false;
    for (size_t pg = off >> kPageShift; pg <= (off + n - 1) >> kPageShift && pg < c.npages; ++pg)
        if (!page_holds_nothing(c.pages[pg])) return false;
    return true;
}
}  // namespace

void Collector::take_device_copies() {
    for (Chunk *c : heap_.chunks()) read_device_blocks(*c);
    // A kernel that ran meanwhile may have changed blocks read already:
    // those chunks are read again, twice at most (one a kernel finishes
    // after that makes device_copies_stale true).
    for (int round = 0; round < 2; ++round) {
        bool again = false;
        for (Chunk *c : heap_.chunks())
            if (device_copy_outdated(*c)) {
                read_device_blocks(*c);
                again = true;
            }
        if (!again) break;
    }
}

// Reads the chunk's blocks whose current copy is on the device.  Its owner's
// calls are noted first: a kernel running then or launched after may write
// any block (device_copy_outdated).
void Collector::read_device_blocks(Chunk &c) {
    c.device_blocks = 0;
    c.all_on_device = false;
    c.block_size = 0;
    const Region *r = c.region;
    c.calls_copied = c.owner ? c.owner->calls.load(std::memory_order_seq_cst) : 0;
    c.held_when_copied = heap_.held(c);
    c.writes_seen = r->program_writes.load(std::memory_order_seq_cst);
    if (r->device->integrated()) return;  // one copy, the host's
    bool any = false;
    uint64_t bs = r->block_size && r->blocks ? r->block_size : c.bytes;
    if (r->on_device || (r->nblocks > 64 && r->blocks)) {
        // Whole object on the device (batch), or more blocks than the mask holds.
        bool all = r->on_device;
        for (uint32_t k = 0; !all && k < r->nblocks; ++k) all = r->state(k) == block::kInvalid;
        any = c.all_on_device = all;
    } else if (r->blocks) {
        for (uint32_t k = 0; k < r->nblocks; ++k)
            if (r->state(k) == block::kInvalid) c.device_blocks |= uint64_t(1) << k;
        any = c.device_blocks != 0;
    }
    if (!any) return;
    if (!c.device_copy) {
        void *p = os::map_anon(c.bytes, PROT_READ | PROT_WRITE, true);
        if (p == MAP_FAILED) {
            ADSM_LOG(warn, "collector: no memory to copy a chunk's device blocks; nothing is freed this time");
            device_copy_missing_ = true;
            return;
        }
        c.device_copy = static_cast<uint8_t *>(p);
    }
    c.block_size = bs;
    for (size_t off = 0; off < c.bytes; off += bs) {
        size_t k = off / bs;
        if (!c.all_on_device && !(c.device_blocks >> k & 1)) continue;
        size_t n = off + bs < c.bytes ? bs : c.bytes - off;
        // After a collection most of a heap may be pages with no object,
        // which a kernel left on the device: no use reading them.
        if (holds_nothing(c, off, n)) continue;
        // The device copy is read while a kernel may be writing it: what a
        // kernel can reach is kept by other means (mark_kernel_reachable);
        // this copy finds what the device holds that the host does not.
        if (r->device->copy_to_host(c.device_copy + off, r->dev + off, n) != adsmSuccess) {
            ADSM_LOG(warn, "collector: could not read a device block at %p (%s); nothing is freed this time",
                     reinterpret_cast<void *>(r->dev + off), last_detail());
            device_copy_missing_ = true;
        }
    }
}

// Whether a kernel that ran while the chunk's blocks were read, or was
// launched after, may have written any of them since (those the host held
// then too) and been synced: its copy lacks what the kernel wrote.  (A
// chunk a kernel still holds keeps its objects whole, mark_kernel_reachable.)
bool Collector::device_copy_outdated(const Chunk &c) const {
    const Region *r = c.region;
    if (r->device->integrated() || !c.owner || heap_.held(c)) return false;
    // (A call is numbered one past the calls before it.)
    return c.held_when_copied || c.owner->whole_call.load(std::memory_order_seq_cst) > c.calls_copied ||
           r->named_call.load(std::memory_order_seq_cst) > c.calls_copied;
}

// ---- while the world is stopped

// Whether a write the runtime made for the program (interposed I/O,
// adsmMemcpy) may have reached a chunk's device copy after
// take_device_copies read it: it ran since, or its thread was stopped
// half-way through it.  What it wrote is then in no copy the collector
// reads.  (Writes that went to the host copy are read where they landed.)
bool Collector::device_copies_stale() const {
    // (A device copy that could not be read is as stale as one written
    // after it was read: pointers only it holds were not seen.)
    if (device_copy_missing_) return true;
    for (Chunk *c : heap_.chunks()) {
        const Region *r = c->region;
        if (r->device->integrated()) continue;
        if (device_copy_outdated(*c)) return true;
        uint32_t w = r->program_writes.load(std::memory_order_seq_cst);
        if (w == c->writes_seen && !(w & 1)) continue;
        if (c->block_size || c->all_on_device || r->on_device) return true;
        for (uint32_t k = 0; r->blocks && k < r->nblocks; ++k)
            if (r->state(k) == block::kInvalid) return true;
    }
    return false;
}

// A full collection starts with nothing marked.  A minor one keeps the
// marks of the last collection's survivors (sticky marks): those objects
// are old, kept without being traced, and only objects allocated since
// are traced from the roots and from what was written since.
void Collector::snapshot_live(bool full) { run_on_markers(full ? Job::snapshot_full : Job::snapshot_minor); }

void Collector::snapshot_chunk(Chunk &c, bool full) {
    for (uint32_t i = 0; i < c.npages; ++i) {
        Page &p = c.pages[i];
        // Marking reads no other page's bits (a tail's are its head's,
        // a kernel heap's are its arena's), and an emptied page's marks
        // were cleared: a heap kept roomy is mostly empty pages.
        if (p.kind != PageKind::small && p.kind != PageKind::large) continue;
        for (unsigned w = 0; w < kMaskWords; ++w) p.live[w] = 0;
        if (p.kind == PageKind::large) {
            p.live[0] = 1;
        } else {
            const SizeClass &sc = kSizeClasses[p.cls];
            for (unsigned w = 0; w < kMaskWords; ++w) {
                uint64_t free = p.cache_mask ? p.cache_mask[w] | p.swept[w].load(std::memory_order_relaxed) : p.free[w];
                p.live[w] = Heap::full_mask(sc, w) & ~free;
            }
        }
        for (unsigned w = 0; w < kMaskWords; ++w)
            p.mark[w].store(full ? 0 : p.mark[w].load(std::memory_order_relaxed) & p.live[w], std::memory_order_relaxed);
    }
}

// ---- what was written since the last collection (world stopped)

// Calls f(lo, hi) for each run of c's pages that hold old objects with
// pointers in them (marked) and that collection `epoch` has not asked the
// write tracker about yet; they count as asked.  Only those pages' writes
// matter to a minor collection.  Other pages stay unarmed, so that
// allocating in them costs no write-protect fault; once they hold old
// objects, an unarmed page reads as written.
template <class F>
void for_each_old_run(Chunk &c, uint64_t epoch, F &&f) {
    auto old = [&](Page &p) {
        if (p.drained == epoch) return false;
        bool o = false;
        if (p.kind == PageKind::small) {
            for (unsigned w = 0; w < kMaskWords && !o; ++w) o = p.pointers && p.mark[w].load(std::memory_order_relaxed);
        } else if (p.kind == PageKind::large) {
            o = p.pointers && (p.mark[0].load(std::memory_order_relaxed) & 1);
        } else if (p.kind == PageKind::kernel) {
            o = p.arena && p.arena->adopted();
        }
        if (o) p.drained = epoch;
        return o;
    };
    // Each run takes a system call (about 2.2 us here, in the pause), and
    // old objects scattered among garbage make many short runs: runs one
    // page apart go as one, that page armed too, which costs a write-protect
    // fault (about 1.8 us, outside the pause) if the program writes it.  On
    // bigheap: 22.8k calls and 109k faults against 29.1k and 104k; two
    // pages apart, 18.0k and 117k.
    constexpr uint32_t kGapPages = 1;
    for_each_page_run(c, kGapPages, old, f);
}

// Asks the write tracker which pages holding old objects were written
// since the last collection (arming them again, so that the next one asks
// afresh), and notes each chunk's kernel calls; then traces, as roots, the
// old objects on those pages, and all old objects of a chunk a kernel may
// have written since.  For a minor collection, before snapshot_live.
// False when there is no answer, or only part of one.
bool Collector::scan_written() {
    os::UffdTracker *t = config_.writes;
    if (!t || !t->usable()) return false;
    struct Found {
        RangeBuffer *runs;
        bool lost;  // no memory to note a run
    } found{&written_, false};
    auto note = [](void *arg, uintptr_t start, size_t len) {
        auto *f = static_cast<Found *>(arg);
        if (!f->runs->push(start, start + len)) f->lost = true;
    };
    const uint64_t epoch = stats_.collections.load(std::memory_order_relaxed) + 1;
    bool trusted = true;
    uint64_t pages = 0;
    for (Chunk *c : heap_.chunks()) {
        bool whole = c->note_kernel_calls();
        // Finishing a concurrent collection: its markers may have read
        // device blocks older than those read now.
        if (finishing_ && (c->device_at_start || c->block_size || c->all_on_device)) whole = true;
        if (trusted && whole) {
            trace_old(*c, c->base, c->base + c->bytes);
            pages += c->bytes >> kPageShift;
        }
        written_.clear();
        for_each_old_run(*c, epoch, [&](uintptr_t lo, uintptr_t hi) {
            if (t->collect(lo, hi - lo, note, &found, os::UffdTracker::kCollector) != 0) trusted = false;
        });
        if (found.lost) trusted = false;
        if (whole || !trusted) continue;
        for (const Range &r : written_) {
            trace_old(*c, r.lo, r.hi);
            pages += (r.hi - r.lo) >> kPageShift;
        }
    }
    stats_.written_pages.store(pages, std::memory_order_relaxed);
    return trusted;
}

// Whether kernels may have written more than half of the heap's chunks
// since the last collection, by bytes.
bool Collector::kernels_wrote_most() const {
    uint64_t written = 0;
    for (const Chunk *c : heap_.chunks())
        if (c->kernel_may_have_written()) written += c->bytes;
    return written > heap_.heap_bytes() / 2;
}

// After the sweep, the world still stopped: arms the pages that hold old
// objects now and were not asked about at the start (all of them after a
// full collection; after a minor one, those where objects became old).
// What was written there is traced already.
void Collector::arm_survivors(bool full) {
    os::UffdTracker *t = config_.writes;
    if (!t || !t->usable()) return;
    const uint64_t epoch = stats_.collections.load(std::memory_order_relaxed) + 1;
    for (Chunk *c : heap_.chunks()) {
        if (full) c->note_kernel_calls();
        for_each_old_run(*c, epoch, [&](uintptr_t lo, uintptr_t hi) {
            // (A failure logs the range as written for the next one.)
            t->collect(lo, hi - lo, [](void *, uintptr_t, size_t) {}, nullptr, os::UffdTracker::kCollector);
        });
    }
}

// Traces the old (marked) objects of chunk c that overlap [lo, hi): what
// they point to may have been written since they were last traced.
void Collector::trace_old(Chunk &c, uintptr_t lo, uintptr_t hi) {
    Marker &m = *markers_[0];
    if (lo < c.base) lo = c.base;
    if (hi > c.base + c.bytes) hi = c.base + c.bytes;
    uintptr_t whole_done = 0;  // the last object traced whole (it spans pages)
    for (uintptr_t pg = lo & ~(uintptr_t(kPageBytes) - 1); pg < hi; pg += kPageBytes) {
        Page *p = c.page_of(pg);
        if (p->kind == PageKind::tail) p = &c.pages[p->head];
        switch (p->kind) {
        case PageKind::small: {
            if (!p->pointers) break;
            const SizeClass &sc = kSizeClasses[p->cls];
            // (Marks are only ever on allocated objects: a free clears them.)
            if (p->layout) {
                for (unsigned w = 0; w < kMaskWords; ++w)
                    for (uint64_t b = p->mark[w].load(std::memory_order_relaxed); b; b &= b - 1) {
                        unsigned i = w * 64 + static_cast<unsigned>(__builtin_ctzll(b));
                        m.push_contents(c, *p, pg + uintptr_t(i) * sc.size, sc.size);
                    }
                break;
            }
            // Neighbours as one range: an object per entry, a page of small
            // ones was a hundred entries on the mark stack, and the chunks a
            // kernel wrote (traced whole) millions.
            for_each_marked_run(*p, sc.objects, [&](unsigned i, unsigned j) {
                m.scan_object(c, pg + uintptr_t(i) * sc.size, uintptr_t(j - i) * sc.size);
            });
            break;
        }
        case PageKind::large: {
            if (!p->pointers || !(p->mark[0].load(std::memory_order_relaxed) & 1)) break;
            uintptr_t start = c.huge ? c.base : c.page_address(p), end = start + p->bytes;
            if (p->layout) {
                // A layout's scan function reads the whole object.
                if (whole_done != start) m.push_contents(c, *p, start, p->bytes);
                whole_done = start;
                break;
            }
            uintptr_t s = pg > start ? pg : start, e = pg + kPageBytes < end ? pg + kPageBytes : end;
            if (c.huge) {
                // One Page stands for the whole chunk: the rest of the range at once.
                s = lo > start ? lo : start;
                e = hi < end ? hi : end;
                pg = hi;
            }
            if (s < e) m.scan_object(c, s, e - s);
            break;
        }
        case PageKind::kernel: {
            KernelArena *a = p->arena;
            if (!a || !a->adopted()) break;  // open heaps are kept and scanned whole elsewhere
            uintptr_t end = c.huge ? hi : pg + kPageBytes;
            uintptr_t run_lo = 0, run_hi = 0;  // objects that follow one another, as one range
            a->for_each_object_in(c.huge ? lo : pg, end, [&](uint64_t gs, uint64_t ge) {
                uintptr_t start = a->address(gs);
                if (start == whole_done || !a->marked(start) || !a->scanned(start)) return;
                whole_done = start;
                uintptr_t stop = start + (ge - gs + 1) * kGranule;
                if (start != run_hi) {
                    if (run_lo < run_hi) m.scan_object(c, run_lo, run_hi - run_lo);
                    run_lo = start;
                }
                run_hi = stop;
            });
            if (run_lo < run_hi) m.scan_object(c, run_lo, run_hi - run_lo);
            if (c.huge) pg = hi;
            break;
        }
        default:
            break;
        }
    }
}

void Collector::mark_roots(Marker &m) {
    for (const Range &r : roots_) m.push_range(r.lo, r.hi);
    for (const Range &r : threads_) m.push_range(r.lo, r.hi);
    for (auto &[lo, hi] : registry_.roots) {
        // Roots inside shared memory are read through the alias: the
        // program's view may be closed by the protocol.
        if (space_.contains(lo)) {
            uintptr_t a = reinterpret_cast<uintptr_t>(space_.alias(lo));
            m.push_range(a, a + (hi - lo));
        } else {
            m.push_range(lo, hi);
        }
    }
    for (auto &[obj, count] : registry_.pins) m.consider(obj);
    // Objects whose callbacks are due or running: kept, with what they
    // reach, until the callback has returned.
    for (auto *calls : {&due_calls_, &running_})
        for (auto &[obj, cb] : *calls) {
            m.consider(obj);
            if (cb.keep_data) m.consider(reinterpret_cast<uintptr_t>(cb.data));
        }
    // ...and data that a finalizer's registration keeps (bdwgc's client data).
    for (auto &[obj, cb] : registry_.finalizers)
        if (cb.keep_data) m.consider(reinterpret_cast<uintptr_t>(cb.data));
    for (const LaunchRecord &l : launches_) {
        uintptr_t a = reinterpret_cast<uintptr_t>(l.args.data());
        m.push_range(a, a + l.args.size());
    }
}

void Collector::mark_kernel_reachable(Marker &m) {
    uint64_t kept = 0;
    for (Chunk *c : heap_.chunks()) {
        if (!heap_.held(*c)) continue;
        for (uint32_t i = 0; i < c->npages; ++i) {
            Page &p = c->pages[i];
            if (p.kind == PageKind::large) {
                m.mark_object(*c, p, c->page_address(&p), p.bytes, 0);
                ++kept;
            } else if (p.kind == PageKind::small) {
                const SizeClass &sc = kSizeClasses[p.cls];
                uintptr_t base = c->page_address(&p);
                // A page whose every word may be a pointer is scanned whole,
                // its free slots too (what they still hold is kept a while
                // longer), in one range: one range per object filled the
                // mark stack with a million for a 16 MiB tree, and growing
                // it took 40 ms of the pause.  Layouts are read per object.
                bool whole = p.pointers && !p.layout, any = false;
                for_each_live(p, sc, [&](unsigned idx, uintptr_t off) {
                    if (whole) m.mark_only(p, sc.size, idx);
                    else m.mark_object(*c, p, base + off, sc.size, idx);
                    any = true;
                    ++kept;
                });
                if (whole && any) m.scan_object(*c, base, uintptr_t(sc.objects) * sc.size);
            }
        }
    }
    kernel_heaps_.mark_for_kernels(m, heap_, &kept);
    stats_.kept_for_kernels.store(kept, std::memory_order_relaxed);
}

bool Collector::marked(uintptr_t obj) {
    Chunk *c = heap_.chunk_of(obj);
    if (!c) return true;  // not ours (any more): nothing to decide
    Page *p = c->page_of(obj);
    if (p->kind == PageKind::tail) p = &c->pages[p->head];
    if (p->kind == PageKind::large) return p->mark[0].load(std::memory_order_relaxed) & 1;
    if (p->kind == PageKind::kernel) {
        KernelArena *a = p->arena;
        uintptr_t start;
        size_t n;
        if (!a || !a->adopted() || !a->object_at(obj, &start, &n)) return true;
        return a->marked(start);
    }
    if (p->kind != PageKind::small) return true;
    unsigned i = object_index(static_cast<uint32_t>(obj & (kPageBytes - 1)), kSizeClasses[p->cls]);
    return p->mark[i >> 6].load(std::memory_order_relaxed) >> (i & 63) & 1;
}

// Weak links to objects nothing else reached: cleared now when the link is
// private memory; a link in shared memory is written once the world runs
// (through the protocol, never waiting for a kernel), so its object is kept
// for this one collection.
void Collector::settle_weak_links() {
    Marker &m = *markers_[0];
    for (auto &[link, obj] : registry_.weak) {
        if (marked(obj)) continue;
        if (heap_.chunk_of(link) && !marked(link)) continue;  // its holder dies too: dropped below
        if (space_.contains(link)) {
            links_.push(link, link + 1);
            m.consider(obj);
        } else {
            *reinterpret_cast<uintptr_t *>(link) = 0;
            dropped_.push(link, link + 1);
            stats_.weak_cleared.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

// Objects with a finalizer or a release callback that nothing reaches: kept,
// with all they reach, until their callback has run.  An ordered finalizer
// waits while another unreached finalizable object (or its own object)
// reaches its object: what each of those points to is marked first, and
// an object marked so is not due yet.  An "unreachable" finalizer waits,
// besides, while an object whose finalizer is due now reaches it.
void Collector::find_ready() {
    Marker &m = *markers_[0];
    bool ordered = false, unreachable = false;
    for (auto &[obj, cb] : registry_.finalizers) {
        if (cb.order == FinalizerOrder::none || marked(obj)) continue;
        push_children(obj, cb.order == FinalizerOrder::ignore_self);
        ordered = true;
        unreachable |= cb.order == FinalizerOrder::unreachable;
    }
    if (ordered) mark_all();
    for (auto &[obj, cb] : registry_.finalizers)
        if (cb.order != FinalizerOrder::unreachable && !marked(obj)) ready_.push(obj, obj + 1);
    for (auto &[obj, cb] : registry_.releases)
        if (!marked(obj)) ready_.push(obj, obj + 2);
    for (const Range &r : ready_) m.consider(r.lo);
    if (!unreachable) return;
    mark_all();
    size_t first = ready_.size();
    for (auto &[obj, cb] : registry_.finalizers)
        if (cb.order == FinalizerOrder::unreachable && !marked(obj)) ready_.push(obj, obj + 1);
    for (size_t i = first; i < ready_.size(); ++i) m.consider(ready_[i].lo);
}

// Marks what obj points to, but not obj itself (unless it points to itself
// and skip_self is false).  skip_self reads every word of the object, its
// layout aside, as bdwgc does for such finalizers.
void Collector::push_children(uintptr_t obj, bool skip_self) {
    Chunk *c;
    Page *p;
    uintptr_t start;
    size_t size;
    unsigned idx;
    if (!object_at(obj, &c, &p, &start, &size, &idx)) return;
    Marker &m = *markers_[0];
    if (!skip_self) {
        m.push_contents(*c, *p, start, size);
    } else if (p->pointers) {
        auto *w = reinterpret_cast<const uintptr_t *>(c->alias_of(start));
        for (size_t i = 0; i < size / sizeof(uintptr_t); ++i)
            if (w[i] - start >= size) m.consider(w[i]);
    }
}

// The markers sweep chunks side by side; emptying pages (which unlists
// them from their space's lists) and the kernel heaps wait for marker 0.
void Collector::sweep() {
    run_on_markers(Job::sweep);
    uint64_t freed = 0, live = 0;
    for (SweepTally &t : tallies_) {
        freed += t.freed;
        live += t.live;
        for (const Range &r : t.emptied)
            for (auto *p = reinterpret_cast<Page *>(r.lo); p != reinterpret_cast<Page *>(r.hi); ++p)
                heap_.make_empty(*p->chunk, *p);
        for (const Range &r : t.dead) dead_chunks_.push_back(reinterpret_cast<Chunk *>(r.lo));
    }
    kernel_heaps_.sweep(heap_, dead_chunks_, &freed, &live);
    live_bytes_ = live;
    stats_.freed.fetch_add(freed, std::memory_order_relaxed);
}

void Collector::sweep_chunk(Chunk &c, SweepTally &t) {
    for (uint32_t i = 0; i < c.npages; ++i) {
        Page &p = c.pages[i];
        if (p.kind == PageKind::large) {
            if (p.mark[0].load(std::memory_order_relaxed) & 1) {
                t.live += p.bytes;
            } else {
                // (Without memory to note it, it is found dead again next
                // time, and counted then.)
                bool noted = c.huge ? t.dead.push(reinterpret_cast<uintptr_t>(&c), reinterpret_cast<uintptr_t>(&c) + 1)
                                    : t.emptied.push(reinterpret_cast<uintptr_t>(&p), reinterpret_cast<uintptr_t>(&p + p.npages));
                if (noted) ++t.freed;
            }
        } else if (p.kind == PageKind::small) {
            const SizeClass &sc = kSizeClasses[p.cls];
            bool all = true;
            for (unsigned w = 0; w < kMaskWords; ++w) {
                uint64_t mark = p.mark[w].load(std::memory_order_relaxed);
                uint64_t garbage = p.live[w] & ~mark;
                t.freed += popcount(garbage);
                t.live += uint64_t(popcount(mark)) * sc.size;
                if (p.cache_mask) p.swept[w].fetch_or(garbage, std::memory_order_acq_rel);
                else p.free[w] |= garbage;
                all &= !p.cache_mask && p.free[w] == Heap::full_mask(sc, w);
            }
            if (all) t.emptied.push(reinterpret_cast<uintptr_t>(&p), reinterpret_cast<uintptr_t>(&p + 1));
        }
        // The marks stay: they say which objects are old (snapshot_live).
    }
}

// ---- the collection

void Collector::gather_roots() {
    drop_stale_launches();
    roots_.clear();
    threads_.clear();
    if (Status s = data_segments(&roots_, &loaded_); s != adsmSuccess)
        ADSM_LOG(warn, "collector: the loaded objects' data could not all be listed: %s", last_detail());
}

void Collector::collect_locked(Scope scope) {
    if (collecting_ || disabled()) return;
    // Automatic collections are full every full_every-th time, as soon as
    // what minor ones find live has doubled since the last full one (most
    // of that may be old garbage only a full collection frees), and when
    // kernels may have written most of the heap (a minor collection would
    // trace those chunks' old objects whole: more work than a full one).
    if (heap_.heap_bytes() > cycle_peak_) cycle_peak_ = heap_.heap_bytes();
    const bool asked_full = scope == Scope::full;
    if (scope == Scope::automatic &&
        (since_full_ + 1 >= config_.full_every || live_bytes_ > 2 * live_at_full_ || kernels_wrote_most()))
        scope = Scope::full;
    collecting_ = true;
    event(Event::start);
    uint64_t t0 = os::now_ns();
    if (start_markers() != adsmSuccess) {
        event(Event::end);
        collecting_ = false;
        return;
    }
    // A concurrent full collection's markers are running: this one
    // finishes it.  Unless a full collection was asked for (adsmGcCollect,
    // a heap at its limit): what died since the markers started must go
    // too, so their marks are dropped and it starts afresh.
    finishing_ = marking_;
    if (finishing_) end_concurrent_marking();
    if (finishing_ && asked_full) {
        finishing_ = false;
        need_full_ = true;
    }
    gather_roots();
    ready_.clear();
    links_.clear();
    dropped_.clear();
    dead_chunks_.clear();
    adopt_finished(nullptr);
    take_device_copies();

    event(Event::stop_world);
    // The pause, as the program sees it, starts when its threads are asked to stop.
    uint64_t t1 = os::now_ns();
    if (Status s = world_.stop(marker_tids_.data() + 1, marker_tids_.size() - 1); s != adsmSuccess) {
        ADSM_LOG(error, "collector: could not stop the world (%s); no collection", last_detail());
        unstoppable_ = s;
        unstoppable_why_ = last_detail();
        if (finishing_) need_full_ = true;  // the markers' work is half done: no mark can be trusted
        finishing_ = false;
        event(Event::end);
        collecting_ = false;
        return;
    }
    event(Event::world_stopped);
    uint64_t t_stopped = os::now_ns();
    // (Both, whatever the first says: the roots are read even when this
    // collection is to free nothing.)
    const bool threads_listed = world_.thread_ranges(&threads_) == adsmSuccess;
    const bool data_mapped = world_.keep_mapped(&roots_) == adsmSuccess;
    // A library loaded since the data segments were listed is not in them:
    // this collection marks, but frees nothing; the next one lists it.
    const bool loader_still = loaded_objects_unchanged(loaded_);
    bool roots_complete = threads_listed && data_mapped && loader_still;
    // (A collection that finishes concurrent marking keeps what the
    // markers left, and their overflows.)
    if (!finishing_) {
        pool_.reset();
        for (auto &m : markers_) m->reset();
    }
    for (auto &m : markers_) m->marked_bytes = 0;
    event(Event::mark_start);
    // Minor only while what was written since the last collection is known
    // (a thread stopped inside the tracker may hold pages it took from the
    // kernel and has not logged for the collector yet).  Finishing a
    // concurrent collection is a minor collection whose old objects are
    // those its markers reached; it is full in all else.
    bool full = need_full_ || !generational() || config_.writes->collecting();
    if (!finishing_) full |= scope == Scope::full;
    else for (auto &m : markers_) full |= m->overflowed();
    if (!full && !scan_written()) {
        // The tracker failed half-way: what it did not say is unknown.
        full = true;
    }
    if (full) {
        stats_.written_pages.store(0, std::memory_order_relaxed);
        // (What was pushed meanwhile is only traced: it frees nothing.)
        pool_.reset();
        for (auto &m : markers_) m->reset();
    }
    snapshot_live(full);
    kernel_heaps_.begin_marking(full);
    mark_roots(*markers_[0]);
    mark_kernel_reachable(*markers_[0]);
    mark_all();
    settle_weak_links();
    find_ready();
    mark_all();
    // Weak links held by objects that die are forgotten with them.
    for (auto &[link, obj] : registry_.weak)
        if (heap_.chunk_of(link) && !marked(link)) dropped_.push(link, link + 1);
    event(Event::mark_end);
    uint64_t t_marked = os::now_ns();
    uint64_t marked = 0;
    for (auto &m : markers_) marked += m->marked_bytes;
    bool overflow = !roots_complete || pool_.overflowed();
    for (auto &m : markers_) overflow |= m->overflowed();
    bool stale = !overflow && device_copies_stale();
    device_copy_missing_ = false;  // (for the next collection, which reads the copies again)
    if (overflow || stale) {
        // Out of memory for the mark stack, roots not all listed, or a
        // device copy that may lack a pointer: some objects were not
        // scanned.  Sweeping could free what they point to, so this
        // collection frees nothing.
        if (overflow && !loader_still && threads_listed && data_mapped)
            ADSM_LOG(info, "collector: a library was loaded or unloaded while the roots were listed; nothing freed "
                     "this time");
        else if (overflow)
            ADSM_LOG(error, "collector: out of memory while marking; nothing freed this time");
        else ADSM_LOG(debug, "collector: a write for the program reached a chunk's device copy after it was read; nothing freed this time");
        stats_.abandoned.fetch_add(1, std::memory_order_relaxed);
        for (Chunk *c : heap_.chunks())
            for (uint32_t i = 0; i < c->npages; ++i)
                for (auto &w : c->pages[i].mark) w.store(0, std::memory_order_relaxed);
        need_full_ = true;  // no mark says which objects are old now
        dead_chunks_.clear();
        ready_.clear();
        links_.clear();
        dropped_.clear();
    } else {
        event(Event::sweep_start);
        sweep();
        arm_survivors(full);
        event(Event::sweep_end);
        if (full || finishing_) {
            need_full_ = false;
            live_at_full_ = live_bytes_;
        }
    }
    event(Event::restart_world);
    world_.start();
    uint64_t t2 = os::now_ns();
    event(Event::world_restarted);

    bool as_full = full || finishing_;
    after_world_restarts(as_full);
    handed_out_before_ += heap_.handed_out;
    heap_.handed_out = 0;
    uint64_t pause = t2 - t1;
    stats_.collections.fetch_add(1, std::memory_order_relaxed);
    note_pause(pause, as_full);
    if (as_full) {
        since_full_ = 0;
    } else {
        ++since_full_;
        stats_.minor_collections.fetch_add(1, std::memory_order_relaxed);
        stats_.minor_pause.fetch_add(pause, std::memory_order_relaxed);
    }
    ADSM_LOG(debug,
        "collector: %s collection %llu: %llu bytes live, pause %.3f ms (stop %.3f, mark %.3f, sweep and restart "
        "%.3f), %.3f ms in all; marked %llu bytes, traced %llu written pages",
        finishing_ ? (full ? "concurrent (redone whole)" : "concurrent") : full ? "full" : "minor",
        static_cast<unsigned long long>(stats_.collections.load()),
        static_cast<unsigned long long>(live_bytes_), static_cast<double>(pause) / 1e6,
        static_cast<double>(t_stopped - t1) / 1e6, static_cast<double>(t_marked - t_stopped) / 1e6,
        static_cast<double>(t2 - t_marked) / 1e6, static_cast<double>(os::now_ns() - t0) / 1e6,
        static_cast<unsigned long long>(marked), static_cast<unsigned long long>(stats_.written_pages.load()));
    finishing_ = false;
    event(Event::end);
    collecting_ = false;
}

// Every stop of the world counts as a pause: a concurrent full
// collection's first one too.
void Collector::note_pause(uint64_t ns, bool full) {
    stats_.last_pause.store(ns, std::memory_order_relaxed);
    stats_.total_pause.fetch_add(ns, std::memory_order_relaxed);
    auto raise = [&](std::atomic<uint64_t> &max) {
        if (ns > max.load(std::memory_order_relaxed)) max.store(ns, std::memory_order_relaxed);
    };
    raise(stats_.max_pause);
    raise(full ? stats_.max_full_pause : stats_.max_minor_pause);
}

// A launch record is stale once a sync covered its call, and nothing of
// its context is in flight.  Not `calls`: a launch counts its call only
// after releasing its objects, which takes a while, and a record dropped
// then leaves its kernel's arguments unmarked through the kernel's whole
// run, which may end, sync included, before the world stops.
void Collector::drop_stale_launches() {
    launches_.erase(std::remove_if(launches_.begin(), launches_.end(),
                                   [](const LaunchRecord &l) {
                                       auto *ctx = static_cast<Context *>(const_cast<void *>(l.ctx));
                                       return ctx->unsynced_calls.load(std::memory_order_acquire) == 0 &&
                                              ctx->synced_calls.load(std::memory_order_acquire) >= l.call;
                                   }),
                    launches_.end());
}

void Collector::after_world_restarts(bool full) {
    for (const Range &r : ready_) {
        bool release = r.hi - r.lo == 2;
        auto &table = release ? registry_.releases : registry_.finalizers;
        auto it = table.find(r.lo);
        if (it == table.end()) continue;
        due_calls_.emplace_back(r.lo, it->second);
        if (release) {
            due_frees_.push_back(r.lo);
            releasing_.insert(r.lo);
        }
        if (runs_now(it->second)) calls_due_.store(true, std::memory_order_release);
        else notify_due_.store(true, std::memory_order_relaxed);
        table.erase(it);
    }
    for (const Range &r : dropped_) registry_.weak.erase(r.lo);
    for (const Range &r : links_) {
        void *zero = nullptr;
        Status st = manager_.program_write(reinterpret_cast<void *>(r.lo), &zero, sizeof zero, nullptr, false);
        if (st == adsmSuccess) {
            registry_.weak.erase(r.lo);
            stats_.weak_cleared.fetch_add(1, std::memory_order_relaxed);
        }  // else a kernel holds the link: the next collection tries again
    }
    forget_dead_arenas();
    // No marker reads them now.
    dead_chunks_.insert(dead_chunks_.end(), freed_while_marking_.begin(), freed_while_marking_.end());
    freed_while_marking_.clear();
    heap_.rebuild_lists();
    // Empty chunks stay for what the program allocates before the next
    // collection (as due() counts it): given back and made again, each of
    // their pages would fault in afresh every cycle.  After minor
    // collections the heap also held their old garbage: a full one keeps
    // room for as much again, for the cycle of minor ones that follows.
    uint64_t grown = static_cast<uint64_t>(config_.growth * static_cast<double>(live_bytes_));
    uint64_t keep = grown > config_.trigger ? grown : config_.trigger;
    if (full && since_full_ > 0 && cycle_peak_ > live_bytes_ + keep) keep = cycle_peak_ - live_bytes_;
    if (full) cycle_peak_ = 0;
    heap_.release_chunks(dead_chunks_, keep);
    dead_chunks_.clear();
}

}  // namespace adsm::gc
