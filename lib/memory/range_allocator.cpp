#include "memory/range_allocator.h"

namespace adsm {

void RangeAllocator::init(uint64_t base, uint64_t size, size_t quarantine_entries, uint64_t quarantine_bytes) {
    by_addr_.clear();
    by_size_.clear();
    quarantine_.clear();
    free_bytes_ = 0;
    quarantine_bytes_ = 0;
    max_q_entries_ = quarantine_entries;
    max_q_bytes_ = quarantine_bytes;
    if (size) insert_free(base, size);
}

void RangeAllocator::erase_free(std::map<uint64_t, uint64_t>::iterator it) {
    by_size_.erase({it->second, it->first});
    free_bytes_ -= it->second;
    by_addr_.erase(it);
}

void RangeAllocator::insert_free(uint64_t addr, uint64_t size) {
    auto next = by_addr_.lower_bound(addr);
    if (next != by_addr_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == addr) {
            addr = prev->first;
            size += prev->second;
            erase_free(prev);
        }
    }
    if (next != by_addr_.end() && addr + size == next->first) {
        size += next->second;
        erase_free(next);
    }
    by_addr_.emplace(addr, size);
    by_size_.emplace(size, addr);
    free_bytes_ += size;
}

bool RangeAllocator::allocate(uint64_t size, uint64_t *addr, uint64_t align) {
    if (size == 0) return false;
    if (align == 0) align = 1;
    if (align & (align - 1)) return false;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // The smallest ranges first; with an alignment, the first of them
        // that holds an aligned start.
        for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end(); ++it) {
            uint64_t start = it->second, avail = it->first;
            uint64_t at = (start + align - 1) & ~(align - 1);
            if (at - start > avail - size) continue;
            erase_free(by_addr_.find(start));
            if (at > start) insert_free(start, at - start);
            if (start + avail > at + size) insert_free(at + size, start + avail - at - size);
            *addr = at;
            return true;
        }
        // Out of room: reuse quarantined ranges rather than fail.
        if (quarantine_.empty()) break;
        drain_quarantine(0, 0);
    }
    return false;
}

void RangeAllocator::release(uint64_t addr, uint64_t size) {
    quarantine_.emplace_back(addr, size);
    quarantine_bytes_ += size;
    drain_quarantine(max_q_entries_, max_q_bytes_);
}

void RangeAllocator::drain_quarantine(size_t keep_entries, uint64_t keep_bytes) {
    while (!quarantine_.empty() && (quarantine_.size() > keep_entries || quarantine_bytes_ > keep_bytes)) {
        auto [a, s] = quarantine_.front();
        quarantine_.pop_front();
        quarantine_bytes_ -= s;
        insert_free(a, s);
    }
}

}  // namespace adsm
