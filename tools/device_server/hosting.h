// What serves one client's device: its memory at the client's window
// addresses, its kernels and its streams.  A simulated device is served in
// the server's own process (sim_hosting.h); any other back-end runs in a
// process of the client's own (worker_hosting.h), since its memory or its
// kernels must sit at the window's addresses, where another client's
// window may sit too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "backend/device.h"
#include "backend/remote/wire.h"
#include "device_server/options.h"
#include "support/status.h"

namespace adsm::server {

class Hosting {
public:
    virtual ~Hosting() = default;

    // Device memory for the window [base, base+size); says the capacity and
    // whether the memory is staged (remote::kStagedMemory) in *reply.
    virtual Status attach(uint64_t base, uint64_t size, remote::Reply *reply) = 0;
    // Committed, the range reads as zeros (remote::kZeroedCommits).
    virtual Status commit(uint64_t addr, uint64_t len) = 0;
    virtual void decommit(uint64_t addr, uint64_t len) = 0;
    // Where the client's RMA reaches the committed byte at addr: the device
    // memory itself, or its staging copy.
    virtual uint8_t *exposed(uint64_t addr) = 0;
    virtual Status fill(uint64_t addr, uint8_t value, uint64_t len) = 0;
    // Staged memory only: the staging copy to the device and back.
    virtual Status push(uint64_t addr, uint64_t len) = 0;
    virtual Status pull(uint64_t addr, uint64_t len) = 0;

    // GPU code of the client's own (kGpuCode): part of its module m's
    // image, the device loading it with the last part; a kernel of one,
    // whose parameter sizes go in *reply.
    virtual Status module_part(const remote::ModuleBody &m, bool last) = 0;
    virtual Status function(const remote::FunctionBody &f, remote::Reply *reply) = 0;
    // The program's sizes for such a kernel's parameters, where the driver
    // knows their number only; launches of it are laid out by them.
    virtual Status declare(const remote::DeclareBody &d) = 0;

    virtual Status launch(const remote::LaunchBody &l) = 0;
    // Waits for the client's stream; calls `waiting` every few tens of
    // milliseconds meanwhile.
    virtual Status sync(uint32_t stream, const std::function<void()> &waiting) = 0;
    // Ends what the device runs for this client at once (the client is
    // gone, or the server stops): a sync under way returns.
    virtual void abandon() = 0;
    // The kernels that ran since the last call, with the client's streams.
    using SpanSeen = Device::KernelSpanSeen;
    virtual void take_spans(const SpanSeen &seen) = 0;
};

// The hosting --device asks for.
std::unique_ptr<Hosting> make_hosting(const Options &options);
// A push or pull where device memory is exposed directly: the client
// should not have asked.
Status nothing_staged();
// A module where the device runs host functions.
Status no_gpu_code(const char *device);

}  // namespace adsm::server
