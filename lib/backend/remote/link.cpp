#include "backend/remote/link.h"

#include <signal.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backend/remote/handshake.h"
#include "os/clock.h"
#include "os/deferred_signals.h"
#include "os/futex.h"
#include "support/log.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm::remote {

Link::~Link() {
    if (running_.load()) {
        stop_.store(true);
        ring_.ring();
        if (thread_.joinable()) thread_.join();
        if (finisher_.joinable()) finisher_.join();
    }
    if (ep_ && !lost()) {
        RequestHeader bye{kWireMagic, Op::bye, ++seq_, 0, 0};
        (void)ep_->send(&bye, sizeof bye);
    }
}

Status Link::open(const std::string &host, const std::string &port, const std::string &provider,
                  const std::string &key, int timeout_ms, unsigned spin_us) {
    timeout_ms_ = timeout_ms;
    where_ = host + ":" + port;
    if (Status s = connect(host, port, provider, timeout_ms, &ep_); s != adsmSuccess) return s;
    ep_->set_spin_ns(spin_us * 1000ull);
    if (Status s = client_handshake(*ep_, key, timeout_ms); s != adsmSuccess)
        return fail(s, "the device server at %s: %s", where_.c_str(), std::string(last_detail()).c_str());
    running_.store(true);
    thread_ = std::thread([this] { run(); });
    finisher_ = std::thread([this] { finish(); });
    return adsmSuccess;
}

// The program's threads take ranges_mu_ here, the link's thread for every
// transfer: a handler run meanwhile on this thread that touched shared
// memory would wait for a fetch that waits for this lock.
void Link::add_range(uint64_t start, uint64_t len, uint64_t key) {
    os::DeferredSignals deferred;
    std::lock_guard<std::mutex> g(ranges_mu_);
    ranges_[start] = {len, key};
}

void Link::remove_range(uint64_t start) {
    os::DeferredSignals deferred;
    std::lock_guard<std::mutex> g(ranges_mu_);
    ranges_.erase(start);
}

void Link::forget() {
    // The thread did not come along into the child; the parent's
    // connection must not be touched (or closed) from here.
    running_.store(false);
    lost_.store(true);
    snprintf(lost_reason_, sizeof lost_reason_, "a fork child does not share its parent's remote device");
    (void)ep_.release();
    if (thread_.joinable()) thread_.detach();
    if (finisher_.joinable()) finisher_.detach();
}

uint64_t Link::submit(const Job &job) {
    if (!running_.load(std::memory_order_acquire)) return 0;
    return ring_.push([&](Job &j) { j = job; });
}

uint64_t Link::submit_write(uint64_t dev, const void *src, size_t n, CopyDone done, void *arg) {
    return submit(Job{Kind::write, dev, const_cast<void *>(src), n, done, arg, false, nullptr, nullptr, adsmSuccess, nullptr});
}

uint64_t Link::submit_read(void *dst, uint64_t dev, size_t n, CopyDone done, void *arg) {
    return submit(Job{Kind::read, dev, dst, n, done, arg, false, nullptr, nullptr, adsmSuccess, nullptr});
}

void Link::wait_transferred(uint64_t t) {
    for (;;) {
        uint32_t e = transferred_epoch_.load(std::memory_order_seq_cst);
        if (transferred_.load(std::memory_order_acquire) >= t) return;
        os::futex_wait(&transferred_epoch_, e, 100ull * 1000 * 1000);
    }
}

Status Link::copy_now(bool to_device, uint64_t dev, void *host, size_t n) {
    Status result = adsmErrorDeviceLost;
    uint64_t t;
    while ((t = submit(Job{to_device ? Kind::write : Kind::read, dev, host, n, nullptr, nullptr, false, &result,
                           nullptr, adsmSuccess, nullptr})) == 0) {
        if (!running_.load() || lost()) return fail(adsmErrorDeviceLost, "the remote device is not connected");
        wait_transferred(last_ticket());  // full: let it drain
    }
    wait_transferred(t);
    return result;
}

void Link::wait(uint64_t t) { ring_.wait(t); }

Status Link::call(Op op, const void *body, size_t body_size, Reply *reply, bool patient) {
    if (body_size > kMaxMessage - sizeof(RequestHeader))
        return fail(adsmErrorInvalidValue, "a %zu-byte request body is too large", body_size);
    // The header and body go as one message, built here; the thread sends
    // it.  Small ones on the stack: a fault handler's (a synchronize, when
    // the CPU touches what a kernel may still use) must not allocate.
    const size_t size = sizeof(RequestHeader) + body_size;
    uint8_t small[256];
    std::unique_ptr<uint8_t[]> large(size > sizeof small ? new uint8_t[size] : nullptr);
    uint8_t *msg = large ? large.get() : small;
    frame(op, body, body_size, msg);
    Status result = adsmErrorDeviceLost;
    const uint64_t t = submit_when_room(Job{Kind::request, 0, msg, size, nullptr, nullptr, patient, &result, reply, adsmSuccess, nullptr});
    if (t == 0) return not_connected();
    wait_transferred(t);
    if (result == adsmSuccess) return adsmSuccess;
    // (The thread's detail is its own: the reply carries it here.)
    reply->message[sizeof reply->message - 1] = '\0';
    return fail(result, "%s", reply->message);
}

Status Link::post(Op op, const void *body, size_t body_size, Refused refused, void *arg) {
    // (A lost connection says so at once, as a call's would.)
    if (lost()) return fail(adsmErrorDeviceLost, "%s", lost_reason_);
    if (body_size > kMaxMessage - sizeof(RequestHeader))
        return fail(adsmErrorInvalidValue, "a %zu-byte request body is too large", body_size);
    const size_t size = sizeof(RequestHeader) + body_size;
    auto *msg = new (std::nothrow) uint8_t[size];
    if (!msg) return fail(adsmErrorMemoryAllocation, "no memory for a request");
    frame(op, body, body_size, msg);
    if (submit_when_room(Job{Kind::posted, 0, msg, size, nullptr, arg, false, nullptr, nullptr, adsmSuccess, refused}) == 0) {
        delete[] msg;
        return not_connected();
    }
    return adsmSuccess;
}

void Link::frame(Op op, const void *body, size_t body_size, uint8_t *msg) {
    RequestHeader h{kWireMagic, op, 0, static_cast<uint32_t>(body_size), 0};
    memcpy(msg, &h, sizeof h);
    if (body_size) memcpy(msg + sizeof h, body, body_size);
}

uint64_t Link::submit_when_room(const Job &job) {
    for (;;) {
        if (uint64_t t = submit(job)) return t;
        if (!running_.load()) return 0;
        wait(last_ticket());  // full: let it drain
    }
}

Status Link::not_connected() {
    return fail(adsmErrorDeviceLost, "%s", lost_reason_[0] ? lost_reason_ : "the remote device is not connected");
}

Status Link::lose(const char *what) {
    if (!lost_.exchange(true)) {
        snprintf(lost_reason_, sizeof lost_reason_, "the device server at %s was lost (%s): %s", where_.c_str(), what,
                 last_detail());
    }
    return fail(adsmErrorDeviceLost, "%s", lost_reason_);
}

Status Link::transfer(const Job &j) {
    uint64_t key = 0, off = 0;
    {
        std::lock_guard<std::mutex> g(ranges_mu_);
        auto it = ranges_.upper_bound(j.dev);
        if (it != ranges_.begin()) --it;
        if (it == ranges_.end() || j.dev < it->first || j.dev + j.n > it->first + it->second.first)
            return fail(adsmErrorInvalidValue, "[%#llx, +%zu) is not device memory of the remote device",
                        static_cast<unsigned long long>(j.dev), j.n);
        key = it->second.second;
        off = j.dev - it->first;
    }
    uint64_t t0 = trace::enabled() ? os::now_ns() : 0;
    const bool to_device = j.kind == Kind::write;
    if (staged_ && !to_device)
        if (Status s = stage(Op::pull, j.dev, j.n); s != adsmSuccess) return s;
    Status s = to_device ? ep_->write(j.local, j.n, off, key, timeout_ms_) : ep_->read(j.local, j.n, off, key, timeout_ms_);
    if (s != adsmSuccess) return lose(to_device ? "a transfer to it" : "a transfer from it");
    if (staged_ && to_device)
        if (Status st = stage(Op::push, j.dev, j.n); st != adsmSuccess) return st;
    if (trace::enabled()) trace::copy(to_device, j.n, j.dev, t0, true);
    return adsmSuccess;
}

Status Link::stage(Op op, uint64_t dev, size_t n) {
    struct {
        RequestHeader h;
        RangeBody b;
    } msg{{kWireMagic, op, 0, sizeof(RangeBody), 0}, {dev, n}};
    static_assert(sizeof msg == sizeof(RequestHeader) + sizeof(RangeBody), "one message, no padding");
    Reply reply{};
    Status s = exchange(&msg, sizeof msg, false, &reply);
    if (s == adsmSuccess || lost()) return s;
    // The device's own failure (a GPU copy): this transfer's, not the link's.
    reply.message[sizeof reply.message - 1] = '\0';
    return fail(s, "%s", reply.message);
}

Status Link::request(const Job &j) { return exchange(j.local, j.n, j.patient, j.reply); }

Status Link::send_posted(const Job &j) {
    auto *msg = static_cast<uint8_t *>(j.local);
    auto *h = reinterpret_cast<RequestHeader *>(msg);
    h->seq = ++seq_;
    // (Once sent, its buffer is no longer the provider's.)
    Status s = ep_->send(msg, j.n);
    delete[] msg;
    if (s != adsmSuccess) return lose("sending a request");
    if (posted_unanswered_ == 0) posted_first_seq_ = seq_;
    unanswered_[posted_unanswered_++] = {j.refused, j.arg};
    if (posted_unanswered_ > kMaxPostedUnanswered) return take_posted_reply(false);
    return adsmSuccess;
}

Status Link::take_posted_reply(bool patient) {
    size_t got = 0;
    // (The words of the request waiting behind it: a server that fell
    // silent fails a sync the same way whatever came before it.)
    if (ep_->recv(inbox_.get(), kMaxMessage, &got, timeout_ms_) != adsmSuccess)
        return lose(patient ? "neither its answer nor a heartbeat came in time" : "waiting for its answer");
    Reply r{};
    if (got == sizeof r) memcpy(&r, inbox_.get(), sizeof r);
    if (got != sizeof r || r.magic != kWireMagic || r.seq != posted_first_seq_) {
        fail(adsmErrorDeviceLost, "a malformed answer");
        return lose("reading its answer");
    }
    // (Those unanswered are numbered one after another: a request between
    // two would have taken the first's reply before its own.)
    const Unanswered u = unanswered_[0];
    for (uint32_t i = 1; i < posted_unanswered_; ++i) unanswered_[i - 1] = unanswered_[i];
    --posted_unanswered_;
    ++posted_first_seq_;
    if (r.status != adsmSuccess) {
        r.message[sizeof r.message - 1] = '\0';
        if (u.refused) u.refused(u.arg, static_cast<Status>(r.status), r.message);
        else ADSM_LOG(warn, "the device server at %s refused a request nobody waited for: %s", where_.c_str(), r.message);
    }
    return adsmSuccess;
}

Status Link::exchange(void *msg, size_t n, bool patient, Reply *reply) {
    auto *h = static_cast<RequestHeader *>(msg);
    h->seq = ++seq_;
    if (ep_->send(msg, n) != adsmSuccess) return lose("sending a request");
    // Sent before the replies to posted requests are taken: the two cross
    // the connection together.
    while (posted_unanswered_)
        if (Status s = take_posted_reply(patient); s != adsmSuccess) return s;
    size_t got = 0;
    // Every message must come within the timeout; a patient request's
    // heartbeats say the server is alive and still at it, and span batches
    // come before a sync's answer.
    for (;;) {
        if (ep_->recv(inbox_.get(), kMaxMessage, &got, timeout_ms_) != adsmSuccess)
            return lose(patient ? "neither its answer nor a heartbeat came in time" : "waiting for its answer");
        Reply head{};
        memcpy(&head, inbox_.get(), std::min(got, sizeof head));
        if (!patient || got < offsetof(Reply, capacity) || head.magic != kWireMagic || head.seq != h->seq) break;
        if (head.status == kStillWorking) continue;
        if (head.status != kSpans) break;
        if (!trace_spans(got)) {
            fail(adsmErrorDeviceLost, "a malformed batch of kernel spans");
            return lose("reading its answer");
        }
    }
    if (got == sizeof *reply) memcpy(reply, inbox_.get(), sizeof *reply);
    if (got != sizeof *reply || reply->magic != kWireMagic || reply->seq != h->seq) {
        fail(adsmErrorDeviceLost, "a malformed answer");
        return lose("reading its answer");
    }
    return static_cast<Status>(reply->status);
}

bool Link::trace_spans(size_t got) {
    const auto *b = reinterpret_cast<const SpanBatch *>(inbox_.get());
    if (got < offsetof(SpanBatch, spans) || b->count > kSpansPerBatch ||
        got != offsetof(SpanBatch, spans) + b->count * sizeof(WireSpan))
        return false;
    if (!trace::enabled()) return true;
    // The server said how long ago; the way over is not subtracted.
    uint64_t now = os::now_ns();
    for (uint32_t i = 0; i < b->count; ++i) {
        const WireSpan &w = b->spans[i];
        char name[sizeof w.kernel];
        memcpy(name, w.kernel, sizeof name);
        name[sizeof name - 1] = '\0';
        uint64_t start = now > w.start_ago_ns ? now - w.start_ago_ns : 0, end = now > w.end_ago_ns ? now - w.end_ago_ns : 0;
        trace::record(trace::Kind::kernel, start, end, w.stream, w.failed != 0, name, trace::stream_track(w.stream));
    }
    return true;
}

void Link::run() {
    // The program's asynchronous signals go to its own threads (a handler
    // touching shared memory would wait for this thread's copies).
    sigset_t async = os::async_signals();
    pthread_sigmask(SIG_BLOCK, &async, nullptr);
    for (uint64_t pos = 0;; ++pos) {
        Job *job = ring_.take(pos, stop_);
        if (!job) break;
        Job &j = *job;  // its slot stays ours until the completion thread is done with it
        Status st;
        if (lost()) {
            st = fail(adsmErrorDeviceLost, "%s", lost_reason_);
            if (j.kind == Kind::posted) delete[] static_cast<uint8_t *>(j.local);
        } else {
            st = j.kind == Kind::request ? request(j) : j.kind == Kind::posted ? send_posted(j) : transfer(j);
        }
        if (j.kind == Kind::request) {
            if (st != adsmSuccess && j.reply && (st == adsmErrorDeviceLost || j.reply->message[0] == '\0'))
                snprintf(j.reply->message, sizeof j.reply->message, "%s", last_detail());
        } else if (st == adsmSuccess && j.kind != Kind::posted) {
            stats().transfer(j.kind == Kind::write, j.n);
        }
        j.status = st;
        if (j.result) *j.result = st;
        transferred_.store(pos + 1, std::memory_order_release);
        transferred_epoch_.fetch_add(1, std::memory_order_seq_cst);
        os::futex_wake(&transferred_epoch_);
    }
    link_done_.store(true);
    transferred_epoch_.fetch_add(1, std::memory_order_seq_cst);
    os::futex_wake(&transferred_epoch_);
}

void Link::finish() {
    sigset_t async = os::async_signals();
    pthread_sigmask(SIG_BLOCK, &async, nullptr);
    for (uint64_t pos = 0;;) {
        uint32_t e = transferred_epoch_.load(std::memory_order_seq_cst);
        if (transferred_.load(std::memory_order_acquire) <= pos) {
            if (link_done_.load()) return;  // nothing will be transferred any more
            os::futex_wait(&transferred_epoch_, e, 200ull * 1000 * 1000);
            continue;
        }
        // Transferred, so published: take returns at once.
        Job &j = *ring_.take(pos, stop_);
        if ((j.kind == Kind::write || j.kind == Kind::read) && j.status != adsmSuccess) {
            int none = adsmSuccess;
            failure_.compare_exchange_strong(none, j.status, std::memory_order_acq_rel);
        }
        if (j.done) j.done(j.arg, j.status);
        ring_.complete(pos);
        ++pos;
    }
}

}  // namespace adsm::remote
