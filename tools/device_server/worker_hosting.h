// A device of a back-end other than sim for one client, in a process of
// the client's own (worker.h): the server started again with --worker.
// The window's memory is a memfd both processes map: the server exposes it
// for the client's RMA, the worker hands it to its back-end as the host
// mirror.  On an integrated device (cpu) it is the device memory itself;
// on a discrete one (a GPU) it is a staging copy that push and pull move to
// and from the device.  Requests go to the worker as the client sent them.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "device_server/hosting.h"

namespace adsm::server {

class WorkerHosting final : public Hosting {
public:
    explicit WorkerHosting(const Options &options) : options_(options) {}
    ~WorkerHosting() override;
    void abandon() override;

    Status attach(uint64_t base, uint64_t size, remote::Reply *reply) override;
    Status commit(uint64_t addr, uint64_t len) override;
    void decommit(uint64_t addr, uint64_t len) override;
    uint8_t *exposed(uint64_t addr) override { return memory_ + (addr - base_); }
    Status fill(uint64_t addr, uint8_t value, uint64_t len) override;
    Status push(uint64_t addr, uint64_t len) override;
    Status pull(uint64_t addr, uint64_t len) override;
    Status module_part(const remote::ModuleBody &m, bool last) override;
    Status function(const remote::FunctionBody &f, remote::Reply *reply) override;
    Status declare(const remote::DeclareBody &d) override;
    Status launch(const remote::LaunchBody &l) override;
    Status sync(uint32_t stream, const std::function<void()> &waiting) override;
    void take_spans(const SpanSeen &seen) override;

private:
    Status start(uint64_t size);
    // One request to the worker and its answer; `waiting` is called while
    // there is none yet.
    Status ask(remote::Op op, const void *body, size_t body_size, remote::Reply *reply,
               const std::function<void()> &waiting = nullptr);
    Status range(remote::Op op, uint64_t addr, uint64_t len);
    Status worker_ended();
    // A batch of kernel spans that came before a sync's answer; false if
    // it is not one.
    bool keep_spans(const uint8_t *msg, size_t n);

    const Options &options_;
    pid_t pid_ = -1;
    int socket_ = -1;
    int memfd_ = -1;
    uint8_t *memory_ = nullptr;
    uint64_t base_ = 0, size_ = 0;
    uint64_t seq_ = 0;
    bool staged_ = false;
    std::unique_ptr<uint8_t[]> inbox_{new uint8_t[sizeof(remote::SpanBatch)]};
    std::vector<remote::WireSpan> spans_;  // the last sync's, in the server's clock
    bool ended_ = false;
};

}  // namespace adsm::server
