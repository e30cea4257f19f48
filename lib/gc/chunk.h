// The heap's unit of memory: a chunk is one shared region of the runtime,
// aligned to kChunkBytes so that any address finds its chunk with a shift.
// A normal chunk is cut into pages, each either empty, holding objects of
// one size class, or part of one large object; a huge chunk holds one
// object.  All metadata lives outside the chunk, in private memory: the
// collector never writes into shared memory, whose copies the coherence
// protocols own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gc/size_classes.h"

namespace adsm {
struct Region;
struct Context;
}  // namespace adsm

namespace adsm::gc {

constexpr size_t kChunkShift = 21;
constexpr size_t kChunkBytes = size_t(1) << kChunkShift;  // the CUDA granularity on an H100, too
constexpr unsigned kPagesPerChunk = kChunkBytes / kPageBytes;
constexpr size_t kMaxLarge = kChunkBytes / 2;  // larger objects get a chunk of their own

enum class PageKind : uint8_t {
    empty,  // holds nothing
    small,  // objects of one size class
    large,  // the first page of a large object
    tail,   // a later page of a large object
    reserved,  // never used: the window's first page (see Heap::grow)
    kernel,    // part of a kernel heap, whose objects its arena knows (kernel_heap.h)
};

struct ThreadCache;
struct Space;
struct KernelArena;

struct Chunk;

// Marking reads the first two cache lines for every pointer into the page
// (its kind, class, allocated and marked objects); the rest is for
// allocation and sweeping.  With the fields in declaration order, a 208-byte
// Page spread those over three or four lines.
struct alignas(64) Page {
    PageKind kind = PageKind::empty;
    uint8_t cls = 0;
    bool pointers = true;   // objects may hold pointers (scanned)
    uint8_t layout = 0;     // with pointers: how they are found (layouts.h); 0, every word is read
    bool dirty = false;     // has held objects since the chunk was made: reuse zeroes
    bool listed = false;
    uint32_t head = 0;      // tail: the index of its large page
    uint32_t npages = 0;    // large: pages the object spans
    // Set while the world is stopped: allocated objects, and marked ones.
    uint64_t live[kMaskWords] = {};
    size_t bytes = 0;       // large: the object's usable size
    Chunk *chunk = nullptr;
    std::atomic<uint64_t> mark[kMaskWords] = {};
    // Small pages: objects free for allocation.  While a thread cache owns
    // the page, its own mask is the truth and this one is stale; objects a
    // collection frees meanwhile go to `swept`, which the cache takes back.
    uint64_t free[kMaskWords] = {};
    std::atomic<uint64_t> swept[kMaskWords] = {};
    const uint64_t *cache_mask = nullptr;  // the owning cache's mask, or null
    KernelArena *arena = nullptr;  // kernel: its heap
    uint64_t drained = 0;  // the collection that last asked the write tracker about it
    Page *prev = nullptr;  // the partial list of its class (in its chunk's space)
    Page *next = nullptr;
};

struct alignas(64) Chunk {
    uintptr_t base = 0;
    size_t bytes = 0;         // kChunkBytes, or a huge object's span
    uint8_t *alias = nullptr; // the runtime's always-readable view of its host copy
    Region *region = nullptr;
    Context *owner = nullptr;
    Space *space = nullptr;   // the heap's part for owner
    uint32_t generation = 0;  // of the region slot
    bool huge = false;
    uint32_t empty_pages = 0;
    // No page below this one is empty: where a search for empty pages
    // starts.  (A heap of full chunks had every chunk scanned from its
    // first page, under the heap's lock, for each page a thread took.)
    uint32_t first_empty = 0;
    uint32_t npages = 0;      // Page entries (1 for a huge chunk)
    // Its owner's kernel calls as the last collection saw them (the world
    // stopped; at first, when it was made), for minor collections: a
    // kernel that may have run since may have written any of the chunk.
    uint64_t calls_seen = UINT64_MAX;  // none seen yet
    bool kernel_open = true;           // a call was unsynced then
    // Whether a kernel may have written it since: its owner called one
    // since, or one was unsynced then.
    bool kernel_may_have_written() const;
    // The same, taking the owner's calls as seen now.
    bool note_kernel_calls();

    // Set for one collection: blocks whose current copy is on the device,
    // and a copy of them read before the world stopped.
    uint8_t *device_copy = nullptr;
    uint64_t block_size = 0;     // 0: nothing on the device to read this time
    uint64_t device_blocks = 0;  // bit k: block k (a chunk has at most 64 blocks of interest)
    bool all_on_device = false;  // more blocks than bits, or the whole object (batch)
    uint32_t writes_seen = 0;    // its region's program_writes before the copy was read
    uint64_t calls_copied = 0;      // its owner's kernel calls before the copy was read
    bool held_when_copied = false;  // by a kernel's call (Heap::held)
    // A concurrent full collection's markers read device blocks of it, a
    // copy that may be older than the one the collection finishes with.
    bool device_at_start = false;

    Page *pages = nullptr;  // npages of them, right after the chunk's own fields

    uint8_t *alias_of(uintptr_t a) const { return alias + (a - base); }
    Page *page_of(uintptr_t a) {
        return huge ? &pages[0] : &pages[(a - base) >> kPageShift];
    }
    uintptr_t page_address(const Page *p) const { return base + (uintptr_t(p - pages) << kPageShift); }
    uint32_t page_index(const Page *p) const { return static_cast<uint32_t>(p - pages); }
};

// Chunk metadata in private memory; nullptr when there is none to be had.
Chunk *new_chunk_meta(uint32_t npages);
void free_chunk_meta(Chunk *c);

// From an address to its chunk, without a lock: one slot per kChunkBytes of
// the shared window.
class ChunkMap {
public:
    bool init(uintptr_t base, uint64_t size);
    Chunk *find(uintptr_t a) const {
        uintptr_t off = a - base_;
        if (off >= size_) return nullptr;
        return slots_[off >> kChunkShift].load(std::memory_order_acquire);
    }
    void set(const Chunk &c, Chunk *value);
    uintptr_t base() const { return base_; }
    uint64_t size() const { return size_; }

private:
    uintptr_t base_ = 0;
    uint64_t size_ = 0;
    std::atomic<Chunk *> *slots_ = nullptr;
};

}  // namespace adsm::gc
