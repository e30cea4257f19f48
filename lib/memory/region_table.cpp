#include "memory/region_table.h"

#include <sys/mman.h>

#include <new>

#include "os/vm.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace adsm {

Status RegionTable::init(uintptr_t base, uint64_t size) {
    base_ = base;
    pages_ = size >> os::kPageShift;
    size_t bytes = os::page_up(pages_ * sizeof(uint32_t));
    void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return fail(adsmErrorInitialization, "cannot map the region page map (%zu bytes)", bytes);
    map_ = static_cast<std::atomic<uint32_t> *>(m);
    return adsmSuccess;
}

RegionTable::~RegionTable() {
    if (map_) munmap(map_, os::page_up(pages_ * sizeof(uint32_t)));
    const size_t bytes = sizeof(Region) << kChunkShift;
    for (auto &c : chunks_)
        if (Region *m = c.load(std::memory_order_relaxed)) {
#if defined(__SANITIZE_ADDRESS__)
            __lsan_unregister_root_region(m, bytes);
#endif
            munmap(m, bytes);
        }
}

Region *RegionTable::create() {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t id;
    if (!free_ids_.empty()) {
        id = free_ids_.back();
        free_ids_.pop_back();
    } else {
        id = next_id_;
        unsigned c = id >> kChunkShift;
        if (c >= kMaxChunks) return nullptr;
        if (!chunks_[c].load(std::memory_order_relaxed)) {
            size_t bytes = sizeof(Region) << kChunkShift;
            void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) return nullptr;
#if defined(__SANITIZE_ADDRESS__)
            // Regions point to their block tables (heap memory): the leak
            // checker must read the slots, or a region still live at exit
            // (a collector chunk) reports its table as lost.
            __lsan_register_root_region(m, bytes);
#endif
            chunks_[c].store(static_cast<Region *>(m), std::memory_order_release);
        }
        // Each slot is built when first handed out: building a whole chunk
        // up front touched 13 MiB and took 5 ms of the program's first
        // allocation.  No reader sees a slot before its id is in the map.
        new (slot(id)) Region();
        ++next_id_;
    }
    // The slot may still be read by a lock-free lookup that raced with its
    // previous free, so it is reset in place, never reconstructed.
    Region *r = slot(id);
    r->reset_fields();
    r->id = id;
    r->generation += 1;
    live_.fetch_add(1, std::memory_order_relaxed);
    return r;
}

void RegionTable::destroy(Region *r) {
    r->live.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu_);
    free_ids_.push_back(r->id);
    live_.fetch_sub(1, std::memory_order_relaxed);
}

void RegionTable::map(const Region &r, uintptr_t start, size_t span) {
    uint64_t first = (start - base_) >> os::kPageShift, n = span >> os::kPageShift;
    for (uint64_t i = 0; i < n; ++i) map_[first + i].store(r.id, std::memory_order_release);
}

void RegionTable::unmap_freed(uintptr_t start, size_t span) {
    uint64_t first = (start - base_) >> os::kPageShift, n = span >> os::kPageShift;
    for (uint64_t i = 0; i < n; ++i) map_[first + i].store(kFreed, std::memory_order_release);
}

void RegionTable::clear(uintptr_t start, size_t span) {
    uint64_t first = (start - base_) >> os::kPageShift, n = span >> os::kPageShift;
    for (uint64_t i = 0; i < n; ++i) map_[first + i].store(0, std::memory_order_release);
}

RegionTable::Lookup RegionTable::lookup(uintptr_t addr, Region **out) const {
    if (addr < base_ || ((addr - base_) >> os::kPageShift) >= pages_) return Lookup::outside;
    uint32_t id = map_[(addr - base_) >> os::kPageShift].load(std::memory_order_acquire);
    if (id == 0) return Lookup::none;
    if (id == kFreed) return Lookup::freed;
    Region *r = slot(id);
    if (!r || !r->live.load(std::memory_order_acquire)) return Lookup::freed;
    if (!r->contains_host(addr) && !r->contains_dev(addr)) return Lookup::freed;
    *out = r;
    return Lookup::live;
}

}  // namespace adsm
