// The deprecated launch: cuFuncSetBlockShape, cuFuncSetSharedSize and
// cuParamSet* leave a function's block shape, shared memory and argument
// buffer with the driver, and cuLaunch, cuLaunchGrid or cuLaunchGridAsync
// launch from them.  Routed, each setting goes to the driver first and is
// kept here once the driver took it, and the launch goes through the
// runtime with the buffer as `extra` packs one (cuda_packed_params.h).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace adsm::interpose {

class LegacyLaunchSetup {
public:
    static constexpr size_t kMostBytes = 32764;  // the driver's limit on a kernel's parameters

    // What one launch takes, copied under the lock.
    struct Launch {
        unsigned block[3] = {1, 1, 1};
        unsigned shared = 0;
        std::vector<char> params;  // the argument buffer (its size: what cuParamSetSize said, or what was set)
    };

    // A handle the driver gives out again (a new module's function) starts afresh.
    void reset();
    void set_block(unsigned x, unsigned y, unsigned z);
    void set_shared(unsigned bytes);
    // False past kMostBytes.
    bool set_size(size_t bytes);
    bool set(size_t offset, const void *value, size_t bytes);
    // False when no block shape was ever set.
    bool take(Launch *out) const;

private:
    mutable std::mutex mu_;
    bool shaped_ = false;
    unsigned block_[3] = {1, 1, 1};
    unsigned shared_ = 0;
    std::vector<char> params_;
};

}  // namespace adsm::interpose
