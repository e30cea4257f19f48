// The collected heap's memory: chunks taken from the memory manager as
// shared regions of a context (so that the context's adsmCall releases the
// objects in them), pages handed to thread caches, large objects as page
// runs, huge ones as chunks of their own.  Every function here runs with
// the heap's lock held (lock()).
//
// A chunk born before its context's last unsynced call belongs to the
// device until that context syncs: the allocator leaves it alone (writing
// there would wait for the kernel) and takes pages from chunks born since.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "gc/chunk.h"
#include "gc/layouts.h"
#include "gc/size_classes.h"
#include "support/status.h"

namespace adsm {
class Manager;
class RegionTable;
class AddressSpace;
}  // namespace adsm

namespace adsm::gc {

struct HeapLimits {
    uint64_t max_heap = 0;  // bytes of chunks at most; 0: as much as the window holds
};

// Pages with free objects are listed by what their objects hold: none,
// pointers anywhere, or pointers a layout describes (one list per layout).
constexpr unsigned kPageLists = 2 + kMaxLayouts;
inline unsigned page_list(bool pointers, unsigned layout) { return layout ? 1 + layout : pointers; }

// A context's part of the heap.
struct Space {
    Context *ctx = nullptr;
    std::vector<Chunk *> chunks;
    Page *partial[kPageLists][kClasses] = {};  // [page_list][class]: pages with free objects
};

class Heap {
public:
    Heap(Manager &manager, RegionTable &table, AddressSpace &space, HeapLimits limits);
    Status init();

    std::mutex &lock() { return mu_; }

    Space *space_for(Context *ctx);
    const std::vector<Space *> &spaces() const { return spaces_; }

    // A page of class `cls` with free objects, taken off the lists for a
    // thread cache, or nullptr when the heap cannot grow.  Objects of a
    // layout (layouts.h) share pages with no others.
    Page *take_page(Space &s, unsigned cls, bool pointers, unsigned layout = 0);
    // Gives a cache's page back; `free` is what the cache had not handed out.
    void return_page(Page *p, const uint64_t *free);
    // A large (or huge) object of `bytes`; *zero says whether the caller must
    // clear it (it reuses pages that held objects).  nullptr when the heap
    // cannot grow.
    void *alloc_large(Space &s, size_t bytes, bool pointers, bool *zero, unsigned layout = 0);

    Chunk *chunk_of(uintptr_t a) const { return map_.find(a); }
    bool held(const Chunk &c) const;
    const std::vector<Chunk *> &chunks() const { return chunks_; }
    const ChunkMap &map() const { return map_; }
    uint64_t heap_bytes() const { return heap_bytes_; }
    void set_max_heap(uint64_t bytes) { limits_.max_heap = bytes; }
    uint64_t max_heap() const { return limits_.max_heap; }

    // After a collection swept: pages back on their lists.
    void rebuild_lists();
    // Frees huge chunks whose object died and empty chunks beyond `keep`
    // spare bytes; call with the world running.
    void release_chunks(const std::vector<Chunk *> &dead, uint64_t keep);

    // Bytes handed to caches and large objects since the last reset.
    uint64_t handed_out = 0;

    static uint64_t full_mask(const SizeClass &c, unsigned w) {
        if (c.objects >= (w + 1) * 64) return ~uint64_t(0);
        if (c.objects <= w * 64) return 0;
        return (uint64_t(1) << (c.objects - w * 64)) - 1;
    }
    void make_empty(Chunk &c, Page &p);
    // Onto (off) its class's partial list in its chunk's space.
    void list_page(Page *p);
    void unlist_page(Page *p);

private:
    Chunk *grow(Space &s, size_t bytes, bool huge);
    Page *empty_run(Space &s, uint32_t npages, Chunk **in);
    Page *first_free_page(Chunk &c);

    Manager &manager_;
    RegionTable &table_;
    AddressSpace &space_;
    HeapLimits limits_;
    std::mutex mu_;
    ChunkMap map_;
    std::vector<Chunk *> chunks_;
    std::vector<Space *> spaces_;
    uint64_t heap_bytes_ = 0;
};

}  // namespace adsm::gc
