#include "protocols/block_protocol.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "backend/device.h"
#include "memory/address_space.h"
#include "memory/context.h"
#include "os/clock.h"
#include "os/uffd.h"
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

struct PrefetchRun {
    BlockProtocol *protocol;
    Region *region;
    uint32_t id, generation, first, last;
};

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

void BlockProtocol::protect(Region &r, uint32_t first, uint32_t last, int prot) {
    size_t b = r.block_begin(first), e = r.block_end(last - 1);
    os::protect(reinterpret_cast<void *>(r.host + b), e - b, prot);
}

void BlockProtocol::protect_page(Region &r, size_t page, int prot) {
    os::protect(reinterpret_cast<void *>(r.host + page * os::kPageSize), os::kPageSize, prot);
}

Status BlockProtocol::fetch(Region &r, uint32_t first, uint32_t last) {
    size_t b = r.block_begin(first), e = r.block_data_end(last - 1);
    if (e <= b) return adsmSuccess;
    r.stats.moved(false, e - b);
    return env_.device->copy_to_host(r.alias + b, r.dev + b, e - b);
}

// Sends [begin, end) of the host copy (clipped to the object) to the device.
void BlockProtocol::copy_out(Region &r, size_t begin, size_t end, bool async) {
    if (end > r.size) end = r.size;
    if (end <= begin) return;
    r.stats.moved(true, end - begin);
    if (async) env_.device->copy_to_device_async(r.dev + begin, r.alias + begin, end - begin, nullptr, nullptr);
    else env_.device->copy_to_device(r.dev + begin, r.alias + begin, end - begin);
}

Status BlockProtocol::on_alloc(Region &r, bool zeroed) {
    size_t bs = policy_.whole_object || block_size_ > r.span ? r.span : block_size_;
    r.block_size = static_cast<uint32_t>(bs);
    r.nblocks = static_cast<uint32_t>((r.span + bs - 1) / bs);
    if (r.nblocks <= Region::kInlineBlocks) {
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
        if (Status s = env_.tracker->arm(r.host, r.span); s != adsmSuccess) return s;
    }
    if (zeroed) env_.device->fill(r.dev, 0, r.size);
    return env_.space->set_access(r.host, r.span, prot_for(initial));
}

void BlockProtocol::on_free(Region &r) {
    // No background copy may touch the range once it can be reused.
    env_.device->wait_copies(Device::kAllCopies);
    os::FutexGuard g(r.lock);
    if (r.blocks != r.inline_blocks) delete[] r.blocks;
    delete[] r.dirty_pages;
    r.blocks = nullptr;
    r.dirty_pages = nullptr;
}

// Takes r.lock once no block in [first, last) is being prefetched.
void BlockProtocol::lock_settled(Region &r, uint32_t first, uint32_t last) {
    for (;;) {
        r.lock.lock();
        if (!r.blocks) return;
        bool incoming = false;
        for (uint32_t k = first; k < last && !incoming; ++k) incoming = r.blocks[k] & kIncoming;
        if (!incoming) return;
        uint64_t t = r.prefetch_ticket;
        r.lock.unlock();
        env_.device->wait_copies(t);  // its completion opens the blocks under this lock
    }
}

// Makes an Invalid block valid after its fill.  Caller holds r.lock.
void BlockProtocol::open_block(Region &r, uint32_t k, bool write, bool *newly_dirty) {
    uint8_t s = silent_writes() || write ? kDirty : kReadOnly;
    r.set_state(k, s);
    protect(r, k, k + 1, prot_for(s));
    *newly_dirty = s == kDirty && policy_.write_events;
}

bool BlockProtocol::on_fault(Region &r, uintptr_t addr, bool write) {
    size_t off = addr - r.host;
    uint32_t k;
    for (;;) {
        r.lock.lock();
        if (!r.blocks || !r.live.load(std::memory_order_acquire)) {
            r.lock.unlock();
            return false;  // freed under our feet: not ours to fix
        }
        k = r.block_of(off);
        if (!(r.blocks[k] & kIncoming)) break;
        uint64_t t = r.prefetch_ticket;
        r.lock.unlock();
        env_.device->wait_copies(t);  // the prefetch opens the block when it lands
    }
    bool newly_dirty = false;
    uint8_t st = r.state(k);
    size_t page = off / os::kPageSize;
    if (st == kInvalid) {
        if (r.blocks[k] & kLanded) r.blocks[k] &= static_cast<uint8_t>(~kLanded);  // prefetched: a hit
        else fetch(r, k, k + 1);
        // Reads teach the prefetcher; a write would have faulted anyway.
        if (policy_.learn_reads && !write) r.blocks[k] = with_confidence(r.blocks[k], kConfidenceOnFault);
        open_block(r, k, write, &newly_dirty);
        if (write && page_faults()) {
            protect_page(r, page, PROT_READ | PROT_WRITE);
            set_bit(r.dirty_pages, page);
        }
        (write ? r.stats.write_faults : r.stats.read_faults).fetch_add(1, std::memory_order_relaxed);
        stats().add(write ? Counter::write_faults : Counter::read_faults);
    } else if (write && page_faults() && !bit(r.dirty_pages, page)) {
        if (st == kDirty) {
            // A second page of the block: stop paying a fault per page and
            // send the block whole.
            r.blocks[k] |= kForced;
            protect(r, k, k + 1, PROT_READ | PROT_WRITE);
        } else {
            r.set_state(k, kDirty);
            protect_page(r, page, PROT_READ | PROT_WRITE);
        }
        set_bit(r.dirty_pages, page);
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else if (write && st == kReadOnly) {
        r.set_state(k, kDirty);
        protect(r, k, k + 1, prot_for(kDirty));
        newly_dirty = policy_.write_events;
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else {
        // Another thread resolved it first; make sure the protection agrees.
        if (page_faults() && st == kDirty && (r.blocks[k] & kForced)) protect(r, k, k + 1, PROT_READ | PROT_WRITE);
        else if (page_faults() && st == kDirty && bit(r.dirty_pages, page)) protect_page(r, page, PROT_READ | PROT_WRITE);
        else protect(r, k, k + 1, prot_for(st));
    }
    r.lock.unlock();
    if (newly_dirty) dirtied(r, k);
    return true;
}

Status BlockProtocol::read_out(Region &r, size_t off, void *dst, size_t len, uint64_t *ticket) {
    if (len == 0) return adsmSuccess;
    uint32_t first = r.block_of(off), last = r.block_of(off + len - 1) + 1;
    lock_settled(r, first, last);
    Status result = adsmSuccess;
    auto *out = static_cast<uint8_t *>(dst);
    for (uint32_t k = first; k < last;) {
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
            } else if (Status s = env_.device->copy_to_host(out + (b - off), r.dev + b, e - b); s != adsmSuccess) {
                result = s;
            }
        } else {
            memcpy(out + (b - off), r.alias + b, e - b);
        }
        k = j;
    }
    r.lock.unlock();
    return result;
}

template <class HostPut, class DevicePut>
Status BlockProtocol::store(Region &r, size_t off, size_t len, HostPut &&host, DevicePut &&device) {
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
    for (uint32_t k = first; k < last;) {
        if (covered(k) && both_sides(k)) {
            uint32_t j = k + 1;
            while (j < last && covered(j) && both_sides(j)) ++j;
            size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(j - 1));
            host(b, e);
            r.stats.moved(true, e - b);
            if (Status s = device(b, e); s != adsmSuccess) result = s;
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
            if (Status s = device(b, e); s != adsmSuccess) result = s;
            k = j;
            continue;
        }
        bool newly_dirty = false;
        if (r.state(k) == kInvalid) {
            if (r.blocks[k] & kLanded) r.blocks[k] &= static_cast<uint8_t>(~kLanded);
            else if (Status s = fetch(r, k, k + 1); s != adsmSuccess) result = s;
            open_block(r, k, true, &newly_dirty);
        } else if (r.state(k) != kDirty) {
            r.set_state(k, kDirty);
            protect(r, k, k + 1, prot_for(kDirty));
            newly_dirty = policy_.write_events;
        }
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

Status BlockProtocol::write_in(Region &r, size_t off, const void *src, size_t len, uint64_t *ticket) {
    auto *in = static_cast<const uint8_t *>(src);
    return store(
        r, off, len, [&](size_t b, size_t e) { memcpy(r.alias + b, in + (b - off), e - b); },
        [&](size_t b, size_t e) {
            if (!ticket) return env_.device->copy_to_device(r.dev + b, in + (b - off), e - b);
            uint64_t t = env_.device->copy_to_device_async(r.dev + b, in + (b - off), e - b, nullptr, nullptr);
            if (t > *ticket) *ticket = t;
            return adsmSuccess;
        });
}

Status BlockProtocol::fill(Region &r, size_t off, int value, size_t len) {
    return store(
        r, off, len, [&](size_t b, size_t e) { memset(r.alias + b, value, e - b); },
        [&](size_t b, size_t e) { return env_.device->fill(r.dev + b, value, e - b); });
}

namespace {
struct CollectArgs {
    Region *r;
    bool page_precise;
    std::vector<std::pair<size_t, size_t>> *runs;  // page-precise: byte ranges to send
};
}  // namespace

// Flushes what the device lacks and closes every block.  Caller holds r.lock.
void BlockProtocol::flush_region(Region &r) {
    if (!r.blocks) return;
    bool any_open = false;
    for (uint32_t k = 0; k < r.nblocks && !any_open; ++k) any_open = r.state(k) != kInvalid;
    if (!any_open) {
        if (policy_.learn_reads) age_predictions(r);
        return;
    }
    // Close first: from here on no CPU write can slip in behind the copy.
    protect(r, 0, r.nblocks, PROT_NONE);

    // Find what was written (timed apart from the copies: it is the
    // tracker's cost), then send it.
    std::vector<std::pair<size_t, size_t>> runs;  // page-precise byte ranges
    uint64_t t0 = os::now_ns();
    if (env_.tracker) {
        CollectArgs a{&r, policy_.page_precise, &runs};
        env_.tracker->collect(
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
    for (auto &[b, e] : runs) {
        // A block flushed whole below needs no page-wise copy.
        if (!(r.blocks[r.block_of(b)] & kForced) || r.block_of(b) != r.block_of(e - 1)) copy_out(r, b, e, false);
    }

    // Whole blocks, adjacent ones in one transfer.
    auto whole = [&](uint32_t k) {
        return (r.blocks[k] & kForced) || (r.state(k) == kDirty && !env_.tracker && !policy_.page_precise);
    };
    for (uint32_t k = 0; k < r.nblocks;) {
        if (!whole(k)) {
            ++k;
            continue;
        }
        uint32_t j = k;
        while (j < r.nblocks && whole(j)) ++j;
        copy_out(r, r.block_begin(k), r.block_end(j - 1), false);
        k = j;
    }
    if (policy_.learn_reads) age_predictions(r);
    else memset(r.blocks, kInvalid, r.nblocks);
}

// Every block becomes Invalid; a prediction weakens by one sync, and ends
// at once if its prefetch went unused.
void BlockProtocol::age_predictions(Region &r) {
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        uint8_t c = confidence(r.blocks[k]);
        bool unused_prefetch = (r.blocks[k] & kLanded) != 0;
        r.blocks[k] = with_confidence(kInvalid, unused_prefetch || c == 0 ? 0 : static_cast<uint8_t>(c - 1));
    }
}

void BlockProtocol::flush_block_async(Region &r, uint32_t k) {
    if (!r.blocks || r.state(k) != kDirty) return;
    size_t b = r.block_begin(k), e = r.block_end(k);
    // The block goes whole, so what the runtime wrote into it through the
    // alias (kForced) is on its way and need not go again at the release.
    // Every alias write happens in store() under r.lock, which the caller
    // holds, so none is half done; a later one sets kForced afresh, and the
    // release waits for this copy before sending anything.
    if (env_.tracker) {
        // The kernel says whether anything was written since the last flush
        // (and starts watching afresh); the block stays writable, and later
        // writes are found again at the release.
        bool written = r.blocks[k] & kForced;
        env_.tracker->collect(
            r.host + b, e - b, [](void *p, uintptr_t, size_t) { *static_cast<bool *>(p) = true; }, &written);
        if (written) copy_out(r, b, e, true);
        r.blocks[k] &= static_cast<uint8_t>(~kForced);
        return;
    }
    // Stop writers, then copy: a later write faults and dirties it again.
    r.set_state(k, kReadOnly);
    protect(r, k, k + 1, prot_for(kReadOnly));
    copy_out(r, b, e, true);
    r.blocks[k] &= static_cast<uint8_t>(~kForced);
}

Status BlockProtocol::release(Context &c) {
    // Background copies of these blocks must land before the final ones.
    env_.device->wait_copies(Device::kAllCopies);
    for (Region *r = c.regions; r; r = r->next) {
        os::FutexGuard g(r->lock);
        flush_region(*r);
    }
    released(c);
    return adsmSuccess;
}

Status BlockProtocol::acquire(Context &c) {
    if (!policy_.learn_reads) return adsmSuccess;
    for (Region *r = c.regions; r; r = r->next) prefetch(*r);
    return adsmSuccess;
}

// Starts fetching the blocks the CPU is expected to read; they land (and
// open, or wait closed to be confirmed; see kOpenAhead) while the CPU goes on.
void BlockProtocol::prefetch(Region &r) {
    std::vector<PrefetchRun *> runs;
    {
        os::FutexGuard g(r.lock);
        if (!r.blocks) return;
        for (uint32_t k = 0; k < r.nblocks;) {
            auto wanted = [&](uint32_t i) {
                return r.state(i) == kInvalid && !(r.blocks[i] & kLanded) && confidence(r.blocks[i]) > 0;
            };
            if (!wanted(k)) {
                ++k;
                continue;
            }
            uint32_t j = k;
            while (j < r.nblocks && wanted(j)) r.blocks[j++] |= kIncoming;
            runs.push_back(new PrefetchRun{this, &r, r.id, r.generation, k, j});
            k = j;
        }
    }
    for (PrefetchRun *run : runs) {
        size_t b = r.block_begin(run->first), e = r.block_data_end(run->last - 1);
        stats().add(Counter::prefetched_blocks, run->last - run->first);
        r.stats.moved(false, e - b);
        uint64_t t = env_.device->copy_to_host_async(r.alias + b, r.dev + b, e - b, &BlockProtocol::prefetched, run);
        os::FutexGuard g(r.lock);
        if (t > r.prefetch_ticket) r.prefetch_ticket = t;
    }
}

// On the copy engine's thread, once a prefetch has landed.
void BlockProtocol::prefetched(void *arg) {
    auto *run = static_cast<PrefetchRun *>(arg);
    Region &r = *run->region;
    {
        os::FutexGuard g(r.lock);
        if (r.blocks && r.live.load() && r.id == run->id && r.generation == run->generation) {
            for (uint32_t k = run->first; k < run->last; ++k) {
                if (!(r.blocks[k] & kIncoming)) continue;
                r.blocks[k] &= static_cast<uint8_t>(~kIncoming);
                if (r.state(k) != kInvalid) continue;
                if (confidence(r.blocks[k]) >= kOpenAhead) {
                    bool unused;
                    run->protocol->open_block(r, k, false, &unused);
                } else {
                    r.blocks[k] |= kLanded;
                }
            }
        }
    }
    delete run;
}

void BlockProtocol::snapshot(const Region &r, uint8_t *dst) {
    if (!r.blocks) return Protocol::snapshot(r, dst);
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        size_t b = r.block_begin(k), e = r.block_data_end(k);
        if (e <= b) continue;
        if (r.state(k) == kInvalid && !(r.blocks[k] & (kIncoming | kLanded)))
            env_.device->copy_to_host(dst + b, r.dev + b, e - b);
        else memcpy(dst + b, r.alias + b, e - b);
    }
}

}  // namespace adsm
