#include "gc/chunk.h"

#include <new>

#include "memory/context.h"
#include "os/vm.h"

namespace adsm::gc {

namespace {
size_t meta_bytes(uint32_t npages) { return os::page_up(sizeof(Chunk) + npages * sizeof(Page)); }
uint64_t calls_of(const Context *owner) { return owner ? owner->calls.load(std::memory_order_acquire) : 0; }
}  // namespace

bool Chunk::kernel_may_have_written() const { return kernel_open || calls_of(owner) != calls_seen; }

bool Chunk::note_kernel_calls() {
    uint64_t calls = calls_of(owner);
    // (Not unsynced_calls: a launch counts its call a moment before that.)
    bool open = owner && owner->synced_calls.load(std::memory_order_acquire) < calls;
    bool written = kernel_open || calls != calls_seen;
    calls_seen = calls;
    kernel_open = open;
    return written;
}

Chunk *new_chunk_meta(uint32_t npages) {
    void *p = os::map_anon(meta_bytes(npages), PROT_READ | PROT_WRITE);
    if (p == MAP_FAILED) return nullptr;
    static_assert(sizeof(Chunk) % alignof(Page) == 0);
    Chunk *c = new (p) Chunk;
    c->pages = reinterpret_cast<Page *>(c + 1);
    for (uint32_t i = 0; i < npages; ++i) new (&c->pages[i]) Page{}, c->pages[i].chunk = c;
    c->npages = npages;
    return c;
}

void free_chunk_meta(Chunk *c) {
    if (c->device_copy) os::unmap(c->device_copy, c->bytes);
    os::unmap(c, meta_bytes(c->npages));
}

bool ChunkMap::init(uintptr_t base, uint64_t size) {
    size_t n = (size + kChunkBytes - 1) >> kChunkShift;
    void *p = os::map_anon(n * sizeof(std::atomic<Chunk *>), PROT_READ | PROT_WRITE, true);
    if (p == MAP_FAILED) return false;
    slots_ = static_cast<std::atomic<Chunk *> *>(p);
    base_ = base;
    size_ = size;
    return true;
}

void ChunkMap::set(const Chunk &c, Chunk *value) {
    for (uintptr_t a = c.base; a < c.base + c.bytes; a += kChunkBytes)
        slots_[(a - base_) >> kChunkShift].store(value, std::memory_order_release);
}

}  // namespace adsm::gc
