#include "device_server/sim_hosting.h"

#include "device_server/kernels.h"

namespace adsm::server {

SimHosting::~SimHosting() {
    if (device_) streams_.destroy_all(*device_);
    device_.reset();  // its device process ends with it
}

Status SimHosting::attach(uint64_t base, uint64_t size, remote::Reply *reply) {
    Config config;
    config.sim_memory = options_.memory;
    auto device = std::make_unique<SimDevice>(config);
    device->keep_apart();  // no other client's memory reaches its device process
    // As large as the window, backed only where the client writes: the
    // capacity is enforced at commit.
    if (Status s = device->attach_window(base, size, -1, nullptr); s != adsmSuccess) return s;
    device_ = std::move(device);
    reply->capacity = options_.memory;
    reply->flags = 0;
    return adsmSuccess;
}

Status SimHosting::commit(uint64_t addr, uint64_t len) {
    if (Status s = device_->commit(addr, len); s != adsmSuccess) return s;
    // (Pages given back at a decommit read as zeros, but only ranges of
    // 64 KiB or more give theirs back.)
    if (Status s = device_->fill(addr, 0, len); s != adsmSuccess) {
        device_->decommit(addr, len);
        return s;
    }
    return adsmSuccess;
}

Status SimHosting::launch(const remote::LaunchBody &l) {
    const KernelInfo *k = nullptr;
    if (Status s = registered_kernel(l, &k); s != adsmSuccess) return s;
    StreamId id;
    if (Status s = streams_.get(*device_, l.stream, &id); s != adsmSuccess) return s;
    return device_->launch(id, launch_of(*k, l));
}

Status SimHosting::sync(uint32_t stream, const std::function<void()> &waiting) {
    StreamId id;
    return streams_.find(stream, &id) ? device_->synchronize(id, waiting) : adsmSuccess;
}

void SimHosting::take_spans(const SpanSeen &seen) {
    device_->take_kernel_spans([&](const char *name, uint32_t stream, uint64_t start, uint64_t end, bool failed) {
        seen(name, streams_.client_number(stream), start, end, failed);
    });
}

}  // namespace adsm::server
