// Freed blocks of the malloc family, kept whole for the next malloc of
// about their size.  A shared object freed and made again costs fresh pages
// on both sides each time (the mirror's and the device's, made at first
// touch and given back at the free), where the C library hands the same
// warm pages out again: a program that mallocs a buffer per file or per
// step paid them at every one (`file` over /usr/bin ran four times slower).
//
// A kept block keeps its pages, its device memory and its block states,
// with a size of 0: every copy stops before it (a release moves none of
// it), and every lookup fails on it as on a freed block (a double free is
// still reported).  The Manager keeps and reuses blocks (Manager::free and
// Manager::alloc); this is the list, bounded in blocks and bytes, oldest
// first.  A malloc takes a block its own context freed first, else one
// another context freed on the same device (a pipeline's buffers are
// malloc'd by one thread and freed by another).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace adsm {

class Device;
struct Context;
struct Region;

class KeptBlocks {
public:
    static constexpr int kMax = 8;

    struct Entry {
        Region *r = nullptr;
        uint32_t generation = 0;  // r's, when it was kept: a slot freed since is another object
        Context *owner = nullptr;
        uint64_t span = 0;
        const Device *device = nullptr;  // where its memory is
    };

    // At most `max_bytes` of spans kept (0: none).
    explicit KeptBlocks(uint64_t max_bytes) : max_bytes_(max_bytes) {}

    // Whether a block of `span` bytes may be kept at all.
    bool takes(uint64_t span) const { return span <= max_bytes_; }
    // Keeps e; the entries it pushes out to stay within the bounds, oldest
    // first, go to out[] (room for kMax): returns how many.
    int add(const Entry &e, Entry *out);
    // Takes the smallest kept block of `owner` whose span holds `span`
    // bytes and is less than twice that (a small malloc must not hold a
    // large block's pages), else the smallest such of another owner on
    // `device`; false if none.
    bool take(const Context *owner, const Device *device, uint64_t span, Entry *out);
    // Takes every kept block into out[] (room for kMax): returns how many.
    int take_all(Entry *out);

private:
    Entry remove(int i);  // mu_ held

    std::mutex mu_;
    Entry kept_[kMax];
    int n_ = 0;
    uint64_t bytes_ = 0;
    const uint64_t max_bytes_;
};

}  // namespace adsm
