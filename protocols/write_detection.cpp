#include "protocols/write_detection.h"

#include <sys/mman.h>

#include "protocols/protection.h"

namespace adsm {

using namespace block;

int WriteDetection::protection(uint8_t state) const {
    switch (state) {
    case kInvalid: return PROT_NONE;
    case kReadOnly: return PROT_READ;
    default: return dirty_protection();
    }
}

int WriteDetection::dirty_protection() const { return PROT_READ | PROT_WRITE; }

Status WriteDetection::agree(SharedObject &r, uint32_t k, size_t) {
    return protect_blocks(r, k, k + 1, protection(r.state(k)));
}

Status WriteDetection::reopen(SharedObject &r, uint32_t first, uint32_t last) {
    return protect_blocks(r, first, last, protection(kDirty));
}

// Stop writers, then copy: a later write faults and dirties it again.  A
// block whose protection cannot change alone just stays Dirty.
bool WriteDetection::rewatch(SharedObject &r, uint32_t k, bool *written) {
    if (protect_blocks(r, k, k + 1, protection(kReadOnly)) != adsmSuccess) return false;
    r.set_state(k, kReadOnly);
    *written = true;
    return true;
}

namespace {

// A write fault says which block turned Dirty, not where in it: the
// release sends the whole block.
class FirstWriteFaults final : public WriteDetection {
public:
    bool sends_dirty_whole() const override { return true; }
};

}  // namespace

std::unique_ptr<WriteDetection> fault_on_first_write() { return std::make_unique<FirstWriteFaults>(); }

}  // namespace adsm
