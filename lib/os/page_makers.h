// Makes the pages of fresh shared memory on several threads at once.  A
// page's first use costs its creation (zeroing, and on a virtual machine the
// host backing it): about 0.4-0.6 us per KiB on the hosts of the GPUs this
// runtime was measured on, most of what pinning fresh memory for a device
// costs, and one thread makes them one after another.  Made in parallel
// first, the pages are pinned (or touched) afterwards at the cost of the
// pinning alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm::os {

struct PageRun {
    void *addr;
    size_t len;
};

// Populates the runs for writing (MADV_POPULATE_WRITE) with up to `threads`
// threads, the caller among them, in pieces of at least `piece` bytes; less
// than two pieces' worth is made by the caller alone.  Threads it cannot
// start leave their share to the others.  Not for a signal handler.
void make_pages(const PageRun *runs, size_t n, unsigned threads, size_t piece);

}  // namespace adsm::os
