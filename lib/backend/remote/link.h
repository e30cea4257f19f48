// The client's end of a remote device: one thread owns the connection and
// runs every operation on it in submission order, transfers (RMA into the
// ranges the server exposed) and requests alike.  Queuing is lock-free and
// async-signal-safe, so the fault handler can move data as it does on sim;
// the order on the wire is the order of submission, so a launch queued
// after a copy sees the copy's data.  A connection that fails is lost for
// good: every operation after it fails with adsmErrorDeviceLost at once.
//
// Asynchronous copies' completions (CopyDone) run on a second thread, in
// order: one may wait for a lock that the submitter of a later synchronous
// copy holds while it waits, and the connection must not stop for it.  So
// an operation is `transferred` when its data moved (what a synchronous
// copy waits for) and `completed` when its completion has run too (what
// wait_copies promises).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backend/device.h"
#include "backend/remote/fabric.h"
#include "backend/remote/wire.h"
#include "os/ticket_ring.h"

namespace adsm::remote {

class Link {
public:
    Link() = default;
    ~Link();

    // Connects and proves the key (on the calling thread), then starts the
    // thread that owns the connection.
    // `spin_us`: how long the thread's waits for the server look before
    // they sleep (ADSM_REMOTE_SPIN_US).  Only that thread spins: the
    // program's thread waiting for it, or it waiting for work, spinning as
    // well took the cores the server needed on a two-core machine (an empty
    // call and sync 2 to 3 times slower on loopback, measured).
    Status open(const std::string &host, const std::string &port, const std::string &provider, const std::string &key,
                int timeout_ms, unsigned spin_us);

    // The server exposes a staging copy of its device memory (attach's
    // reply said kStagedMemory): each write is pushed on, each read pulled
    // first, in the same turn of the connection.
    void set_staged(bool staged) { staged_ = staged; }

    // Ranges of device memory the server exposed (commit's reply), by start.
    void add_range(uint64_t start, uint64_t len, uint64_t key);
    void remove_range(uint64_t start);

    // Queue a copy; the ticket, or 0 when the queue is full or the link is
    // not running (nothing queued).  Async-signal-safe.
    uint64_t submit_write(uint64_t dev, const void *src, size_t n, CopyDone done, void *arg);
    uint64_t submit_read(void *dst, uint64_t dev, size_t n, CopyDone done, void *arg);
    // Waits for every operation up to ticket t and its completion.
    // Async-signal-safe.
    void wait(uint64_t t);
    // A copy done at once, waited for (data moved; earlier completions may
    // still be running).  adsmErrorDeviceLost when not connected.
    // Async-signal-safe.
    Status copy_now(bool to_device, uint64_t dev, void *host, size_t n);
    uint64_t last_ticket() const { return ring_.last_ticket(); }
    // The first failure of a queued copy not taken yet.
    Status take_failure() { return static_cast<Status>(failure_.exchange(adsmSuccess, std::memory_order_acq_rel)); }

    // A request and its reply, in order with everything queued before it.
    // `patient`: no time limit while the server's heartbeats keep coming (a
    // sync waits for kernels; its body asks for heartbeat_ms()).  Not from a
    // signal handler.
    Status call(Op op, const void *body, size_t body_size, Reply *reply, bool patient = false);
    // A request whose reply nobody waits for (a decommit, a launch known to
    // be accepted): queued like call's, its reply taken by the link's thread
    // once the next request is sent, so that the two cross the connection
    // together.  A refusal goes to `refused` (on the link's thread), else to
    // the log.  Not from a signal handler.
    using Refused = void (*)(void *arg, Status s, const char *why);
    Status post(Op op, const void *body, size_t body_size, Refused refused = nullptr, void *arg = nullptr);
    // How often a patient request asks the server for a sign of life: four
    // within the timeout.
    uint32_t heartbeat_ms() const {
        uint32_t h = static_cast<uint32_t>(timeout_ms_ / 4);
        return h < kMinHeartbeatMs ? kMinHeartbeatMs : h > kMaxHeartbeatMs ? kMaxHeartbeatMs : h;
    }

    bool lost() const { return lost_.load(std::memory_order_acquire); }
    // A fork child: the parent's connection is not its to use.
    void forget();

private:
    enum class Kind : uint32_t { write, read, request, posted };
    struct Job {
        Kind kind;
        uint64_t dev;
        void *local;
        size_t n;
        CopyDone done;
        void *arg;
        bool patient;
        Status *result;  // synchronous operations: written once transferred
        Reply *reply;
        Status status;   // for the completion
        Refused refused;  // posted requests
    };

    uint64_t submit(const Job &job);
    // The same, waiting while the queue is full; 0 once the link is not
    // running (not_connected() says why).
    uint64_t submit_when_room(const Job &job);
    Status not_connected();
    // A request's message: its header (seq set when sent) and body.
    static void frame(Op op, const void *body, size_t body_size, uint8_t *msg);
    void run();
    void finish();  // the completion thread
    void wait_transferred(uint64_t t);
    Status transfer(const Job &j);
    Status request(const Job &j);
    // Sends a posted request (its message is the job's, freed here).
    Status send_posted(const Job &j);
    // Takes the reply of the oldest posted request not answered yet, for a
    // request sent after it (`patient`: one whose heartbeats would come).
    Status take_posted_reply(bool patient);
    // Sends one request (its header's seq is set here) and takes its reply.
    Status exchange(void *msg, size_t n, bool patient, Reply *reply);
    // A push or pull of a staged transfer's range.
    Status stage(Op op, uint64_t dev, size_t n);
    Status lose(const char *what);
    // Draws the batch of kernel spans in inbox_ (got bytes) on the trace;
    // false if it is malformed.
    bool trace_spans(size_t got);

    std::unique_ptr<Endpoint> ep_;
    std::unique_ptr<uint8_t[]> inbox_{new uint8_t[kMaxMessage]};  // the connection thread's
    std::string where_;
    int timeout_ms_ = 5000;
    bool staged_ = false;  // set before the first transfer
    uint64_t seq_ = 0;  // the thread's
    // Posted requests sent and not answered yet, the oldest's seq, and whom
    // each refusal goes to, oldest first (the thread's): their replies come
    // first, in order.
    uint32_t posted_unanswered_ = 0;
    uint64_t posted_first_seq_ = 0;
    struct Unanswered {
        Refused refused;
        void *arg;
    };
    // At most this many: each reply holds one of the connection's eight
    // receive buffers until it is taken, and a patient request's heartbeats
    // need some.
    static constexpr uint32_t kMaxPostedUnanswered = 4;
    Unanswered unanswered_[kMaxPostedUnanswered + 1] = {};

    std::mutex ranges_mu_;
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> ranges_;  // start -> (length, key)

    // A slot is free once its completion ran: this many operations can wait
    // for theirs.
    os::TicketRing<Job, 4096> ring_;
    alignas(64) std::atomic<uint64_t> transferred_{0};
    std::atomic<uint32_t> transferred_epoch_{0};  // futex
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    std::atomic<bool> link_done_{false};  // the connection's thread has ended
    std::atomic<bool> lost_{false};
    std::atomic<int> failure_{adsmSuccess};
    char lost_reason_[200] = {};
    std::thread thread_, finisher_;
};

}  // namespace adsm::remote
