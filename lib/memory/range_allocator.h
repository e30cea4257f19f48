// Carves page-aligned ranges out of the shared window.  Best fit with
// coalescing, O(log n) per operation.  Freed ranges wait in a FIFO
// quarantine before reuse, so that a stale or doubly freed pointer is
// recognised as freed rather than silently hitting a newer allocation.
// Not thread-safe: the address space serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <utility>

namespace adsm {

class RangeAllocator {
public:
    // quarantine_entries/bytes bound what waits before reuse.
    void init(uint64_t base, uint64_t size, size_t quarantine_entries = 1024,
              uint64_t quarantine_bytes = 256ull << 20);

    // Lowest-addressed range among the smallest that fit, starting at a
    // multiple of `align` (a power of two); false if none.
    bool allocate(uint64_t size, uint64_t *addr, uint64_t align = 1);
    void release(uint64_t addr, uint64_t size);

    uint64_t free_bytes() const { return free_bytes_; }   // excludes quarantine
    uint64_t quarantined_bytes() const { return quarantine_bytes_; }
    size_t free_ranges() const { return by_addr_.size(); }

private:
    void insert_free(uint64_t addr, uint64_t size);
    void erase_free(std::map<uint64_t, uint64_t>::iterator it);
    void drain_quarantine(size_t keep_entries, uint64_t keep_bytes);

    std::map<uint64_t, uint64_t> by_addr_;             // start -> size
    std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (size, start)
    std::deque<std::pair<uint64_t, uint64_t>> quarantine_;
    uint64_t free_bytes_ = 0;
    uint64_t quarantine_bytes_ = 0;
    size_t max_q_entries_ = 0;
    uint64_t max_q_bytes_ = 0;
};

}  // namespace adsm
