// Runs of a chunk's pages that a predicate selects, as address ranges: what
// the collector arms for write tracking or asks the tracker about, one
// system call per run.  A large object's pages go as one.
#pragma once

#include <cstdint>

#include "gc/chunk.h"

namespace adsm::gc {

// Calls f(lo, hi) for each run of c's pages for which selected(page) holds.
// Runs at most gap_pages apart go as one, the pages between included.
template <class Selected, class F>
void for_each_page_run(Chunk &c, uint32_t gap_pages, Selected &&selected, F &&f) {
    if (c.huge) {
        if (selected(c.pages[0])) f(c.base, c.base + c.bytes);
        return;
    }
    uint32_t run = 0, end = 0;  // [run, end): the run so far, selected pages at both ends
    bool any = false;
    auto flush = [&] {
        if (any) f(c.base + (uintptr_t(run) << kPageShift), c.base + (uintptr_t(end) << kPageShift));
        any = false;
    };
    for (uint32_t i = 0; i < c.npages;) {
        Page &p = c.pages[i];
        uint32_t n = p.kind == PageKind::large && p.npages ? p.npages : 1;
        if (selected(p)) {
            if (any && i - end > gap_pages) flush();
            if (!any) run = i;
            any = true;
            end = i + n;
        }
        i += n;
    }
    flush();
}

}  // namespace adsm::gc
