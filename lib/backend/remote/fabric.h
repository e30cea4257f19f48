// The remote device's transport: one reliable, connected libfabric message
// endpoint per client (FI_EP_MSG; the `tcp` provider unless told
// otherwise, so it runs on any network, verbs where there is one), with
// messages for requests and RMA for bulk data into memory the server
// registered.  No transport code of our own: this file only drives
// libfabric and turns its errors into ours.
//
// Each accepted connection gets a domain of its own, so memory the server
// registers for one client is not addressable from another's endpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/remote/handshake.h"
#include "support/status.h"

struct fid_fabric;
struct fid_domain;
struct fid_eq;
struct fid_cq;
struct fid_ep;
struct fid_pep;
struct fid_mr;
struct fi_info;
struct fi_context;
struct fi_cq_msg_entry;

namespace adsm::remote {

// The largest request or reply; bulk data goes by RMA.
constexpr size_t kMaxMessage = 64 * 1024;

class Endpoint final : public MessagePipe {
public:
    ~Endpoint() override;
    Status send(const void *data, size_t n) override;
    Status recv(void *data, size_t cap, size_t *got, int timeout_ms) override;

    // Memory the peer may read and write by RMA at offsets from `base`,
    // under `key` (chosen at random by the caller: a peer that does not
    // know it reaches nothing), until withdrawn.
    Status expose(void *base, size_t len, uint64_t key);
    void withdraw(uint64_t key);
    // RMA into or out of the peer's exposed memory, synchronous.
    Status write(const void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms);
    Status read(void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms);

    // Each wait polls the completion queue for up to `ns` before it sleeps
    // in the provider's wait: a reply that comes within it is seen at once
    // rather than after a wake-up (tens of microseconds each, several per
    // request and answer), for at most that much CPU per wait.  0: sleep at
    // once.
    void set_spin_ns(uint64_t ns) { spin_ns_ = ns; }
    // What a spin setting of kSpinAuto means here: kAutoSpinUs where the
    // machine has kAutoSpinCpus CPUs or more, else none.  A waiter that
    // spins takes a core from whoever must answer it: on two cores, two
    // loopback test programs at once (each with its server) ran up to 2.5
    // times slower spinning, while one alone answered 2 to 3 times sooner.
    static constexpr int kSpinAuto = -1;
    static constexpr unsigned kAutoSpinUs = 100, kAutoSpinCpus = 4;
    static unsigned spin_us(int setting);

    // The peer is gone (a shutdown event or a failed completion).
    bool closed() const { return closed_; }
    // Looks for a shutdown event now, for a waiter that receives nothing
    // meanwhile; then as closed().
    bool peer_gone();
    const std::string &peer() const { return peer_; }

private:
    friend class Listener;
    friend Status connect(const std::string &, const std::string &, const std::string &, int,
                          std::unique_ptr<Endpoint> *);
    Endpoint() = default;
    // Domain, queues and endpoint for `info`, receives posted.
    Status open(fid_fabric *fabric, fi_info *info, bool own_fabric);
    Status post_recv(size_t slot);
    // Waits for the completion of `context` (kAnyRma: of any RMA chunk in
    // flight), keeping receives that land meanwhile.
    Status wait_for(void *context, int timeout_ms, const char *what);
    // Files one completion: true when it is the one awaited.
    bool took(const fi_cq_msg_entry &entry, void *context);
    // A failed completion: the connection is done.
    Status completion_error(const char *what);
    Status check_shutdown();
    Status rma(bool write, void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms);

    fid_fabric *fabric_ = nullptr;
    bool own_fabric_ = false;
    fid_domain *domain_ = nullptr;
    fid_eq *eq_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
    std::map<uint64_t, fid_mr *> exposed_;  // by key
    static constexpr size_t kRecvSlots = 8;
    // RMA chunks in flight at once: the link stays busy while completions
    // come back (one at a time left it idle for a round trip per chunk).
    static constexpr size_t kRmaDepth = 8;
    static constexpr size_t kRmaFirst = kRecvSlots + 1;
    static void *const kAnyRma;
    // The operations' contexts (FI_CONTEXT: room the provider may use): one
    // per receive slot, then one for sends, then one per RMA chunk in flight.
    std::unique_ptr<fi_context[]> ctx_;
    bool rma_busy_[kRmaDepth] = {};
    size_t rma_in_flight_ = 0;
    std::vector<std::vector<uint8_t>> recv_bufs_;
    struct Landed {
        size_t slot;
        size_t len;
    };
    std::deque<Landed> landed_;
    bool closed_ = false;
    uint64_t spin_ns_ = 0;
    std::string peer_;
};

// A passive endpoint clients connect to.
class Listener {
public:
    ~Listener();
    // address "" listens on every interface; port "0" picks a free one.
    static Status open(const std::string &address, const std::string &port, const std::string &provider,
                       std::unique_ptr<Listener> *out);
    // The port it listens on (what port "0" became).
    int port() const { return port_; }
    // The next connection, authenticated by nobody yet; *out stays null
    // when none came within timeout_ms.
    Status accept(std::unique_ptr<Endpoint> *out, int timeout_ms);

private:
    Listener() = default;
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_eq *eq_ = nullptr;
    fid_pep *pep_ = nullptr;
    int port_ = 0;
};

Status connect(const std::string &host, const std::string &port, const std::string &provider, int timeout_ms,
               std::unique_ptr<Endpoint> *out);

}  // namespace adsm::remote
