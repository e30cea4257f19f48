#include "interpose/cuda_legacy_launch.h"

#include <cstring>

namespace adsm::interpose {

void LegacyLaunchSetup::reset() {
    std::lock_guard<std::mutex> g(mu_);
    shaped_ = false;
    block_[0] = block_[1] = block_[2] = 1;
    shared_ = 0;
    params_.clear();
}

void LegacyLaunchSetup::set_block(unsigned x, unsigned y, unsigned z) {
    std::lock_guard<std::mutex> g(mu_);
    block_[0] = x, block_[1] = y, block_[2] = z;
    shaped_ = true;
}

void LegacyLaunchSetup::set_shared(unsigned bytes) {
    std::lock_guard<std::mutex> g(mu_);
    shared_ = bytes;
}

bool LegacyLaunchSetup::set_size(size_t bytes) {
    if (bytes > kMostBytes) return false;
    std::lock_guard<std::mutex> g(mu_);
    params_.resize(bytes);
    return true;
}

bool LegacyLaunchSetup::set(size_t offset, const void *value, size_t bytes) {
    if (offset > kMostBytes || bytes > kMostBytes - offset) return false;
    std::lock_guard<std::mutex> g(mu_);
    // (Set before its size, or past it, the buffer reaches as far as what was set.)
    if (params_.size() < offset + bytes) params_.resize(offset + bytes);
    if (bytes) memcpy(params_.data() + offset, value, bytes);
    return true;
}

bool LegacyLaunchSetup::take(Launch *out) const {
    std::lock_guard<std::mutex> g(mu_);
    if (!shaped_) return false;
    memcpy(out->block, block_, sizeof block_);
    out->shared = shared_;
    out->params = params_;
    return true;
}

}  // namespace adsm::interpose
