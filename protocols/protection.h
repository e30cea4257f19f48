// What the CPU may do with shared memory: changes of protection in the
// user view, with their errors, for every protocol (and the memory manager's
// device allocations).  Async-signal-safe: the fault handler changes protections.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/shared_object.h"
#include "support/status.h"

namespace adsm {

// [at, at+len) of the window's user view (whole pages).
Status protect_range(uintptr_t at, size_t len, int prot);
// Blocks [first, last) of r.
Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot);
// One page of r, counted from its start.
Status protect_page(SharedObject &r, size_t page, int prot);

// Ranges given one protection, neighbours joined into one change: a hold
// over every object changes thousands of small adjacent ones, and each
// mprotect is a walk of the mappings and a flush of every core's TLB.
// Objects come in the region table's order, not the addresses', so runs
// are kept pending until flush() (or until there are kMaxRuns of them).
// Async-signal-safe, no allocation.
class ProtectionRuns {
public:
    explicit ProtectionRuns(int prot) : prot_(prot) {}
    ProtectionRuns(const ProtectionRuns &) = delete;
    ProtectionRuns &operator=(const ProtectionRuns &) = delete;
    // [at, at+len), whole pages, disjoint from the others: joins the
    // pending runs it touches.
    void add(uintptr_t at, size_t len);
    // Makes what is pending; the first error of all the changes made.
    Status flush();

private:
    static constexpr size_t kMaxRuns = 64;
    struct Run {
        uintptr_t at;
        size_t len;
    };
    void make(const Run &run);

    int prot_;
    Run runs_[kMaxRuns];
    size_t count_ = 0;
    Status first_error_ = adsmSuccess;
};

}  // namespace adsm
