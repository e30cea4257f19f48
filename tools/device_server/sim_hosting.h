// A simulated device for one client, in the server's process: its memory
// is host memory, exposed for RMA directly, and its device process runs the
// client's kernels at the window's addresses.
#pragma once

#include <memory>

#include "backend/sim/sim_device.h"
#include "device_server/client_streams.h"
#include "device_server/hosting.h"

namespace adsm::server {

class SimHosting final : public Hosting {
public:
    explicit SimHosting(const Options &options) : options_(options) {}
    ~SimHosting() override;
    void abandon() override {
        if (device_) device_->end_device_process();
    }

    Status attach(uint64_t base, uint64_t size, remote::Reply *reply) override;
    Status commit(uint64_t addr, uint64_t len) override;
    void decommit(uint64_t addr, uint64_t len) override { device_->decommit(addr, len); }
    uint8_t *exposed(uint64_t addr) override { return device_->memory_at(addr); }
    Status fill(uint64_t addr, uint8_t value, uint64_t len) override { return device_->fill(addr, value, len); }
    Status push(uint64_t, uint64_t) override { return nothing_staged(); }
    Status pull(uint64_t, uint64_t) override { return nothing_staged(); }
    Status module_part(const remote::ModuleBody &, bool) override { return no_gpu_code("sim"); }
    Status function(const remote::FunctionBody &, remote::Reply *) override { return no_gpu_code("sim"); }
    Status declare(const remote::DeclareBody &) override { return no_gpu_code("sim"); }
    Status launch(const remote::LaunchBody &l) override;
    Status sync(uint32_t stream, const std::function<void()> &waiting) override;
    void take_spans(const SpanSeen &seen) override;

private:
    const Options &options_;
    std::unique_ptr<SimDevice> device_;
    ClientStreams streams_;
};

}  // namespace adsm::server
