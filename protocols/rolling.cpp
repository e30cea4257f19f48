// rolling: lazy at block granularity (ADSM_BLOCK_SIZE), plus a bounded list
// of the blocks that turned dirty most recently (ADSM_ROLLING_SIZE).  When a
// block turns dirty and the list is full, the oldest dirty block starts
// travelling to the device in the background, so transfers overlap the
// CPU's work (while it is still producing the input, say) instead of all
// waiting for the call.  GMAC's default protocol.
#include <cassert>
#include <new>

#include "protocols/block_protocol.h"
#include "support/stats.h"

namespace adsm {
namespace {

// Blocks of ADSM_BLOCK_SIZE.  The first write to each block faults even
// with a tracker, so that dirtied() learns the order in which blocks turn
// dirty; the tracker then tells whether a block sent ahead was written
// again.  Nothing is fetched ahead.
BlockPolicy rolling_policy(const ProtocolEnv &env) {
    return {.writes = env.tracker ? fault_on_first_write_then_track(env.tracker) : fault_on_first_write()};
}

struct Entry {
    SharedObject *region;
    uint32_t id, generation, block;
};

// The blocks of one context sent ahead since its last release.  One the
// CPU writes again stays dirty until the release, which sends it with the
// rest, and does not enter the list again: sending it ahead once more
// would copy it once per write that finds it closed, for ever if the CPU
// writes more blocks at random than the list holds (xz's match finder,
// writing a 2.3 MiB table under mprotect tracking, sent 274,260 blocks,
// 65 GB, for 300 KB of input).  With a tracker the second write never
// reaches dirtied(): the tracker sees it.  A fixed table, for the fault
// handler: an entry that finds no slot leaves its block to be sent ahead
// again, as without the table.
class SentAhead {
public:
    bool contains(const Entry &e) const {
        for (uint32_t i = 0, h = hash(e); i < kProbes; ++i) {
            const Slot &s = slots_[(h + i) & (kSlots - 1)];
            if (s.epoch != epoch_) return false;  // (slots fill in probe order)
            if (s.id == e.id && s.generation == e.generation && s.block == e.block) return true;
        }
        return false;
    }
    void insert(const Entry &e) {
        for (uint32_t i = 0, h = hash(e); i < kProbes; ++i) {
            Slot &s = slots_[(h + i) & (kSlots - 1)];
            if (s.epoch == epoch_) continue;
            s = {epoch_, e.id, e.generation, e.block};
            return;
        }
    }
    // At a release: every entry goes at once.
    void clear() { ++epoch_; }

private:
    static constexpr uint32_t kSlots = 1024, kProbes = 16;
    struct Slot {
        uint64_t epoch;
        uint32_t id, generation, block;
    };
    static uint32_t hash(const Entry &e) { return (e.id * 0x9e3779b1u) ^ (e.block * 0x85ebca6bu) ^ e.generation; }
    Slot slots_[kSlots] = {};
    uint64_t epoch_ = 1;
};

// A ring of the dirty blocks of one context, oldest first.
struct DirtyList {
    uint32_t capacity = 0, head = 0, count = 0;
    Entry *entries = nullptr;
    SentAhead sent;
};

class Rolling final : public BlockProtocol {
public:
    // At least two (the configuration refuses less): one store can straddle
    // two blocks, and with room for one only, each of its faults would evict
    // the other block, forever.
    explicit Rolling(const ProtocolEnv &env) : BlockProtocol(env, rolling_policy(env)), capacity_(env.config->rolling_size) {
        assert(capacity_ >= 2);
    }
    const char *name() const override { return "rolling"; }

    void context_created(ReleaseGroup &c) override {
        auto *l = new DirtyList;
        l->capacity = static_cast<uint32_t>(capacity_);
        // One spare slot: the newest entry is in before the oldest leaves.
        l->entries = new Entry[capacity_ + 1];
        c.protocol_state = l;
    }

    void context_destroyed(ReleaseGroup &c) override {
        auto *l = static_cast<DirtyList *>(c.protocol_state);
        if (!l) return;
        delete[] l->entries;
        delete l;
        c.protocol_state = nullptr;
    }

protected:
    // In the fault handler: no allocation, only the context's futex lock.
    void dirtied(SharedObject &r, uint32_t block) override {
        ReleaseGroup *c = r.group;
        auto *l = c ? static_cast<DirtyList *>(c->protocol_state) : nullptr;
        if (!l || !kernels_expected()) return;
        Entry victim{};
        bool evict = false;
        {
            os::FutexGuard g(c->protocol_lock);
            const Entry e{&r, r.id, r.generation, block};
            if (l->sent.contains(e)) return;
            l->entries[(l->head + l->count) % (l->capacity + 1)] = e;
            if (++l->count > l->capacity) {
                victim = l->entries[l->head];
                l->head = (l->head + 1) % (l->capacity + 1);
                --l->count;
                l->sent.insert(victim);
                evict = true;
            }
        }
        if (!evict) return;
        SharedObject &v = *victim.region;
        os::FutexGuard g(v.lock);
        // The victim may have been flushed, freed or reused meanwhile.
        if (v.live.load() && v.id == victim.id && v.generation == victim.generation && v.blocks &&
            victim.block < v.nblocks) {
            flush_block_async(v, victim.block);
            stats().add(Counter::evictions);
        }
    }

    void released(ReleaseGroup &c) override {
        auto *l = static_cast<DirtyList *>(c.protocol_state);
        if (!l) return;
        os::FutexGuard g(c.protocol_lock);
        l->head = l->count = 0;  // every block is Invalid now
        l->sent.clear();
    }

private:
    size_t capacity_;
};

}  // namespace

std::unique_ptr<Protocol> make_rolling(const ProtocolEnv &env) { return std::make_unique<Rolling>(env); }

}  // namespace adsm
