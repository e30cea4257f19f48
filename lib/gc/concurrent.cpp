// A full collection that marks while the world runs (mostly-concurrent
// marking, after Boehm, Demers and Shenker's mostly-parallel collector).
//
// A short stop takes the allocated objects (snapshot_live), clears every
// mark, arms the write tracker over the pages that hold objects with
// pointers, and scans the roots: stacks, registers and launch records
// exist only while the world is stopped.  The marker threads then trace
// the heap from what the roots reached, the program running.  A collection
// is due as soon as they are done; it finishes the full one, the world
// stopped again, as a minor one whose old objects are those the markers
// reached: pages written since the start are traced again (an object
// traced on a page nobody wrote since holds what it held then), so are the
// chunks a kernel may have written and those whose blocks were read from
// the device, objects allocated since are traced from the roots, and the
// sweep frees what no mark reached.
//
// When the usual point comes and the markers are not done (on two CPUs,
// two allocating threads leave them a third of the machine), a thread that
// allocates helps them, the world running, instead of the pause finishing
// their work: mttrees' finishing pauses marked the whole heap (2.5 to 2.9
// ms) when they fell behind.  Only at twice that point does the pause
// finish what is left.
//
// Objects that died while the markers ran are freed by the next full
// collection.  Objects with a layout are marked but scanned only in the
// finishing pause (their scan functions may read memory the program frees
// meanwhile).  Kernel heaps are not adopted, and emptied arenas and huge
// chunks not freed, while the markers run: they read them.

#include <sched.h>

#include "backend/device.h"
#include "gc/collector.h"
#include "gc/page_runs.h"
#include "gc/roots.h"
#include "os/clock.h"
#include "os/uffd.h"
#include "support/log.h"

namespace adsm::gc {

// From the allocation paths, with the heap's lock held: the collection due
// next is full and a quarter of what it waits for has been allocated.  (At
// half, mttrees' markers had often not finished when it came due, and the
// pause finished their work.)
void Collector::maybe_start_concurrent() {
    if (marking_ || collecting_ || !config_.concurrent || !config_.automatic || config_.markers < 2 || disabled())
        return;
    if (heap_.handed_out < due_bytes() / 4) return;
    if (!need_full_ && since_full_ + 1 < config_.full_every && live_bytes_ <= 2 * live_at_full_) return;
    if (!generational()) return;
    (void)start_concurrent();
}

// Arms the write tracker over chunk c's runs of pages holding objects with
// pointers: what is written there from now on is traced again when the
// collection finishes.  (A page left unarmed reads as written.)
void Collector::arm_live(Chunk &c) {
    os::UffdTracker *t = config_.writes;
    auto live = [](const Page &p) {
        if (!p.pointers || (p.kind != PageKind::small && p.kind != PageKind::large)) return false;
        for (unsigned w = 0; w < kMaskWords; ++w)
            if (p.live[w]) return true;
        return false;
    };
    auto arm = [&](uintptr_t lo, uintptr_t hi) {
        // (A failure logs the range as written: traced again, no more.)
        t->collect(lo, hi - lo, [](void *, uintptr_t, size_t) {}, nullptr, os::UffdTracker::kCollector);
    };
    for_each_page_run(c, 0, live, arm);
}

bool Collector::start_concurrent() {
    if (start_markers() != adsmSuccess || markers_.size() < 2) return false;
    collecting_ = true;
    gather_roots();
    take_device_copies();
    // Its pause has the world-stop events of a collection's (bdwgc programs
    // time their pauses by them), not the collection's own start and end.
    event(Event::stop_world);
    uint64_t t1 = os::now_ns();
    if (Status s = world_.stop(marker_tids_.data() + 1, marker_tids_.size() - 1); s != adsmSuccess) {
        ADSM_LOG(warn, "collector: could not stop the world (%s); the full collection will not be concurrent",
                 last_detail());
        collecting_ = false;
        return false;
    }
    event(Event::world_stopped);
    // Without every thread's stack, or with a thread stopped inside the
    // tracker (pages it took may be in no log yet), the finishing
    // collection could not trust what the markers found: no start.
    bool ok = world_.thread_ranges(&threads_) == adsmSuccess && world_.keep_mapped(&roots_) == adsmSuccess &&
              !config_.writes->collecting();
    if (ok) {
        pool_.reset();
        for (auto &m : markers_) m->reset();
        snapshot_live(true);
        kernel_heaps_.begin_marking(true);
        for (Chunk *c : heap_.chunks()) {
            c->note_kernel_calls();
            c->device_at_start = c->block_size || c->all_on_device;
            arm_live(*c);
        }
        Marker &m = *markers_[1];
        mark_roots(m);
        m.scan_pushed();
        mark_kernel_reachable(m);
        for (size_t i = 1; i < markers_.size(); ++i) markers_[i]->set_concurrent(true);
        need_full_ = false;  // the marks are this collection's from now on
        marking_ = true;
    }
    event(Event::restart_world);
    world_.start();
    event(Event::world_restarted);
    note_pause(os::now_ns() - t1, true);
    if (ok) {
        // Only now: the threads leaving their stop get the CPUs first (a
        // marker already running took one of two from them, and restarts
        // that waited for every thread took 3 ms).
        mark_in_background();
        stats_.concurrent.fetch_add(1, std::memory_order_relaxed);
        event(Event::marking_concurrently);
        ADSM_LOG(debug, "collector: full collection %llu marks while the program runs; its first pause %.3f ms",
                 static_cast<unsigned long long>(stats_.collections.load() + 1),
                 static_cast<double>(os::now_ns() - t1) / 1e6);
    }
    collecting_ = false;
    return ok;
}

// A concurrent collection whose markers have finished is due at once:
// what its finishing pause traces (objects allocated since it started,
// pages written since) grows with every byte allocated meanwhile.  Left
// until the usual point, mttrees' finishing pauses marked twice what its
// minor ones did (2 to 2.5 ms against 1 to 1.3).
bool Collector::concurrent_marking_done() const {
    return marking_ && markers_done_.load(std::memory_order_acquire) + 1 >= markers_.size() &&
           !assisting_.load(std::memory_order_acquire);
}

// The heap's lock held: whether the calling thread should help the markers
// once it has released it (assist_if_asked), and if so, it is the one.
bool Collector::take_assist() {
    if (!marking_ || concurrent_marking_done() || heap_.handed_out < due_bytes()) return false;
    return !assisting_.exchange(true, std::memory_order_acq_rel);
}

// After an allocation that took the assist, its lock released: marks with
// marker 0 (the collecting thread's, idle while the world runs) until
// nothing is left to take or a collection stops the markers, the program's
// other threads allocating meanwhile.
void Collector::assist_if_asked() {
    ThreadCache *tc = tls_cache;
    if (!tc || !tc->assist) return;
    tc->assist = false;
    Marker &m = *markers_[0];
    m.set_concurrent(true);
    uint64_t before = m.marked_bytes;
    m.drain(true);
    if (m.marked_bytes != before) {
        stats_.assists.fetch_add(1, std::memory_order_relaxed);
        stats_.assisted_bytes.fetch_add(m.marked_bytes - before, std::memory_order_relaxed);
    }
    assisting_.store(false, std::memory_order_release);
}

// Stops the markers where they are (what they have not scanned stays on
// their stacks, for the finishing collection) and waits for them.
void Collector::end_concurrent_marking() {
    if (!marking_) return;
    pool_.stop();
    wait_for_markers();
    // An assist this thread took and has not begun (its allocation ran out
    // of heap and collects first) would be waited for forever; another
    // thread's helper leaves at its next range.
    if (ThreadCache *tc = tls_cache; tc && tc->assist) {
        tc->assist = false;
        assisting_.store(false, std::memory_order_release);
    }
    while (assisting_.load(std::memory_order_acquire)) sched_yield();
    marking_ = false;
    for (size_t i = 0; i < markers_.size(); ++i) {
        markers_[i]->set_concurrent(false);
        markers_[i]->resume_deferred();
    }
    RangeBuffer rest;
    pool_.take_rest(rest);
    markers_[0]->take_stack(rest);
}

void Collector::forget_dead_arenas() {
    if (!marking_) kernel_heaps_.reap();
}

void Collector::release_huge(Chunk *c) {
    if (marking_) freed_while_marking_.push_back(c);
    else heap_.release_chunks({c}, UINT64_MAX);
}

}  // namespace adsm::gc
