// One client of adsm-device-server, on its own thread: the handshake, then
// its requests, until it says bye, disconnects or sends something it may
// not.  It gets a device of its own (hosting.h), attached at the client's
// window addresses: device memory (of which only committed ranges are
// exposed for RMA, each under a random key on the client's own connection's
// domain) and a process that runs its kernels at those addresses, so its
// embedded pointers work and no other client can reach either.  All of it
// goes when the session ends.
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "backend/remote/fabric.h"
#include "backend/remote/wire.h"
#include "device_server/hosting.h"
#include "device_server/options.h"

namespace adsm::server {

class Session {
public:
    Session(const Options &options, const std::string &key, std::unique_ptr<remote::Endpoint> endpoint);
    ~Session();
    // The challenge and response; false (logged) for a stranger.
    bool authenticate();
    // Serves an authenticated client; returns when the session is over.
    void serve(std::atomic<bool> &stopping);
    // Tells an authenticated client the server has no room for it.
    void turn_away(unsigned max_clients);
    const std::string &peer() const { return peer_; }

private:
    const std::atomic<bool> *stopping_ = nullptr;
    Status handle(const remote::Request &r, remote::Reply *reply, bool *bye);
    Status attach(uint64_t base, uint64_t size, remote::Reply *reply);
    Status commit(uint64_t addr, uint64_t len, remote::Reply *reply);
    Status decommit(uint64_t addr, uint64_t len);
    Status sync(const remote::SyncBody &b, uint64_t seq);
    Status module_part(const remote::ModuleBody &m);
    Status function(const remote::FunctionBody &f, remote::Reply *reply);
    Status declare(const remote::DeclareBody &d);
    void send_spans(uint64_t seq);

    const Options &options_;
    const std::string &key_;
    std::unique_ptr<remote::Endpoint> ep_;
    std::string peer_;
    remote::ClientMemory memory_;
    std::unique_ptr<Hosting> device_;
    // The client's modules: images coming in (their totals and the next
    // offset each expects), those complete, and all their bytes.
    struct Incoming {
        uint64_t total, next;
    };
    std::map<uint32_t, Incoming> incoming_;
    std::set<uint32_t> modules_;
    uint64_t module_bytes_ = 0;
    // The request's failure is the device's answer, not the client's breach
    // of the protocol (which closes its connection).
    bool device_answered_ = false;
    std::map<uint64_t, uint64_t> keys_;  // committed range start -> its RMA key
};

// Logs a line with the server's name and the time.
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace adsm::server
