#include "protocols/block_protocol.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "backend/device.h"
#include "os/clock.h"
#include "os/invariant.h"
#include "os/real_libc.h"
#include "os/vm.h"
#include "protocols/protection.h"
#include "support/stats.h"

namespace adsm {

using namespace block;

BlockProtocol::BlockProtocol(const ProtocolEnv &env, BlockPolicy policy)
    : env_(env),
      whole_object_(policy.whole_object),
      writes_(std::move(policy.writes)),
      reads_(std::move(policy.reads)),
      block_size_(env.config->block_size),
      read_ahead_(env.config->read_ahead) {
    if (env_.devices.empty()) env_.device->start_copy_engine();
    for (Device *d : env_.devices) d->start_copy_engine();
}

Status BlockProtocol::fetch(SharedObject &r, uint32_t first, uint32_t last) {
    size_t b = r.block_begin(first), e = r.block_data_end(last - 1);
    if (e <= b) return adsmSuccess;
    r.stats.moved(false, e - b);
    return r.device->copy_to_host(r.alias + b, r.dev + b, e - b);
}

// After a store whose device copy failed: the open blocks among [k, j),
// whose host copy holds their data, go whole at the next release.  (Not the
// closed ones: their data is the device's, and the host's would overwrite
// it.)  Marked before anything that may fail, so that none is left out.
void BlockProtocol::resend_open_blocks(SharedObject &r, uint32_t k, uint32_t j) {
    for (uint32_t i = k; i < j; ++i) {
        if (r.state(i) == kInvalid) continue;
        r.blocks[i] |= kForced;
        bool unused;
        if (r.state(i) == kReadOnly) (void)dirty_block(r, i, &unused);  // (forced whatever this gives)
    }
}

// Sends [begin, end) of the host copy (clipped to the object) to the device.
Status BlockProtocol::copy_out(SharedObject &r, size_t begin, size_t end, bool async) {
    if (end > r.size) end = r.size;
    if (end <= begin) return adsmSuccess;
    r.stats.moved(true, end - begin);
    if (!async) return r.device->copy_to_device(r.dev + begin, r.alias + begin, end - begin);
    r.flushes_in_flight.fetch_add(1, std::memory_order_acq_rel);
    r.device->copy_to_device_async(r.dev + begin, r.alias + begin, end - begin, &BlockProtocol::flushed, &r);
    return adsmSuccess;
}

// An asynchronous store to the device ended.  A failed one leaves blocks
// whose state says the device holds their bytes without them: as after a
// failed background flush, the next release sends the open ones whole.
// (The program's call that stored them hears of it too.)
void BlockProtocol::stored(void *arg, Status status) {
    if (status != adsmSuccess) static_cast<SharedObject *>(arg)->resend.store(true, std::memory_order_release);
}

// A background flush ended.  A failed one leaves the device without data
// the block's state says it has: the next release sends the region's open
// blocks whole.  No lock here: this may run on the submitter's thread,
// which holds r.lock.
void BlockProtocol::flushed(void *arg, Status status) {
    auto *r = static_cast<SharedObject *>(arg);
    if (status != adsmSuccess) r->resend.store(true, std::memory_order_release);
    r->flushes_in_flight.fetch_sub(1, std::memory_order_acq_rel);
}

Status BlockProtocol::on_alloc(SharedObject &r, bool zeroed) {
    size_t bs = whole_object_ || block_size_ > r.span ? r.span : block_size_;
    r.block_size = bs;
    r.nblocks = static_cast<uint32_t>((r.span + bs - 1) / bs);
    if (r.nblocks <= SharedObject::kInlineBlocks) {
        r.blocks = r.inline_blocks;
    } else {
        r.blocks = new (std::nothrow) uint8_t[r.nblocks];
        if (!r.blocks) return fail(adsmErrorMemoryAllocation, "no memory for a block table of %u blocks", r.nblocks);
    }
    // Fresh memory: both copies hold the same nothing, so nothing needs
    // moving until the CPU writes; a block is as if just read.
    uint8_t initial = writes_->open_state(false);
    memset(r.blocks, initial, r.nblocks);
    // (A failure leaves nothing behind: the manager gives the region up
    // without on_free.)
    auto undo = [&](Status s) {
        if (r.blocks != r.inline_blocks) delete[] r.blocks;
        delete[] r.dirty_pages;
        r.blocks = nullptr;
        r.dirty_pages = nullptr;
        return s;
    };
    if (Status s = writes_->watch(r); s != adsmSuccess) return undo(s);
    // Both copies are taken as current from here on: the device's must
    // hold the zeros too (its memory was committed for this object just
    // now).
    if (zeroed && !r.device->commits_zeroed())
        if (Status s = r.device->fill(r.dev, 0, r.size); s != adsmSuccess) return undo(s);
    if (Status s = protect_range(r.host, r.span, writes_->protection(initial)); s != adsmSuccess) return undo(s);
    check_protections(r);
    return adsmSuccess;
}

void BlockProtocol::check_protections(const SharedObject &r) const {
#if ADSM_CHECK_INVARIANTS
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        int readable = os::readable(reinterpret_cast<const void *>(r.host + r.block_begin(k)));
        if (readable < 0) continue;  // the kernel will not say, or asking would make the page
        ADSM_INVARIANT(r.state(k) != kInvalid || readable == 0, "a block the CPU may not touch is open");
    }
#else
    (void)r;
#endif
}

void BlockProtocol::on_free(SharedObject &r) {
    // No background copy may touch the range once it can be reused; what
    // they did no longer matters.
    (void)r.device->wait_copies(Device::kAllCopies);
    os::FutexGuard g(r.lock);
    land_handed_off(r);  // (giving their runs back)
    if (r.blocks != r.inline_blocks) delete[] r.blocks;
    delete[] r.dirty_pages;
    r.blocks = nullptr;
    r.dirty_pages = nullptr;
}

Status BlockProtocol::coarsen(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    // A prefetch still under way writes its blocks when its copy ends,
    // which may be after the CPU wrote them once the region is open: every
    // one lands first.  (Their landings find the lock held here and leave
    // it to land them: their blocks are landed, or Invalid where a copy
    // failed, for the fetches below.)
    bool incoming = false;
    for (uint32_t k = 0; k < r.nblocks && !incoming; ++k) incoming = r.blocks[k] & kIncoming;
    if (incoming) {
        while (r.prefetches_unticketed.load(std::memory_order_acquire)) sched_yield();
        (void)r.device->wait_copies(r.prefetch_ticket.load(std::memory_order_acquire));
    }
    land_handed_off(r);
    // Every block's data goes into the host copy first, then the whole
    // region opens in one protection change, which needs no new mapping.
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        if (r.state(k) != kInvalid) continue;
        if (!(r.blocks[k] & kLanded))
            if (Status s = fetch(r, k, k + 1); s != adsmSuccess) return s;
    }
    if (Status s = protect_blocks(r, 0, r.nblocks, PROT_READ | PROT_WRITE); s != adsmSuccess) return s;
    for (uint32_t k = 0; k < r.nblocks; ++k) {
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

bool BlockProtocol::open_alone(SharedObject &r, uint32_t k, bool write) {
    ADSM_HOLDS(r.lock);
    ADSM_INVARIANT(r.state(k) == kInvalid, "only an Invalid block opens");
    if (r.coarse) return false;
    writes_->refilled(r, k);  // (before the CPU may write it)
    uint8_t s = writes_->open_state(write);
    if (protect_blocks(r, k, k + 1, writes_->protection(s)) != adsmSuccess) return false;
    r.set_state(k, s);
    return true;
}

// Makes an Invalid block valid after its fill.  Caller holds r.lock.
Status BlockProtocol::open_block(SharedObject &r, uint32_t k, bool write, bool *newly_dirty) {
    if (!open_alone(r, k, write)) return coarsen(r);
    *newly_dirty = write;
    return adsmSuccess;
}

Status BlockProtocol::dirty_block(SharedObject &r, uint32_t k, bool *newly_dirty) {
    ADSM_HOLDS(r.lock);
    ADSM_INVARIANT(r.state(k) == kReadOnly, "only a ReadOnly block turns Dirty");
    if (r.coarse || protect_blocks(r, k, k + 1, writes_->protection(kDirty)) != adsmSuccess) return coarsen(r);
    r.set_state(k, kDirty);
    *newly_dirty = true;
    return adsmSuccess;
}

Protocol::FaultOutcome BlockProtocol::on_fault(SharedObject &r, uintptr_t addr, bool write) {
    r.lock.lock();
    // Freed under our feet, its slot perhaps taken by an object elsewhere.
    if (!r.blocks || !r.live.load(std::memory_order_acquire) || !r.contains_host(addr)) {
        r.lock.unlock();
        return FaultOutcome::not_mine;
    }
    const size_t off = addr - r.host;
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
    uint32_t ahead = 0, ahead_end = 0;
    if (st == kInvalid) {
        if (off >= r.device_stores_begin && off < r.device_stores_end) {
            r.cpu_reads_stores = true;
            if (r.group) r.group->stores_read_back.store(true, std::memory_order_relaxed);
        }
        bool landed = r.blocks[k] & kLanded;
        if (!landed) result = fetch(r, k, k + 1);
        if (result == adsmSuccess) {
            r.blocks[k] &= static_cast<uint8_t>(~kLanded);  // prefetched: a hit
            reads_->touched(r, k, write);
            result = open_block(r, k, write, &newly_dirty);
        }
        if (result == adsmSuccess) plan_ahead(r, k, &ahead, &ahead_end);
        if (result == adsmSuccess && write && !r.coarse && writes_->opened_on_write(r, k, page) != adsmSuccess)
            result = coarsen(r);
        (write ? r.stats.write_faults : r.stats.read_faults).fetch_add(1, std::memory_order_relaxed);
        stats().add(write ? Counter::write_faults : Counter::read_faults);
    } else if (write && !r.coarse && writes_->page_unseen(r, page)) {
        if (writes_->page_written(r, k, page) != adsmSuccess) result = coarsen(r);
        else newly_dirty = st == kReadOnly;
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else if (write && st == kReadOnly) {
        result = dirty_block(r, k, &newly_dirty);
        r.stats.write_faults.fetch_add(1, std::memory_order_relaxed);
        stats().add(Counter::write_faults);
    } else {
        // Another thread resolved it first; make sure the protection agrees.
        result = r.coarse ? protect_blocks(r, 0, r.nblocks, PROT_READ | PROT_WRITE) : writes_->agree(r, k, page);
        if (result != adsmSuccess) result = coarsen(r);
    }
    r.lock.unlock();
    if (result != adsmSuccess) return FaultOutcome::failed;
    if (newly_dirty) dirtied(r, k);
    if (ahead < ahead_end) read_ahead(r, ahead, ahead_end);
    return FaultOutcome::retry;
}

// Dirty blocks are the writable ones: each run of them turns read-only,
// and back as the write detection wants it.  Every run is tried; the first
// failure is returned (a run that cannot close stays writable, its writes
// unheld; one that cannot reopen does at its next write fault).
template <class F>
static Status each_dirty_run(SharedObject &r, F &&f) {
    Status result = adsmSuccess;
    for (uint32_t k = 0; k < r.nblocks;) {
        if (r.state(k) != kDirty) {
            ++k;
            continue;
        }
        uint32_t j = k + 1;
        while (j < r.nblocks && r.state(j) == kDirty) ++j;
        if (Status s = f(k, j); s != adsmSuccess && result == adsmSuccess) result = s;
        k = j;
    }
    return result;
}

Status BlockProtocol::hold_writes(SharedObject &r) {
    os::FutexGuard g(r.lock);
    if (!r.blocks || !r.live.load(std::memory_order_acquire) || r.writes_held) return adsmSuccess;
    r.writes_held = true;
    return each_dirty_run(r, [&](uint32_t k, uint32_t j) { return protect_blocks(r, k, j, PROT_READ); });
}

Status BlockProtocol::resume_writes(SharedObject &r) {
    os::FutexGuard g(r.lock);
    if (!r.writes_held) return adsmSuccess;
    r.writes_held = false;
    if (!r.blocks) return adsmSuccess;
    if (r.coarse) return protect_blocks(r, 0, r.nblocks, PROT_READ | PROT_WRITE);
    return each_dirty_run(r, [&](uint32_t k, uint32_t j) { return writes_->reopen(r, k, j); });
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
                uint64_t t = r.device->copy_to_host_async(out + (b - off), r.dev + b, e - b, nullptr, nullptr);
                if (t > *ticket) *ticket = t;
                // A copy done (and failed) on the spot is reported at once.
                if (t == 0) result = r.device->wait_copies(0);
            } else {
                result = r.device->copy_to_host(out + (b - off), r.dev + b, e - b);
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
    bool dirty_whole = writes_->sends_dirty_whole();
    // Both copies of the block are current, or what is written to the host
    // copy is found page by page at the release anyway: a block overwritten
    // whole can take the bytes on both sides and stay as it is, instead of
    // being sent whole at the release.  (A block dirty as a whole is sent
    // whole at the release regardless, so it takes them on the host only;
    // so does a forced one, which may have no device memory behind it: an
    // evicted object's.)
    // Not while a background flush of the object may still land: it could
    // carry the block's older bytes over the ones written to the device now.
    // Nor while the userfaultfd tracker does not watch the object yet: its
    // first release sends every page made by then (tracked_writes.cpp), so
    // bytes sent ahead would cross the link twice (a file read into a new
    // buffer went twice; sort sent every byte it read to a device no
    // kernel of its used).
    // Nor before the program may launch a kernel (ProtocolEnv::kernels_expected):
    // the device's bytes may never be read.
    const bool flushing = r.flushes_in_flight.load(std::memory_order_acquire) != 0;
    const bool for_kernels = kernels_expected();
    auto both_sides = [&](uint32_t k) {
        if (flushing || r.unwatched_pages || !for_kernels) return false;
        return r.state(k) == kReadOnly || (r.state(k) == kDirty && !dirty_whole && !(r.blocks[k] & kForced));
    };
    // Bytes for the device alone: a store of kDeviceOnlyStore or more into a
    // closed block, or into one both copies hold whose host pages were never
    // made (fresh memory, or memory only kernels used).  A file read or a
    // copy into memory the CPU has not touched is data on its way to a
    // kernel, and making host pages for it costs several times the copy it
    // would save if the CPU read it after all (a fault fetches it then).
    // An object whose CPU did read such bytes back before its next release
    // (cpu_reads_stores) takes its later stores on the host: a program
    // reading a file into it a piece at a time and checking each piece sent
    // every byte twice (there and back).  So do the other objects of its
    // group, while the group's calls find its CPU reading stores back (a
    // program reading several inputs into new buffers and parsing each
    // before it calls a kernel: ReleaseGroup::call_made).
    // While such stores may still be on their way (asynchronous, an I/O
    // call's), even a few bytes of a closed block go to the device: a fetch
    // of the block could overtake them.
    auto part = [&](uint32_t k) { return std::min(off + len, r.block_end(k)) - std::max(off, r.block_begin(k)); };
    auto big = [&](uint32_t k) {
        return covered(k) || part(k) >= kDeviceOnlyStore || (r.stores_ticket != 0 && closed(k));
    };
    const bool reads_back =
        r.cpu_reads_stores || (r.group && r.group->stores_read_back.load(std::memory_order_relaxed));
    auto unmade = [&](uint32_t k) {
        return r.state(k) == kReadOnly && !flushing && !r.coarse && !r.read_mostly && !reads_back &&
               !r.kernel_reads.load(std::memory_order_acquire) &&
               !os::any_page_made(r.alias + r.block_begin(k), r.block_end(k) - r.block_begin(k));
    };
    // (Closed blocks are on the device whatever comes: a release happened.)
    auto device_only = [&](uint32_t k) { return big(k) && (closed(k) || (for_kernels && unmade(k))); };
    // Adjacent blocks opened for the bytes take them in one piece (small
    // blocks would each be too small for put_on_host to make their pages).
    size_t on_host_begin = 0, on_host_end = 0;
    auto put_on_host_run = [&] {
        if (on_host_end > on_host_begin) host(on_host_begin, on_host_end);
        on_host_begin = on_host_end = 0;
    };
    // Stops at the first failure: what was stored before it is stored, and
    // nothing after it is touched.
    for (uint32_t k = first; k < last && result == adsmSuccess;) {
        if (device_only(k)) {
            uint32_t j = k + 1;
            while (j < last && device_only(j)) ++j;
            size_t b = std::max(off, r.block_begin(k)), e = std::min(off + len, r.block_end(j - 1));
            r.stats.moved(true, e - b);
            result = device(b, e);
            bool any_open = false;
            for (uint32_t i = k; i < j && !any_open; ++i) any_open = r.state(i) == kReadOnly;
            if (any_open) {
                const bool first_store = r.device_stores_end == 0;
                r.device_stores_begin = first_store ? b : std::min(r.device_stores_begin, b);
                r.device_stores_end = std::max(r.device_stores_end, e);
                if (result != adsmSuccess) {
                    // The device copy may be half written: the host's, which
                    // still holds the bytes from before, goes whole at the release.
                    resend_open_blocks(r, k, j);
                } else if (protect_blocks(r, k, j, PROT_NONE) == adsmSuccess) {
                    for (uint32_t i = k; i < j; ++i) r.set_state(i, kInvalid);
                } else {
                    host(b, e);  // cannot close them: both copies take the bytes
                }
            }
            k = j;
            continue;
        }
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
                resend_open_blocks(r, k, j);
            }
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
        if (b != on_host_end) put_on_host_run();
        if (on_host_end == 0) on_host_begin = b;
        on_host_end = e;
        if (newly_dirty) {
            if (ndirtied < 8) dirtied_now[ndirtied++] = k;
            else more.push_back(k);
        }
        ++k;
    }
    put_on_host_run();  // (after a failure too: what came before it is stored)
    r.lock.unlock();
    for (unsigned i = 0; i < ndirtied; ++i) dirtied(r, dirtied_now[i]);
    for (uint32_t k : more) dirtied(r, k);
    return result;
}

// A big store into the host copy makes its pages in one call, then enters
// them into the program's view: otherwise the copy faults on each fresh
// page of the alias, and the CPU once more on each to map in its view what
// the alias made (sort reading its input into a 64 MiB buffer took 57,000
// page faults, 36,700 with this, 33,000 plainly).  The blocks are open, so
// the view's pages can be entered; either call is a hint, faults do the
// same where it fails.  Not where the range's first and last pages exist
// already (a block a malloc reused, a buffer written before): populating
// made pages walks every page table entry again for nothing (a thread
// pool's tasks, each filling a reused 8 MiB buffer, spent 0.2 ms a task
// on it).
template <class Put>
void BlockProtocol::put_on_host(SharedObject &r, size_t b, size_t e, Put &&put) {
    const uintptr_t first = os::page_up(r.host + b), last = os::page_down(r.host + e);
    uint8_t *alias = r.alias + (first - r.host);
    const bool big = last >= first + kPagesInOneCall &&
                     !(os::any_page_made(alias, os::kPageSize) &&
                       os::any_page_made(alias + (last - first) - os::kPageSize, os::kPageSize));
    if (big) (void)os::populate(alias, last - first, true);
    put(r.alias + b, e - b);
    if (big) (void)os::populate(reinterpret_cast<void *>(first), last - first, false);
}

Status BlockProtocol::write_in(SharedObject &r, size_t off, const void *src, size_t len, uint64_t *ticket) {
    auto *in = static_cast<const uint8_t *>(src);
    return store(
        r, off, len,
        [&](size_t b, size_t e) {
            put_on_host(r, b, e, [&](uint8_t *to, size_t n) { os::real_memcpy(to, in + (b - off), n); });
        },
        [&](size_t b, size_t e) {
            if (!ticket) return r.device->copy_to_device(r.dev + b, in + (b - off), e - b);
            uint64_t t = r.device->copy_to_device_async(r.dev + b, in + (b - off), e - b, &BlockProtocol::stored, &r);
            if (t > *ticket) *ticket = t;
            if (t > r.stores_ticket) r.stores_ticket = t;
            return t == 0 ? r.device->wait_copies(0) : adsmSuccess;
        });
}

Status BlockProtocol::fill(SharedObject &r, size_t off, int value, size_t len) {
    return store(
        r, off, len,
        [&](size_t b, size_t e) { put_on_host(r, b, e, [&](uint8_t *to, size_t n) { os::real_memset(to, value, n); }); },
        [&](size_t b, size_t e) { return r.device->fill(r.dev + b, value, e - b); });
}

// Blocks [first, last) keep their host copy as the current one after a copy
// of them failed: Dirty, sent whole at the next release, open again.
void BlockProtocol::keep_open(SharedObject &r, uint32_t first, uint32_t last) {
    for (uint32_t k = first; k < last; ++k) {
        r.set_state(k, kDirty);
        r.blocks[k] |= kForced;
    }
    // If even that fails, the closed Dirty blocks reopen at their next
    // fault (the fault path makes protection agree with the state).
    (void)protect_blocks(r, first, last, PROT_READ | PROT_WRITE);
}

// Flushes what the device lacks and closes every block.  Caller holds
// r.lock.  On failure, blocks whose data did not reach the device stay Dirty
// and open, so nothing current is lost.
Status BlockProtocol::flush_region(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    r.stores_ticket = 0;  // every caller waited for the device's copies
    r.device_stores_begin = r.device_stores_end = 0;
    if (!r.blocks) return adsmSuccess;
    bool any_open = false;
    for (uint32_t k = 0; k < r.nblocks && !any_open; ++k) any_open = r.state(k) != kInvalid;
    if (!any_open) {
        reads_->invalidated(r);
        return adsmSuccess;
    }
    // Close first: from here on no CPU write can slip in behind the copy.
    if (Status s = protect_blocks(r, 0, r.nblocks, PROT_NONE); s != adsmSuccess) return s;
    if (r.resend.exchange(false, std::memory_order_acq_rel)) {
        for (uint32_t k = 0; k < r.nblocks; ++k)
            if (r.state(k) != kInvalid) r.blocks[k] |= kForced;
    }

    // Find what was written (timed apart from the copies: it is the
    // tracker's cost), then send it.
    ByteRuns runs;
    uint64_t t0 = os::now_ns();
    writes_->collect(r, runs);
    stats().add(Counter::tracking_ns, os::now_ns() - t0);
    Status result = adsmSuccess;
    bool dirty_whole = writes_->sends_dirty_whole();
    auto whole = [&](uint32_t k) { return (r.blocks[k] & kForced) || (dirty_whole && r.state(k) == kDirty); };
    for (auto &[b, e] : runs) {
        // The parts in blocks flushed whole below need no page-wise copy (a
        // run of fresh pages can span many blocks a store forced).
        for (size_t at = b; at < e;) {
            size_t stop = std::min(e, r.block_end(r.block_of(at)));
            if (whole(r.block_of(at))) {
                at = stop;
                continue;
            }
            while (stop < e && !whole(r.block_of(stop))) stop = std::min(e, r.block_end(r.block_of(stop)));
            if (Status s = copy_out(r, at, stop, false); s != adsmSuccess) {
                // The written pages of these blocks are known no more: they go whole.
                for (uint32_t k = r.block_of(at); k <= r.block_of(stop - 1); ++k) r.blocks[k] |= kForced;
                if (result == adsmSuccess) result = s;
            }
            at = stop;
        }
    }

    // Whole blocks, adjacent ones in one transfer.
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
    reads_->invalidated(r);
    return adsmSuccess;
}

void BlockProtocol::flush_block_async(SharedObject &r, uint32_t k) {
    ADSM_HOLDS(r.lock);
    if (!r.blocks || r.state(k) != kDirty || r.coarse || r.kernel_reads.load(std::memory_order_acquire) ||
        !r.resident.load(std::memory_order_relaxed) || r.flushes_awaited.load(std::memory_order_acquire))
        return;
    size_t b = r.block_begin(k), e = r.block_end(k);
    // The block goes whole, so what the runtime wrote into it through the
    // alias (kForced) is on its way and need not go again at the release.
    // Every alias write happens in store() under r.lock, which the caller
    // holds, so none is half done; a later one sets kForced afresh, and the
    // release waits for this copy before sending anything.  A copy that
    // fails marks the region for a whole resend (flushed()).
    bool written;
    if (!writes_->rewatch(r, k, &written)) return;  // unknown: left to the release
    if (written) copy_out(r, b, e, true);
    r.blocks[k] &= static_cast<uint8_t>(~kForced);
}

void BlockProtocol::lock_flushed(SharedObject &r, bool waited) {
    r.flushes_awaited.fetch_add(1, std::memory_order_acq_rel);
    for (bool wait = !waited;; wait = true) {
        if (wait) (void)r.device->wait_copies(Device::kAllCopies);
        lock_settled(r, 0, r.nblocks);
        if (r.flushes_in_flight.load(std::memory_order_acquire) == 0) break;
        r.lock.unlock();
    }
    // (Under the lock no flush starts; once the caller is done, none of the
    // object's blocks is Dirty.)
    r.flushes_awaited.fetch_sub(1, std::memory_order_acq_rel);
}

Status BlockProtocol::release(ReleaseGroup &c) {
    // Background copies of these blocks must land before the final ones; a
    // failed one has marked its region for a whole resend, done below.
    if (c.device) (void)c.device->wait_copies(Device::kAllCopies);
    Status result = adsmSuccess;
    for (SharedObject *r = c.objects; r; r = r->next) {
        // Every region is flushed even after a failure, so that a retried
        // call has as little left to send as possible.
        if (r->read_mostly) {
            if (Status s = release_object(*r, true); s != adsmSuccess && result == adsmSuccess) result = s;
            continue;
        }
        // An object on the host alone has no device copy to send to: a kept
        // malloc block evicted to make room (gather_objects brings every
        // other back before a release).  Closed here, the block it becomes
        // next was fetched from device memory it did not have.
        if (!r->resident.load(std::memory_order_acquire)) continue;
        // (An object kept on another device has its copies on that one.)
        lock_flushed(*r, r->device == c.device);
        if (Status s = flush_region(*r); s != adsmSuccess && result == adsmSuccess) result = s;
        check_protections(*r);
        r->lock.unlock();
    }
    released(c);
    return result;
}

Status BlockProtocol::release_object(SharedObject &r, bool read_only) {
    lock_flushed(r);
    // The blocks whose host copy is current now stay so after the flush.
    std::vector<bool> current;
    if (read_only && r.blocks)
        for (uint32_t k = 0; k < r.nblocks; ++k)
            current.push_back(r.state(k) != kInvalid || (r.blocks[k] & kLanded));
    Status s = flush_region(r);
    if (read_only) r.kernel_reads.store(true, std::memory_order_release);
    if (s == adsmSuccess && read_only) {
        // Open them as a read fault would, without the fetch: the CPU reads
        // them while the kernel runs, and writes are found as after any
        // release (the kernel still sees what was sent).
        for (uint32_t k = 0; k < r.nblocks; ++k) {
            if (!current[k]) continue;
            uint8_t st = writes_->open_state(false);
            if (r.coarse || protect_blocks(r, k, k + 1, writes_->protection(st)) != adsmSuccess) continue;  // faults in
            r.blocks[k] &= static_cast<uint8_t>(~kLanded);
            r.set_state(k, st);
        }
    }
    check_protections(r);
    r.lock.unlock();
    return s;
}

Status BlockProtocol::acquire_object(SharedObject &r, bool written) {
    r.kernel_reads.store(false, std::memory_order_release);
    if (!written || !reads_->predicts()) return adsmSuccess;
    return prefetch(r);
}

void BlockProtocol::forget_prefetch_ticket(SharedObject &r) {
    ADSM_HOLDS(r.lock);
    // Once a submitter whose run has landed already has raised it.
    while (r.prefetches_unticketed.load(std::memory_order_acquire)) sched_yield();
    r.prefetch_ticket.store(0, std::memory_order_relaxed);
}

Status BlockProtocol::settle_on_device(SharedObject &r) {
    lock_flushed(r);  // (as a release)
    forget_prefetch_ticket(r);
    Status s = flush_region(r);
    check_protections(r);
    r.lock.unlock();
    return s;
}

Status BlockProtocol::evict(SharedObject &r) {
    // (The device memory background flushes go to is given up once this
    // returns.)
    lock_flushed(r);
    forget_prefetch_ticket(r);
    Status result = adsmSuccess;
    // Every block the host lacks comes in first (a landed prefetch already
    // did), runs of them in one copy; one that cannot leaves the object as
    // it was.
    auto missing = [&](uint32_t k) { return r.state(k) == kInvalid && !(r.blocks[k] & kLanded); };
    for (uint32_t k = 0; k < r.nblocks && result == adsmSuccess;) {
        if (!missing(k)) {
            ++k;
            continue;
        }
        uint32_t j = k + 1;
        while (j < r.nblocks && missing(j)) ++j;
        result = fetch(r, k, j);
        k = j;
    }
    if (result == adsmSuccess) {
        for (uint32_t k = 0; k < r.nblocks; ++k) r.blocks[k] &= static_cast<uint8_t>(~kLanded);
        keep_open(r, 0, r.nblocks);
    }
    check_protections(r);
    r.lock.unlock();
    return result;
}

Status BlockProtocol::fetch_range(SharedObject &r, size_t off, size_t len) {
    if (len == 0) return adsmSuccess;
    uint32_t first = r.block_of(off), last = r.block_of(off + len - 1) + 1;
    lock_settled(r, first, last);
    Status result = adsmSuccess;
    for (uint32_t k = first; k < last && result == adsmSuccess;) {
        if (r.state(k) != kInvalid) {
            ++k;
            continue;
        }
        uint32_t j = k + 1;
        if (!(r.blocks[k] & kLanded)) {
            // Runs of closed blocks come in one copy.
            while (j < last && r.state(j) == kInvalid && !(r.blocks[j] & kLanded)) ++j;
            result = fetch(r, k, j);
            // Filled: should the region turn coarse below, it need not
            // fetch them again.
            if (result == adsmSuccess)
                for (uint32_t i = k; i < j; ++i) r.blocks[i] |= kLanded;
        }
        for (uint32_t i = k; i < j && result == adsmSuccess; ++i) {
            // Opened already: the region turned coarse at an earlier block.
            if (r.state(i) != kInvalid) continue;
            bool unused;
            // (Still marked filled while it opens: a coarsening there keeps
            // this block's data rather than fetch it again.)
            result = open_block(r, i, false, &unused);
            r.blocks[i] &= static_cast<uint8_t>(~kLanded);
        }
        k = j;
    }
    check_protections(r);
    r.lock.unlock();
    return result;
}

Status BlockProtocol::snapshot(const SharedObject &r, uint8_t *dst, const os::Runs &held) {
    if (!r.blocks) return Protocol::snapshot(r, dst, held);
    Status result = adsmSuccess;
    for (uint32_t k = 0; k < r.nblocks; ++k) {
        size_t b = r.block_begin(k), e = r.block_data_end(k);
        if (e <= b) continue;
        // (A block still coming has only part of its bytes in the host copy.)
        if (r.state(k) == kInvalid && !(r.blocks[k] & kLanded)) {
            if (Status s = r.device->copy_to_host(dst + b, r.dev + b, e - b); s != adsmSuccess && result == adsmSuccess)
                result = s;
        } else {
            copy_held(r, dst, b, e, held);
        }
    }
    return result;
}

}  // namespace adsm
