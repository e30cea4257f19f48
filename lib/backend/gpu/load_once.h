// A driver's table of entry points, loaded at most once per process: every
// caller gets the same table, or the same failure with the same words.
#pragma once

#include <mutex>
#include <string>

#include "support/status.h"

namespace adsm::gpu {

template <class Table>
class LoadOnce {
public:
    Status get(Status (*load)(Table *), const Table **out) {
        std::call_once(once_, [&] {
            status_ = load(&table_);
            if (status_ != adsmSuccess) failure_ = new std::string(last_detail());  // kept for the process
        });
        if (status_ != adsmSuccess) return fail(status_, "%s", failure_->c_str());
        *out = &table_;
        return adsmSuccess;
    }
    // The table as loaded so far (for describing the driver's errors).
    const Table &table() const { return table_; }

private:
    Table table_;
    Status status_ = adsmErrorNoDevice;
    std::string *failure_ = nullptr;
    std::once_flag once_;
};

}  // namespace adsm::gpu
