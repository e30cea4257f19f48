// Fetching ahead what the read prediction expects the CPU to read: at an
// acquire, predicted blocks start coming in the background (kIncoming);
// each one, as it lands, opens or waits closed (kLanded) for the CPU's
// touch.  Whoever needs a block still coming waits for its copy.
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "backend/device.h"
#include "os/clock.h"
#include "os/invariant.h"
#include "protocols/block_protocol.h"
#include "support/stats.h"

namespace adsm {

using namespace block;

void BlockProtocol::wait_incoming(SharedObject &r, uint32_t k) {
    ADSM_HOLDS(r.lock);
    // First the copy of the run that holds k, where the ring has one: most
    // often its landing opens k, and the wait ends well before the later
    // runs' copies.  (An entry is a hint: a stale one ends the wait early,
    // and the wait for every prefetch below settles what remains.)
    if (const SharedObject::IncomingRun *own = r.incoming_run(k)) {
        const uint64_t t = own->ticket;
        Device *device = r.device;
        r.lock.unlock();
        (void)device->wait_copies(t);
        r.lock.lock();
        land_handed_off(r);
        if (!r.blocks || !(r.blocks[k] & kIncoming)) return;
    }
    // A run being submitted has no ticket yet: the wait below would end
    // before its copy, which then writes the host copy under whatever the
    // CPU wrote there meanwhile.
    while (r.prefetches_unticketed.load(std::memory_order_acquire)) {
        r.lock.unlock();
        sched_yield();
        r.lock.lock();
        if (!r.blocks) return;
    }
    uint64_t t = r.prefetch_ticket.load(std::memory_order_acquire);
    Device *device = r.device;  // the prefetch's (a migration waits for it before changing it)
    r.lock.unlock();
    // Its landing opens the block (or leaves it landed) under this lock.
    // A failure shows below as a landing that never ran.
    (void)device->wait_copies(t);
    r.lock.lock();
    land_handed_off(r);
    // A run submitted meanwhile (ticketed or not yet) is still coming: its
    // blocks must stay incoming, or one could open before the copy lands
    // over what the CPU writes there.  The caller waits again.  (No run is
    // marked while the lock is held, and a submitter raises the ticket
    // before it stops counting as unticketed: read in this order, the two
    // miss no run.)
    if (!r.blocks || !(r.blocks[k] & kIncoming) || r.prefetches_unticketed.load(std::memory_order_acquire) ||
        r.prefetch_ticket.load(std::memory_order_acquire) != t)
        return;
    // Every copy up to t has ended and landed, yet the block is still
    // marked (no landing should leave it so): it stays Invalid for a fetch
    // of its own.
    for (uint32_t i = 0; i < r.nblocks; ++i) r.blocks[i] &= static_cast<uint8_t>(~kIncoming);
}

void BlockProtocol::lock_settled(SharedObject &r, uint32_t first, uint32_t last) {
    r.lock.lock();
    for (uint32_t k = first; r.blocks && k < last;) {
        if (r.blocks[k] & kIncoming) {
            wait_incoming(r, k);
            k = first;  // anything may have changed while unlocked
        } else {
            ++k;
        }
    }
}

Status BlockProtocol::acquire(ReleaseGroup &c) {
    // (Read-mostly objects were released read-only.)
    for (SharedObject *r = c.objects; r; r = r->next) r->kernel_reads.store(false, std::memory_order_release);
    if (!reads_->predicts()) return adsmSuccess;
    // A prefetch that cannot start costs a fault later, nothing more.
    for (SharedObject *r = c.objects; r; r = r->next) (void)prefetch(*r);
    return adsmSuccess;
}

PrefetchRun *BlockProtocol::take_run() {
    for (unsigned tries = 0; tries < kRuns; ++tries) {
        PrefetchRun &run = runs_[next_run_.fetch_add(1, std::memory_order_relaxed) % kRuns];
        bool idle = false;
        if (run.busy.compare_exchange_strong(idle, true, std::memory_order_acquire)) return &run;
    }
    return nullptr;
}

template <class NextRun>
void BlockProtocol::prefetch_runs(SharedObject &r, NextRun &&next_run, uint32_t *stopped) {
    constexpr unsigned kBatch = 16;
    for (uint32_t from = 0;;) {
        PrefetchRun *batch[kBatch];
        unsigned n = 0;
        bool starved = false;
        {
            os::FutexGuard g(r.lock);
            land_handed_off(r);  // (their runs are free again)
            if (!r.blocks) {
                *stopped = from;
                return;
            }
            uint32_t first, last;
            bool open;
            while (n < kBatch && next_run(from, &first, &last, &open)) {
                PrefetchRun *run = take_run();
                if (!run) {
                    starved = true;
                    from = first;
                    break;
                }
                for (uint32_t k = first; k < last; ++k) r.blocks[k] |= kIncoming;
                r.prefetches_unticketed.fetch_add(1, std::memory_order_relaxed);
                run->protocol = this;
                run->region = &r;
                run->id = r.id;
                run->generation = r.generation;
                run->first = first;
                run->last = last;
                run->open = open;
                batch[n++] = run;
                from = last;
            }
        }
        SharedObject::IncomingRun submitted[kBatch];
        for (unsigned i = 0; i < n; ++i) {
            PrefetchRun *run = batch[i];
            // (Once submitted, the run may land and be taken for another.)
            submitted[i].first = run->first;
            submitted[i].last = run->last;
            size_t b = r.block_begin(run->first), e = r.block_data_end(run->last - 1);
            stats().add(Counter::prefetched_blocks, run->last - run->first);
            r.stats.moved(false, e - b);
            // (A run past the object's bytes, in the rest of its span, has
            // nothing to copy: it lands at once.)
            uint64_t t = 0;
            if (e > b) t = r.device->copy_to_host_async(r.alias + b, r.dev + b, e - b, &BlockProtocol::prefetched, run);
            else prefetched(run, adsmSuccess);
            submitted[i].ticket = t;
            for (uint64_t seen = r.prefetch_ticket.load(std::memory_order_relaxed);
                 t > seen && !r.prefetch_ticket.compare_exchange_weak(seen, t, std::memory_order_release);) {
            }
            r.prefetches_unticketed.fetch_sub(1, std::memory_order_release);
        }
        if (n) {
            // (After they stop counting as unticketed: a holder of the lock
            // may be waiting for that.)
            os::FutexGuard g(r.lock);
            for (unsigned i = 0; i < n; ++i)
                if (submitted[i].ticket) r.incoming_runs[r.incoming_next++ % SharedObject::kIncomingRuns] = submitted[i];
        }
        if (n < kBatch || starved) {
            *stopped = starved ? from : UINT32_MAX;
            return;
        }
    }
}

// Starts fetching the blocks the CPU is expected to read; they land (and
// open, or wait closed to be confirmed) while the CPU goes on.  No heap:
// an acquire can run in the fault handler.
Status BlockProtocol::prefetch(SharedObject &r) {
    uint32_t stopped;
    // (A prefetch that cannot start costs a fault later.)
    prefetch_runs(
        r,
        [&](uint32_t from, uint32_t *first, uint32_t *last, bool *open) {
            *open = false;
            return reads_->next_run(r, from, first, last);
        },
        &stopped);
    return adsmSuccess;
}

Status BlockProtocol::prefetch_range(SharedObject &r, size_t off, size_t len) {
    if (len == 0) return adsmSuccess;
    const uint32_t lo = r.block_of(off), hi = r.block_of(off + len - 1) + 1;
    {
        // Blocks an earlier prefetch filled open now, with no copy.
        os::FutexGuard g(r.lock);
        for (uint32_t k = lo; r.blocks && k < hi; ++k) {
            if (r.state(k) != kInvalid || !(r.blocks[k] & kLanded)) continue;
            r.blocks[k] &= static_cast<uint8_t>(~kLanded);
            bool unused;
            if (Status s = open_block(r, k, false, &unused); s != adsmSuccess) return s;
        }
    }
    uint32_t stopped;
    prefetch_runs(
        r,
        [&](uint32_t from, uint32_t *first, uint32_t *last, bool *open) {
            *open = true;
            return next_missing_run(r, from, lo, hi, first, last);
        },
        &stopped);
    if (stopped >= hi) return adsmSuccess;
    // No free run for the rest (a thousand prefetches in flight): it comes
    // in now.
    const size_t rest = std::max(off, r.block_begin(std::max(stopped, lo)));
    return fetch_range(r, rest, off + len - rest);
}

bool BlockProtocol::next_missing_run(const SharedObject &r, uint32_t from, uint32_t lo, uint32_t hi, uint32_t *first,
                                     uint32_t *last) {
    auto missing = [&](uint32_t k) { return r.state(k) == kInvalid && !(r.blocks[k] & (kIncoming | kLanded)); };
    uint32_t k = std::max(from, lo);
    while (k < hi && !missing(k)) ++k;
    if (k >= hi) return false;
    uint32_t j = k + 1;
    while (j < hi && missing(j)) ++j;
    *first = k;
    *last = j;
    return true;
}

bool BlockProtocol::plan_ahead(SharedObject &r, uint32_t k, uint32_t *first, uint32_t *end) {
    ADSM_HOLDS(r.lock);
    // Not while a store's asynchronous copy into the device copy may be on
    // its way: a fetch could overtake it.  Nor where blocks cannot open
    // alone.  (Nor when ADSM_READ_AHEAD=0 turned it off.)
    const uint64_t bs = r.block_size;
    if (read_ahead_ == 0 || r.stores_ticket != 0 || r.coarse || bs == 0) return false;
    // (Blocks past the object's bytes, up to the end of its span, hold none.)
    const auto with_data = static_cast<uint32_t>(std::min<uint64_t>((r.size + bs - 1) / bs, r.nblocks));
    const auto most = static_cast<uint32_t>(std::min<uint64_t>(read_ahead_ / bs, with_data));
    const auto start = static_cast<uint32_t>(std::max<uint64_t>((uint64_t{1} << 20) / bs, 1));
    if (!plan_read_ahead(r.ahead, k, with_data, start, most, first, end)) return false;
    uint32_t marker_end;
    if (!next_missing_run(r, *first, *first, *end, first, &marker_end)) return false;
    r.ahead.marker = *first;
    return true;
}

void BlockProtocol::read_ahead(SharedObject &r, uint32_t first, uint32_t end) {
    // (Runs that cannot start now cost faults later, nothing more.)
    uint32_t stopped;
    stats().add(Counter::read_ahead_windows);
    // The marker lands closed; the rest in two runs, each opening as it
    // lands, so that the CPU reading the window waits for the half it
    // reaches.  (Three runs a window: the object's ring of tickets holds the
    // last two windows'.)
    const uint32_t piece = std::max<uint32_t>((end - first) / 2, 1);
    prefetch_runs(
        r,
        [&](uint32_t from, uint32_t *f, uint32_t *l, bool *open) {
            *open = from > first;
            if (!*open && next_missing_run(r, from, first, first + 1, f, l)) return true;
            *open = true;
            if (!next_missing_run(r, from, first + 1, end, f, l)) return false;
            *l = std::min(*l, *f + piece);
            return true;
        },
        &stopped);
}

// Once a prefetch has ended (on the copy engine's thread, or on the spot).
// Its lock may be held by a thread that waits for this very landing: one
// that submits a copy and waits for a free slot on the copy queue (rolling's
// background flush holds the victim's lock while it submits), or coarsen().
// After a short while the landing hands itself to the lock's next holder:
// the bytes are in the host copy already, and whoever next needs one of its
// blocks, or settles the object, opens them (land_handed_off).  Nothing is
// fetched twice, however long the lock stays taken.
void BlockProtocol::prefetched(void *arg, Status status) {
    auto *run = static_cast<PrefetchRun *>(arg);
    SharedObject &r = *run->region;
    bool locked = r.lock.try_lock();
    for (const uint64_t give_up = locked ? 0 : os::now_ns() + kLandingPatienceNs; !locked && os::now_ns() < give_up;) {
        sched_yield();
        locked = r.lock.try_lock();
    }
    if (!locked) {
        // (Published before the copy's ticket lands: a holder that waited
        // for the ticket finds it.  The run stays busy until landed.)
        run->handed_off_status = status;
        run->handed_off.store(true, std::memory_order_release);
        r.handed_off_runs.fetch_add(1, std::memory_order_release);
        stats().add(Counter::landings_handed_off);
        return;
    }
    {
        std::lock_guard<os::FutexLock> g(r.lock, std::adopt_lock);
        land(*run, status);
    }
    run->busy.store(false, std::memory_order_release);
}

void BlockProtocol::land(PrefetchRun &run, Status status) {
    SharedObject &r = *run.region;
    ADSM_HOLDS(r.lock);
    if (!r.blocks || !r.live.load() || r.id != run.id || r.generation != run.generation) return;
    for (uint32_t k = run.first; k < run.last; ++k) {
        if (!(r.blocks[k] & kIncoming)) continue;
        r.blocks[k] &= static_cast<uint8_t>(~kIncoming);
        // A failed prefetch leaves the block Invalid: a touch fetches it.
        if (status != adsmSuccess || r.state(k) != kInvalid) continue;
        // (Where the block cannot open by itself, the CPU's touch opens it.)
        // (Not while a fork's hold is on: an open block could take writes.)
        if ((run.open || run.protocol->reads_->open_on_landing(r, k)) && !r.writes_held) {
            if (!run.protocol->open_alone(r, k, false)) r.blocks[k] |= kLanded;
        } else {
            r.blocks[k] |= kLanded;
        }
    }
}

void BlockProtocol::land_handed_off(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    if (r.handed_off_runs.load(std::memory_order_acquire) == 0) return;
    // (Rare: a scan of the pool costs less than one copy of a block.)
    for (PrefetchRun &run : runs_) {
        if (!run.handed_off.load(std::memory_order_acquire) || run.region != &r) continue;
        run.handed_off.store(false, std::memory_order_relaxed);
        land(run, run.handed_off_status);
        r.handed_off_runs.fetch_sub(1, std::memory_order_relaxed);
        run.busy.store(false, std::memory_order_release);
    }
}

}  // namespace adsm
