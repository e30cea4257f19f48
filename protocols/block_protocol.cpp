#include "protocols/block_protocol.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "backend/device.h"
#include "os/clock.h"
#include "os/invariant.h"
#include "os/real_libc.h"
#include "os/uffd.h"
#include "os/vm.h"
#include "support/stats.h"

namespace adsm {
namespace {

using namespace block;

// A block the CPU read after a sync is fetched ahead at the next syncs.  Its
// confidence starts here and drops by one at each release; while it is at
// least kOpenAhead the prefetch also opens the block, so the CPU reads it
// without any fault.  Below that the block lands closed, and the CPU's
// touch (a cheap fault, nothing to copy) confirms the prediction and renews
// it, while an untouched landed block ends the prediction at once.  A block
// read every time thus faults once every three syncs, and a wrong guess
// costs at most three fetches.
constexpr uint8_t kConfidenceOnFault = 4;
constexpr uint8_t kOpenAhead = 2;

uint8_t confidence(uint8_t b) { return static_cast<uint8_t>((b & kConfidenceMask) >> kConfidenceShift); }
uint8_t with_confidence(uint8_t b, uint8_t c) {
    return static_cast<uint8_t>((b & ~kConfidenceMask) | (c << kConfidenceShift));
}

bool bit(const uint64_t *bits, size_t i) { return bits[i / 64] >> (i % 64) & 1; }
void set_bit(uint64_t *bits, size_t i) { bits[i / 64] |= uint64_t(1) << (i % 64); }

}  // namespace

BlockProtocol::BlockProtocol(const ProtocolEnv &env, BlockPolicy policy)
    : env_(env), policy_(policy), block_size_(env.config->block_size) {
    env_.device->start_copy_engine();
}

int BlockProtocol::prot_for(uint8_t state) const {
    switch (state) {
    case kInvalid: return PROT_NONE;
    case kReadOnly: return PROT_READ;
    default:
        // Page-precise tracking by faults opens a Dirty block's pages one by one.
        return page_faults() ? PROT_READ : PROT_READ | PROT_WRITE;
    }
}

Status BlockProtocol::protect(SharedObject &r, uint32_t first, uint32_t last, int prot) {
    size_t b = r.block_begin(first), e = r.block_end(last - 1);
    if (int e2 = os::protect(reinterpret_cast<void *>(r.host + b), e - b, prot); e2 != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of %zu bytes of shared memory at %p: %s", e - b,
                    reinterpret_cast<void *>(r.host + b), strerror(-e2));
    return adsmSuccess;
}

Status BlockProtocol::protect_page(SharedObject &r, size_t page, int prot) {
    void *at = reinterpret_cast<void *>(r.host + page * os::kPageSize);
    if (int e = os::protect(at, os::kPageSize, prot); e != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of the shared page at %p: %s", at, strerror(-e));
    return adsmSuccess;
}

Status BlockProtocol::fetch(SharedObject &r, uint32_t first, uint32_t last) {
    size_t b = r.block_begin(first), e = r.block_data_end(last - 1);
    if (e <= b) return adsmSuccess;
    r.stats.moved(false, e - b);
    return env_.device->copy_to_host(r.alias + b, r.dev + b, e - b);
}

// Sends [begin, end) of the host copy (clipped to the object) to the device.
Status BlockProtocol::copy_out(SharedObject &r, size_t begin, size_t end, bool async) {
    if (end > r.size) end = r.size;
    if (end <= begin) return adsmSuccess;
    r.stats.moved(true, end - begin);
    if (!async) return env_.device->copy_to_device(r.dev + begin, r.alias + begin, end - begin);
    env_.device->copy_to_device_async(r.dev + begin, r.alias + begin, end - begin, &BlockProtocol::flushed, &r);
    return adsmSuccess;
}

// A background flush ended.  A failed one leaves the device without data
// the block's state says it has: the next release sends the region's open
// blocks whole.  No lock here: this may run on the submitter's thread,
// which holds r.lock.
void BlockProtocol::flushed(void *arg, Status status) {
    if (status != adsmSuccess) static_cast<SharedObject *>(arg)->resend.store(true, std::memory_order_release);
}

Status BlockProtocol::on_alloc(SharedObject &r, bool zeroed) {
    size_t bs = policy_.whole_object || block_size_ > r.span ? r.span : block_size_;
    r.block_size = static_cast<uint32_t>(bs);
    r.nblocks = static_cast<uint32_t>((r.span + bs - 1) / bs);
    if (r.nblocks <= SharedObject::kInlineBlocks) {
        r.blocks = r.inline_blocks;
    } else {
        r.blocks = new (std::nothrow) uint8_t[r.nblocks];
        if (!r.blocks) return fail(adsmErrorMemoryAllocation, "no memory for a block table of %u blocks", r.nblocks);
    }
    if (page_faults()) {
        r.dirty_pages = new (std::nothrow) uint64_t[(r.span / os::kPageSize + 63) / 64]();
        if (!r.dirty_pages) return fail(adsmErrorMemoryAllocation, "no memory for a dirty-page map");
    }
    // Fresh memory: both copies hold the same nothing, so nothing needs
    // moving until the CPU writes.
    uint8_t initial = silent_writes() ? kDirty : kReadOnly;
    memset(r.blocks, initial, r.nblocks);
    if (env_.tracker) {
        if (int e = env_.tracker->arm(r.host, r.span))
            return fail(adsmErrorInitialization, "userfaultfd write-protect of %zu bytes: %s", r.span, strerror(e));
    }
    if (zeroed) env_.device->fill(r.dev, 0, r.size);
    return set_access(r.host, r.span, prot_for(initial));
}

void BlockProtocol::on_free(SharedObject &r) {
    // No background copy may touch the range once it can be reused; what
    // they did no longer matters.
    (void)env_.device->wait_copies(Device::kAllCopies);
    os::FutexGuard g(r.lock);
    if (r.blocks != r.inline_blocks) delete[] r.blocks;
    delete[] r.dirty_pages;
    r.blocks = nullptr;
    r.dirty_pages = nullptr;
}

void BlockProtocol::wait_incoming(SharedObject &r, uint32_t k) {
    ADSM_HOLDS(r.lock);
    uint64_t t = r.prefetch_ticket;
    r.lock.unlock();
    // Its landing opens the block (or leaves it landed) under this lock.
    // A failure shows below as a landing that never ran.
    (void)env_.device->wait_copies(t);
    r.lock.lock();
    if (!r.blocks || !(r.blocks[k] & kIncoming) || r.prefetch_ticket != t) return;
    // Every copy up to t has ended and this one's landing never ran: the
    // copy failed, and the block stays Invalid for a fetch of its own.
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

Status BlockProtocol::coarsen(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    // Every block's data goes into the host copy first, then the whole
    // region opens in one protection change, which needs no new mapping.
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        if (r.state(k) != kInvalid) continue;
        if (!(r.blocks[k] & kLanded))
            if (Status s = fetch(r, k, k + 1); s != adsmSuccess) return s;
    }
    if (Status s = protect(r, 0, r.nblocks, PROT_READ | PROT_WRITE); s != adsmSuccess) return s;
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        // A prefetch still under way writes the bytes the fetch just did.
        r.blocks[k] &= static_cast<uint8_t>(~(kIncoming | kLanded));
        r.set_state(k, kDirty);
        r.blocks[k] |= kForced;  // writes go unseen now: the block goes whole
    }
    if (!r.coarse) {
        r.coarse = true;
        stats().add(Counter::coarsened_regions);
    }
    return adsmSuccess;
}

// Makes an Invalid block valid after its fill.  Caller holds r.lock.
Status BlockProtocol::open_block(SharedObject &r, uint32_t k, bool write, bool *newly_dirty) {
    ADSM_HOLDS(r.lock);
    ADSM_INVARIANT(r.state(k) == kInvalid, "only an Invalid block opens");
    if (r.coarse) return coarsen(r);
    uint8_t s = silent_writes() || write ? kDirty : kReadOnly;
    if (protect(r, k, k + 1, prot_for(s)) != adsmSuccess) return coarsen(r);
    r.set_state(k, s);
    *newly_dirty = s == kDirty && policy_.write_events;
    return adsmSuccess;
}

Status BlockProtocol::dirty_block(SharedObject &r, uint32_t k, bool *newly_dirty) {
    ADSM_HOLDS(r.lock);
    ADSM_INVARIANT(r.state(k) == kReadOnly, "only a ReadOnly block turns Dirty");
    if (r.coarse || protect(r, k, k + 1, prot_for(kDirty)) != adsmSuccess) return coarsen(r);
    r.set_state(k, kDirty);
    *newly_dirty = policy_.write_events;
    return adsmSuccess;
}

Protocol::FaultOutcome BlockProtocol::on_fault(SharedObject &r, uintptr_t addr, bool write) {
    size_t off = addr - r.host;
    r.lock.lock();
    if (!r.blocks || !r.live.load(std::memory_order_acquire)) {
        r.lock.unlock();
        return FaultOutcome::not_mine;  // freed under our feet
    }
    uint32_t k = r.block_of(off);
    while (r.blocks && (r.blocks[k] & kIncoming)) wait_incoming(r, k);
    if (!r.blocks || !r.live.load(std::memory_order_acquire)) {
        r.lock.unlock();
        return FaultOutcome::not_mine;
    }
    bool newly_dirty = false;
    Status result = adsmSuccess;
    uint8_t st = r.state(k);
    size_t page = off / os::kPageSize;
    if (st == kInvalid) {
        bool landed = r.blocks[k] & kLanded;
        if (!landed) result = fetch(r, k, k + 1);
        if (result == adsmSuccess) {
            r.blocks[k] &= static_cast<uint8_t>(~kLanded);  // prefetched: a hit
            // Reads teach the prefetcher; a write would have faulted anyway.
            if (policy_.learn_reads && !write) r.blocks[k] = with_confidence(r.blocks[k], kConfidenceOnFault);
            result = open_block(r, k, write, &newly_dirty);
        }
        if (result == adsmSuccess && write && page_faults() && !r.coarse) {
            if (protect_page(r, page, PROT_READ | PROT_WRITE) != adsmSuccess) {
                // Pages cannot open one by one: the block goes whole.
                r.blocks[k] |= kForced;
                if (protect(r, k, k + 1, PROT_READ | PROT_WRITE) != adsmSuccess) result = coarsen(r);
            }
            set_bit(r.dirty_pages, page);
        }
        (write ? r.stats.write_faults : r.stats.read_faults).fetch_add(1, std::memory_order_relaxed);
        stats().add(write ? Counter::write_faults : Counter::read_faults);
    } else if (write && page_faults() && !r.coarse && !bit(r.dirty_pages, page)) {
        if (st == kDirty) {
            // A second page of the block: stop paying a fault per page and
            // send the block whole.
            r.blocks[k] |= kForced;
            if (protect(r, k, k + 1, PROT_READ | PROT_WRITE) != adsmSuccess) result = coarsen(r);
        } else if (protect_page(r, page, PROT_READ | PROT_WRITE) == adsmSuccess) {
            r.set_state(k, kDirty);
        } else {
            r.blocks[k] |= kForced;
            result = dirty_block(r, k, &newly_dirty);
            newly_dirty = false;  // page-precise protocols keep no dirty list
        }
        set_bit(r.dirty_pages, page);
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else if (write && st == kReadOnly) {
        result = dirty_block(r, k, &newly_dirty);
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else {
        // Another thread resolved it first; make sure the protection agrees.
        if (r.coarse) result = protect(r, 0, r.nblocks, PROT_READ | PROT_WRITE);
        else if (page_faults() && st == kDirty && (r.blocks[k] & kForced))
            result = protect(r, k, k + 1, PROT_READ | PROT_WRITE);
        else if (page_faults() && st == kDirty && bit(r.dirty_pages, page))
            result = protect_page(r, page, PROT_READ | PROT_WRITE);
        else result = protect(r, k, k + 1, prot_for(st));
        if (result != adsmSuccess) result = coarsen(r);
    }
    r.lock.unlock();
    if (result != adsmSuccess) return FaultOutcome::failed;
    if (newly_dirty) dirtied(r, k);
    return FaultOutcome::retry;
}

Status BlockProtocol::read_out(SharedObject &r, size_t off, void *dst, size_t len, uint64_t *ticket) {
    if (len == 0) return adsmSuccess;
    uint32_t first = r.block_of(off), last = r.block_of(off + len - 1) + 1;
    lock_settled(r, first, last);
    Status result = adsmSuccess;
    auto *out = static_cast<uint8_t *>(dst);
    for (uint32_t k = first; k < last && result == adsmSuccess;) {
        // Runs of blocks whose current copy is in the same place move together.
        bool on_device = r.state(k) == kInvalid && !(r.blocks[k] & kLanded);
        uint32_t j = k + 1;
        while (j < last && (r.state(j) == kInvalid && !(r.blocks[j] & kLanded)) == on_device) ++j;
        size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(j - 1));
        if (on_device) {
            r.stats.moved(false, e - b);
            if (ticket) {
                uint64_t t = env_.device->copy_to_host_async(out + (b - off), r.dev + b, e - b, nullptr, nullptr);
                if (t > *ticket) *ticket = t;
                // A copy done (and failed) on the spot is reported at once.
                if (t == 0) result = env_.device->wait_copies(0);
            } else {
                result = env_.device->copy_to_host(out + (b - off), r.dev + b, e - b);
            }
        } else {
            os::real_memcpy(out + (b - off), r.alias + b, e - b);
        }
        k = j;
    }
    r.lock.unlock();
    return result;
}

template <class HostPut, class DevicePut>
Status BlockProtocol::store(SharedObject &r, size_t off, size_t len, HostPut &&host, DevicePut &&device) {
    if (len == 0) return adsmSuccess;
    uint32_t first = r.block_of(off), last = r.block_of(off + len - 1) + 1;
    lock_settled(r, first, last);
    uint32_t dirtied_now[8];
    unsigned ndirtied = 0;
    std::vector<uint32_t> more;
    Status result = adsmSuccess;
    auto covered = [&](uint32_t k) { return off <= r.block_begin(k) && off + len >= r.block_data_end(k); };
    auto closed = [&](uint32_t k) { return r.state(k) == kInvalid && !(r.blocks[k] & kLanded); };
    // Both copies of the block are current, or what is written to the host
    // copy is found page by page at the release anyway: a block overwritten
    // whole can take the bytes on both sides and stay as it is, instead of
    // being sent whole at the release.  (A block dirty as a whole is sent
    // whole at the release regardless, so it takes them on the host only.)
    auto both_sides = [&](uint32_t k) {
        return r.state(k) == kReadOnly || (r.state(k) == kDirty && (env_.tracker || page_faults()));
    };
    // Stops at the first failure: what was stored before it is stored, and
    // nothing after it is touched.
    for (uint32_t k = first; k < last && result == adsmSuccess;) {
        if (covered(k) && both_sides(k)) {
            uint32_t j = k + 1;
            while (j < last && covered(j) && both_sides(j)) ++j;
            size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(j - 1));
            host(b, e);
            r.stats.moved(true, e - b);
            if (Status s = device(b, e); s != adsmSuccess) {
                // The host copy has the bytes and the device may not: the
                // blocks go whole at the release.
                result = s;
                for (uint32_t i = k; i < j; ++i) {
                    bool unused;
                    if (r.state(i) == kReadOnly && dirty_block(r, i, &unused) != adsmSuccess) break;
                    r.blocks[i] |= kForced;
                }
            }
            k = j;
            continue;
        }
        if (closed(k) && covered(k)) {
            // Whole closed blocks: the device gets the bytes, the host copy
            // stays closed and nothing is fetched.
            uint32_t j = k + 1;
            while (j < last && closed(j) && covered(j)) ++j;
            size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(j - 1));
            r.stats.moved(true, e - b);
            result = device(b, e);
            k = j;
            continue;
        }
        bool newly_dirty = false;
        if (r.state(k) == kInvalid) {
            if (!(r.blocks[k] & kLanded)) result = fetch(r, k, k + 1);
            if (result != adsmSuccess) break;  // never write into a block whose data is not there
            r.blocks[k] &= static_cast<uint8_t>(~kLanded);
            result = open_block(r, k, true, &newly_dirty);
        } else if (r.state(k) != kDirty) {
            result = dirty_block(r, k, &newly_dirty);
        }
        if (result != adsmSuccess) break;
        // Alias writes are invisible to every tracker: send the block whole.
        r.blocks[k] |= kForced;
        size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(k));
        host(b, e);
        if (newly_dirty) {
            if (ndirtied < 8) dirtied_now[ndirtied++] = k;
            else more.push_back(k);
        }
        ++k;
    }
    r.lock.unlock();
    for (unsigned i = 0; i < ndirtied; ++i) dirtied(r, dirtied_now[i]);
    for (uint32_t k : more) dirtied(r, k);
    return result;
}

Status BlockProtocol::write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket) {
    auto *in = static_cast<const uint8_t *>(src);
    return store(
        r, off, len, [&](size_t b, size_t e) { os::real_memcpy(r.alias + b, in + (b - off), e - b); },
        [&](size_t b, size_t e) {
            if (!ticket) return env_.device->copy_to_device(r.dev + b, in + (b - off), e - b);
            uint64_t t = env_.device->copy_to_device_async(r.dev + b, in + (b - off), e - b, nullptr, nullptr);
            if (t > *ticket) *ticket = t;
            return t == 0 ? env_.device->wait_copies(0) : adsmSuccess;
        });
}

Status BlockProtocol::fill(SharedObject &r, size_t off, int value, size_t len) {
    return store(
        r, off, len, [&](size_t b, size_t e) { os::real_memset(r.alias + b, value, e - b); },
        [&](size_t b, size_t e) { return env_.device->fill(r.dev + b, value, e - b); });
}

namespace {
struct CollectArgs {
    SharedObject *r;
    bool page_precise;
    std::vector<std::pair<size_t, size_t>> *runs;  // page-precise: byte ranges to send
};
}  // namespace

// Blocks [first, last) keep their host copy as the current one after a copy
// of them failed: Dirty, sent whole at the next release, open again.
void BlockProtocol::keep_open(SharedObject &r, uint32_t first, uint32_t last) {
    for (uint32_t k = first; k < last; ++k) {
        r.set_state(k, kDirty);
        r.blocks[k] |= kForced;
    }
    // If even that fails, the closed Dirty blocks reopen at their next
    // fault (the fault path makes protection agree with the state).
    (void)protect(r, first, last, PROT_READ | PROT_WRITE);
}

// Flushes what the device lacks and closes every block.  Caller holds
// r.lock.  On failure, blocks whose data did not reach the device stay Dirty
// and open, so nothing current is lost.
Status BlockProtocol::flush_region(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    if (!r.blocks) return adsmSuccess;
    bool any_open = false;
    for (uint32_t k = 0; k < r.nblocks && !any_open; ++k) any_open = r.state(k) != kInvalid;
    if (!any_open) {
        if (policy_.learn_reads) age_predictions(r);
        return adsmSuccess;
    }
    // Close first: from here on no CPU write can slip in behind the copy.
    if (Status s = protect(r, 0, r.nblocks, PROT_NONE); s != adsmSuccess) return s;
    if (r.resend.exchange(false, std::memory_order_acq_rel)) {
        for (uint32_t k = 0; k < r.nblocks; ++k)
            if (r.state(k) != kInvalid) r.blocks[k] |= kForced;
    }

    // Find what was written (timed apart from the copies: it is the
    // tracker's cost), then send it.
    std::vector<std::pair<size_t, size_t>> runs;  // page-precise byte ranges
    uint64_t t0 = os::now_ns();
    if (env_.tracker) {
        CollectArgs a{&r, policy_.page_precise, &runs};
        int e = env_.tracker->collect(
            r.host, r.span,
            [](void *p, uintptr_t start, size_t len) {
                auto *a = static_cast<CollectArgs *>(p);
                size_t b = start - a->r->host, e = b + len;
                if (a->page_precise) {
                    a->runs->emplace_back(b, e);
                } else {
                    for (uint32_t k = a->r->block_of(b); k <= a->r->block_of(e - 1); ++k) a->r->blocks[k] |= kForced;
                }
            },
            &a);
        if (e != 0) {
            // Which pages were written is unknown: every open block goes whole.
            for (uint32_t k = 0; k < r.nblocks; ++k)
                if (r.state(k) != kInvalid) r.blocks[k] |= kForced;
        }
    } else if (page_faults()) {
        size_t pages = r.span / os::kPageSize;
        for (size_t p = 0; p < pages;) {
            if (!bit(r.dirty_pages, p)) {
                ++p;
                continue;
            }
            size_t q = p;
            while (q < pages && bit(r.dirty_pages, q)) ++q;
            runs.emplace_back(p * os::kPageSize, q * os::kPageSize);
            p = q;
        }
        memset(r.dirty_pages, 0, (pages + 63) / 64 * sizeof(uint64_t));
    }
    stats().add(Counter::tracking_ns, os::now_ns() - t0);
    Status result = adsmSuccess;
    for (auto &[b, e] : runs) {
        // A block flushed whole below needs no page-wise copy.
        if ((r.blocks[r.block_of(b)] & kForced) && r.block_of(b) == r.block_of(e - 1)) continue;
        if (Status s = copy_out(r, b, e, false); s != adsmSuccess) {
            // The written pages of these blocks are known no more: they go whole.
            for (uint32_t k = r.block_of(b); k <= r.block_of(e - 1); ++k) r.blocks[k] |= kForced;
            if (result == adsmSuccess) result = s;
        }
    }

    // Whole blocks, adjacent ones in one transfer.
    auto whole = [&](uint32_t k) {
        return (r.blocks[k] & kForced) || (r.state(k) == kDirty && !env_.tracker && !policy_.page_precise);
    };
    std::vector<std::pair<uint32_t, uint32_t>> failed;
    for (uint32_t k = 0; k < r.nblocks;) {
        if (!whole(k)) {
            ++k;
            continue;
        }
        uint32_t j = k;
        while (j < r.nblocks && whole(j)) ++j;
        if (Status s = copy_out(r, r.block_begin(k), r.block_end(j - 1), false); s != adsmSuccess) {
            failed.emplace_back(k, j);
            if (result == adsmSuccess) result = s;
        }
        k = j;
    }
    if (result != adsmSuccess) {
        // What reached the device is current there; blocks whose copy
        // failed keep the host copy as the current one.
        for (uint32_t k = 0; k < r.nblocks; ++k) {
            r.blocks[k] &= static_cast<uint8_t>(~kForced);
            r.set_state(k, kInvalid);
        }
        for (auto &[f, l] : failed) keep_open(r, f, l);
        return result;
    }
    if (policy_.learn_reads) age_predictions(r);
    else memset(r.blocks, kInvalid, r.nblocks);
    return adsmSuccess;
}

// Every block becomes Invalid; a prediction weakens by one sync, and ends
// at once if its prefetch went unused.
void BlockProtocol::age_predictions(SharedObject &r) {
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        uint8_t c = confidence(r.blocks[k]);
        bool unused_prefetch = (r.blocks[k] & kLanded) != 0;
        r.blocks[k] = with_confidence(kInvalid, unused_prefetch || c == 0 ? 0 : static_cast<uint8_t>(c - 1));
    }
}

void BlockProtocol::flush_block_async(SharedObject &r, uint32_t k) {
    ADSM_HOLDS(r.lock);
    if (!r.blocks || r.state(k) != kDirty || r.coarse) return;
    size_t b = r.block_begin(k), e = r.block_end(k);
    // The block goes whole, so what the runtime wrote into it through the
    // alias (kForced) is on its way and need not go again at the release.
    // Every alias write happens in store() under r.lock, which the caller
    // holds, so none is half done; a later one sets kForced afresh, and the
    // release waits for this copy before sending anything.  A copy that
    // fails marks the region for a whole resend (flushed()).
    if (env_.tracker) {
        // The kernel says whether anything was written since the last flush
        // (and starts watching afresh); the block stays writable, and later
        // writes are found again at the release.
        bool written = r.blocks[k] & kForced;
        if (env_.tracker->collect(r.host + b, e - b, [](void *p, uintptr_t, size_t) { *static_cast<bool *>(p) = true; },
                                  &written) != 0)
            return;  // unknown: leave it for the release, which sends it whole
        if (written) copy_out(r, b, e, true);
        r.blocks[k] &= static_cast<uint8_t>(~kForced);
        return;
    }
    // Stop writers, then copy: a later write faults and dirties it again.
    // A block whose protection cannot change alone just stays Dirty.
    if (protect(r, k, k + 1, prot_for(kReadOnly)) != adsmSuccess) return;
    r.set_state(k, kReadOnly);
    copy_out(r, b, e, true);
    r.blocks[k] &= static_cast<uint8_t>(~kForced);
}

Status BlockProtocol::release(ReleaseGroup &c) {
    // Background copies of these blocks must land before the final ones; a
    // failed one has marked its region for a whole resend, done below.
    (void)env_.device->wait_copies(Device::kAllCopies);
    Status result = adsmSuccess;
    for (SharedObject *r = c.objects; r; r = r->next) {
        os::FutexGuard g(r->lock);
        // Every region is flushed even after a failure, so that a retried
        // call has as little left to send as possible.
        if (Status s = flush_region(*r); s != adsmSuccess && result == adsmSuccess) result = s;
    }
    released(c);
    return result;
}

Status BlockProtocol::acquire(ReleaseGroup &c) {
    if (!policy_.learn_reads) return adsmSuccess;
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

// Starts fetching the blocks the CPU is expected to read; they land (and
// open, or wait closed to be confirmed; see kOpenAhead) while the CPU goes
// on.  Runs are gathered a few at a time under the lock and submitted
// outside it (a copy done on the spot lands under that lock).  No heap: an
// acquire can run in the fault handler.
Status BlockProtocol::prefetch(SharedObject &r) {
    constexpr unsigned kBatch = 16;
    for (uint32_t from = 0;;) {
        PrefetchRun *batch[kBatch];
        unsigned n = 0;
        {
            os::FutexGuard g(r.lock);
            if (!r.blocks) return adsmSuccess;
            auto wanted = [&](uint32_t i) {
                return r.state(i) == kInvalid && !(r.blocks[i] & (kLanded | kIncoming)) && confidence(r.blocks[i]) > 0;
            };
            while (from < r.nblocks && n < kBatch) {
                if (!wanted(from)) {
                    ++from;
                    continue;
                }
                PrefetchRun *run = take_run();
                if (!run) break;
                uint32_t j = from;
                while (j < r.nblocks && wanted(j)) r.blocks[j++] |= kIncoming;
                run->protocol = this;
                run->region = &r;
                run->id = r.id;
                run->generation = r.generation;
                run->first = from;
                run->last = j;
                batch[n++] = run;
                from = j;
            }
        }
        for (unsigned i = 0; i < n; ++i) {
            PrefetchRun *run = batch[i];
            size_t b = r.block_begin(run->first), e = r.block_data_end(run->last - 1);
            stats().add(Counter::prefetched_blocks, run->last - run->first);
            r.stats.moved(false, e - b);
            uint64_t t = env_.device->copy_to_host_async(r.alias + b, r.dev + b, e - b, &BlockProtocol::prefetched, run);
            os::FutexGuard g(r.lock);
            if (t > r.prefetch_ticket) r.prefetch_ticket = t;
        }
        if (n < kBatch) return adsmSuccess;
    }
}

// Once a prefetch has ended (on the copy engine's thread, or on the spot).
void BlockProtocol::prefetched(void *arg, Status status) {
    auto *run = static_cast<PrefetchRun *>(arg);
    SharedObject &r = *run->region;
    {
        os::FutexGuard g(r.lock);
        if (r.blocks && r.live.load() && r.id == run->id && r.generation == run->generation) {
            for (uint32_t k = run->first; k < run->last; ++k) {
                if (!(r.blocks[k] & kIncoming)) continue;
                r.blocks[k] &= static_cast<uint8_t>(~kIncoming);
                // A failed prefetch leaves the block Invalid: a touch fetches it.
                if (status != adsmSuccess || r.state(k) != kInvalid) continue;
                if (confidence(r.blocks[k]) >= kOpenAhead) {
                    bool unused;
                    if (run->protocol->open_block(r, k, false, &unused) != adsmSuccess) r.blocks[k] |= kLanded;
                } else {
                    r.blocks[k] |= kLanded;
                }
            }
        }
    }
    run->busy.store(false, std::memory_order_release);
}

Status BlockProtocol::snapshot(const SharedObject &r, uint8_t *dst) {
    if (!r.blocks) return Protocol::snapshot(r, dst);
    Status result = adsmSuccess;
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        size_t b = r.block_begin(k), e = r.block_data_end(k);
        if (e <= b) continue;
        if (r.state(k) == kInvalid && !(r.blocks[k] & (kIncoming | kLanded))) {
            if (Status s = env_.device->copy_to_host(dst + b, r.dev + b, e - b); s != adsmSuccess && result == adsmSuccess)
                result = s;
        } else {
            os::real_memcpy(dst + b, r.alias + b, e - b);
        }
    }
    return result;
}

}  // namespace adsm
