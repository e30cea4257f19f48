#include "protocols/protection.h"

#include <cstring>

#include "os/error_text.h"
#include "os/vm.h"

namespace adsm {

Status protect_range(uintptr_t at, size_t len, int prot) {
    if (int e = os::protect(reinterpret_cast<void *>(at), len, prot); e != 0)
        return fail(adsmErrorMemoryAllocation, "cannot change the protection of %zu bytes of shared memory at %p: %s", len,
                    reinterpret_cast<void *>(at), os::error_text(-e));
    return adsmSuccess;
}

Status protect_blocks(SharedObject &r, uint32_t first, uint32_t last, int prot) {
    size_t b = r.block_begin(first), e = r.block_end(last - 1);
    return protect_range(r.host + b, e - b, prot);
}

Status protect_page(SharedObject &r, size_t page, int prot) {
    return protect_range(r.host + page * os::kPageSize, os::kPageSize, prot);
}

void ProtectionRuns::add(uintptr_t at, size_t len) {
    size_t before = count_, after = count_;  // the runs ending at `at`, starting at its end
    for (size_t i = 0; i < count_; ++i) {
        if (runs_[i].at + runs_[i].len == at) before = i;
        if (at + len == runs_[i].at) after = i;
    }
    if (before != count_ && after != count_) {
        runs_[before].len += len + runs_[after].len;
        runs_[after] = runs_[--count_];
    } else if (before != count_) {
        runs_[before].len += len;
    } else if (after != count_) {
        runs_[after].at = at;
        runs_[after].len += len;
    } else {
        if (count_ == kMaxRuns) make(runs_[--count_]);
        runs_[count_++] = {at, len};
    }
}

void ProtectionRuns::make(const Run &run) {
    Status s = protect_range(run.at, run.len, prot_);
    if (first_error_ == adsmSuccess) first_error_ = s;
}

Status ProtectionRuns::flush() {
    for (size_t i = 0; i < count_; ++i) make(runs_[i]);
    count_ = 0;
    return first_error_;
}

}  // namespace adsm
