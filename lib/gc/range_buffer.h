// A growable array of address ranges in private anonymous memory, never the
// C library's heap: the collector fills and reads it while the other
// threads are stopped, and a stopped thread may hold the allocator's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "os/vm.h"

namespace adsm::gc {

struct Range {
    uintptr_t lo = 0;  // [lo, hi)
    uintptr_t hi = 0;
};

class RangeBuffer {
public:
    RangeBuffer() = default;
    RangeBuffer(const RangeBuffer &) = delete;
    RangeBuffer &operator=(const RangeBuffer &) = delete;
    ~RangeBuffer() {
        if (data_) os::unmap(data_, cap_ * sizeof(Range));
    }

    // False when memory for it cannot be had; the range is then dropped.
    bool push(uintptr_t lo, uintptr_t hi) {
        if (hi <= lo) return true;
        if (n_ == cap_ && !grow()) return false;
        data_[n_++] = Range{lo, hi};
        return true;
    }
    bool pop(Range *r) {
        if (!n_) return false;
        *r = data_[--n_];
        return true;
    }
    // Moves the newest `n` entries to `to`: constant work per entry moved
    // (taking the oldest would move the rest down each time).
    // False when `to` could not grow: some were dropped.
    bool give(RangeBuffer &to, size_t n) {
        if (n > n_) n = n_;
        bool all = true;
        for (size_t i = n_ - n; i < n_; ++i) all &= to.push(data_[i].lo, data_[i].hi);
        n_ -= n;
        return all;
    }
    // Moves the oldest `n` entries to `to`.  A depth-first mark leaves the
    // biggest pieces of work at the bottom of its stack (a tree's subtrees
    // near the root): those are the ones worth sharing.
    bool give_oldest(RangeBuffer &to, size_t n) {
        if (n > n_) n = n_;
        bool all = true;
        for (size_t i = 0; i < n; ++i) all &= to.push(data_[i].lo, data_[i].hi);
        memmove(data_, data_ + n, (n_ - n) * sizeof(Range));
        n_ -= n;
        return all;
    }
    void clear() { n_ = 0; }
    // Entry i becomes [lo, hi) (the buffer's own entries, changed in place).
    void set(size_t i, uintptr_t lo, uintptr_t hi) {
        if (i < n_) data_[i] = Range{lo, hi};
    }
    void truncate(size_t n) {
        if (n < n_) n_ = n;
    }
    size_t size() const { return n_; }
    const Range &operator[](size_t i) const { return data_[i]; }
    const Range *begin() const { return data_; }
    const Range *end() const { return data_ + n_; }

    // Room for `n` ranges without growing (taken before the world stops).
    bool reserve(size_t n) {
        while (cap_ < n)
            if (!grow()) return false;
        return true;
    }

private:
    bool grow() {
        size_t cap = cap_ ? cap_ * 2 : 256;
        void *p = os::map_anon(cap * sizeof(Range), PROT_READ | PROT_WRITE);
        if (p == MAP_FAILED) return false;
        if (data_) {
            memcpy(p, data_, n_ * sizeof(Range));
            os::unmap(data_, cap_ * sizeof(Range));
        }
        data_ = static_cast<Range *>(p);
        cap_ = cap;
        return true;
    }

    Range *data_ = nullptr;
    size_t n_ = 0;
    size_t cap_ = 0;
};

}  // namespace adsm::gc
