#include "device_server/session.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "backend/remote/handshake.h"
#include "os/clock.h"

namespace adsm::server {

void log_line(const char *fmt, ...) {
    char when[32];
    time_t now = time(nullptr);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s adsm-device-server: %s\n", when, line);
}

Session::Session(const Options &options, const std::string &key, std::unique_ptr<remote::Endpoint> endpoint)
    : options_(options), key_(key), ep_(std::move(endpoint)), peer_(ep_->peer()), memory_(options.memory) {}

Session::~Session() {
    ep_.reset();  // no RMA into the memory from here on
    device_.reset();
}

Status Session::attach(uint64_t base, uint64_t size, remote::Reply *reply) {
    if (Status s = memory_.attach(base, size); s != adsmSuccess) return s;
    device_ = make_hosting(options_);
    Status s = device_->attach(base, size, reply);
    if (s != adsmSuccess) device_.reset();  // the client has no device: nothing else is answered
    else reply->flags |= remote::kZeroedCommits;  // (every hosting's commit zeroes)
    return s;
}

Status Session::commit(uint64_t addr, uint64_t len, remote::Reply *reply) {
    if (Status s = memory_.commit(addr, len); s != adsmSuccess) return s;
    if (Status s = device_->commit(addr, len); s != adsmSuccess) {
        (void)memory_.decommit(addr, len);
        return s;
    }
    uint64_t key = 0;
    Status s = adsmSuccess;
    do {
        if (getrandom(&key, sizeof key, 0) != sizeof key) s = fail(adsmErrorInitialization, "no randomness for a key");
    } while (s == adsmSuccess && key == 0);
    if (s == adsmSuccess) s = ep_->expose(device_->exposed(addr), len, key);
    if (s != adsmSuccess) {
        device_->decommit(addr, len);
        (void)memory_.decommit(addr, len);
        return s;
    }
    keys_[addr] = key;
    reply->rma_key = key;
    return adsmSuccess;
}

Status Session::decommit(uint64_t addr, uint64_t len) {
    if (Status s = memory_.decommit(addr, len); s != adsmSuccess) return s;
    for (auto it = keys_.lower_bound(addr); it != keys_.end() && it->first < addr + len;) {
        ep_->withdraw(it->second);
        it = keys_.erase(it);
    }
    // Given back: its pages go, and read as zeros if committed again.
    device_->decommit(addr, len);
    return adsmSuccess;
}

Status Session::sync(const remote::SyncBody &b, uint64_t seq) {
    const uint64_t every = uint64_t{b.heartbeat_ms} * 1000 * 1000;
    uint64_t last = os::now_ns();
    bool abandoned = false;
    Status s = device_->sync(b.stream, [&] {
        // Nobody left to answer, or the server stops: the kernels end now
        // rather than hold this session (and the server's exit) for good.
        if (!abandoned && ((stopping_ && stopping_->load()) || ep_->peer_gone())) {
            abandoned = true;
            log_line("ending %s's kernels: %s", peer_.c_str(),
                     ep_->closed() ? "the client is gone" : "the server stops");
            device_->abandon();
        }
        uint64_t now = os::now_ns();
        if (!every || now - last < every) return;
        last = now;
        remote::Reply beat{};
        beat.magic = remote::kWireMagic;
        beat.seq = seq;
        beat.status = remote::kStillWorking;
        // A client that is gone shows at the next receive.
        (void)ep_->send(&beat, sizeof beat);
    });
    if (b.flags & remote::kSendSpans) send_spans(seq);
    return s;
}

// The kernels that ran since the last sync that asked, in batches, before
// the sync's answer.
void Session::send_spans(uint64_t seq) {
    static_assert(sizeof(remote::SpanBatch) <= remote::kMaxMessage, "a batch is one message");
    std::unique_ptr<remote::SpanBatch> batch(new remote::SpanBatch{});
    batch->magic = remote::kWireMagic;
    batch->status = remote::kSpans;
    batch->seq = seq;
    auto flush = [&] {
        if (!batch->count) return;
        uint64_t now = os::now_ns();
        for (uint32_t i = 0; i < batch->count; ++i) {
            remote::WireSpan &w = batch->spans[i];
            // Times were kept in the server's clock until now: as time ago.
            w.start_ago_ns = now > w.start_ago_ns ? now - w.start_ago_ns : 0;
            w.end_ago_ns = now > w.end_ago_ns ? now - w.end_ago_ns : 0;
        }
        (void)ep_->send(batch.get(), offsetof(remote::SpanBatch, spans) + batch->count * sizeof(remote::WireSpan));
        batch->count = 0;
    };
    device_->take_spans([&](const char *name, uint32_t stream, uint64_t start, uint64_t end, bool failed) {
        remote::WireSpan &w = batch->spans[batch->count];
        w = {};
        snprintf(w.kernel, sizeof w.kernel, "%s", name);
        w.stream = stream;
        w.failed = failed;
        w.start_ago_ns = start;  // made relative in flush()
        w.end_ago_ns = end;
        if (++batch->count == remote::kSpansPerBatch) flush();
    });
    flush();
}

Status Session::module_part(const remote::ModuleBody &m) {
    auto it = incoming_.find(m.module);
    if (m.offset == 0) {
        if (it != incoming_.end() || modules_.count(m.module))
            return fail(adsmErrorInvalidValue, "module %u was sent before", m.module);
        if (m.total > remote::kMaxModuleBytes - module_bytes_) {
            device_answered_ = true;  // a refusal, not a breach
            return fail(adsmErrorMemoryAllocation, "a client's modules take %llu bytes at most; %llu in use, %llu more asked",
                        static_cast<unsigned long long>(remote::kMaxModuleBytes),
                        static_cast<unsigned long long>(module_bytes_), static_cast<unsigned long long>(m.total));
        }
        module_bytes_ += m.total;
        it = incoming_.emplace(m.module, Incoming{m.total, 0}).first;
    } else if (it == incoming_.end() || it->second.next != m.offset || it->second.total != m.total) {
        return fail(adsmErrorInvalidValue, "module %u: a part out of order", m.module);
    }
    it->second.next += m.length;
    const bool last = it->second.next == m.total;
    if (last) {
        incoming_.erase(it);
        modules_.insert(m.module);
    }
    device_answered_ = true;  // an image the device cannot load is the program's to hear about
    return device_->module_part(m, last);
}

Status Session::function(const remote::FunctionBody &f, remote::Reply *reply) {
    if (!modules_.count(f.module)) return fail(adsmErrorInvalidValue, "module %u was not sent", f.module);
    device_answered_ = true;
    return device_->function(f, reply);
}

Status Session::declare(const remote::DeclareBody &d) {
    if (d.module && !modules_.count(d.module)) return fail(adsmErrorInvalidValue, "module %u was not sent", d.module);
    device_answered_ = true;
    return device_->declare(d);
}

Status Session::handle(const remote::Request &r, remote::Reply *reply, bool *bye) {
    using remote::Op;
    if (r.header.op != Op::attach && r.header.op != Op::bye && !device_)
        return fail(adsmErrorInvalidValue, "a request before the window was attached");
    switch (r.header.op) {
    case Op::attach: return attach(r.body.attach.window_base, r.body.attach.window_size, reply);
    case Op::commit: return commit(r.body.range.addr, r.body.range.len, reply);
    case Op::decommit: return decommit(r.body.range.addr, r.body.range.len);
    case Op::fill:
        if (Status s = memory_.check(r.body.fill.addr, r.body.fill.len); s != adsmSuccess) return s;
        return device_->fill(r.body.fill.addr, static_cast<uint8_t>(r.body.fill.value), r.body.fill.len);
    case Op::push:
    case Op::pull:
        if (Status s = memory_.check(r.body.range.addr, r.body.range.len); s != adsmSuccess) return s;
        return r.header.op == Op::push ? device_->push(r.body.range.addr, r.body.range.len)
                                       : device_->pull(r.body.range.addr, r.body.range.len);
    case Op::module: return module_part(r.body.module);
    case Op::function: return function(r.body.function, reply);
    case Op::declare: return declare(r.body.declare);
    case Op::launch:
        if (r.body.launch.module && !modules_.count(r.body.launch.module))
            return fail(adsmErrorInvalidValue, "module %u was not sent", r.body.launch.module);
        device_answered_ = true;  // (a module the device could not load, say: the program's to hear about)
        return device_->launch(r.body.launch);
    case Op::sync: return sync(r.body.sync, r.header.seq);
    case Op::bye: *bye = true; return adsmSuccess;
    }
    return fail(adsmErrorInvalidValue, "unknown operation");
}

bool Session::authenticate() {
    std::string why;
    if (remote::server_handshake(*ep_, key_, options_.handshake_timeout_ms, &why) != adsmSuccess) {
        log_line("refused %s: %s", peer_.c_str(), why.c_str());
        return false;
    }
    return true;
}

void Session::turn_away(unsigned max_clients) {
    log_line("turning %s away: %u clients are being served (--max-clients)", peer_.c_str(), max_clients);
    remote::Reply reply{};
    reply.magic = remote::kWireMagic;
    reply.status = adsmErrorNoDevice;
    snprintf(reply.message, sizeof reply.message, "the device server serves %u clients already (its --max-clients)",
             max_clients);
    (void)ep_->send(&reply, sizeof reply);
}

void Session::serve(std::atomic<bool> &stopping) {
    stopping_ = &stopping;
    log_line("client %s authenticated", peer_.c_str());
    ep_->set_spin_ns(remote::Endpoint::spin_us(options_.spin_us) * 1000ull);  // (not before: a stranger's handshake gets no CPU spent on it)
    std::unique_ptr<uint8_t[]> msg(new uint8_t[remote::kMaxMessage]);
    bool bye = false;
    while (!bye && !stopping.load()) {
        size_t got = 0;
        Status s = ep_->recv(msg.get(), remote::kMaxMessage, &got, 200);
        if (s != adsmSuccess) {
            if (ep_->closed()) {
                log_line("client %s disconnected", peer_.c_str());
                return;
            }
            continue;  // no request yet
        }
        remote::Request r;
        if (remote::parse_request(msg.get(), got, &r) != adsmSuccess) {
            // Malformed: this client goes, the others are not touched.
            log_line("closing %s: %s", peer_.c_str(), last_detail());
            return;
        }
        remote::Reply reply{};
        device_answered_ = false;
        Status st = handle(r, &reply, &bye);
        // (A device process's answer may have been copied in whole.)
        reply.magic = remote::kWireMagic;
        reply.seq = r.header.seq;
        reply.status = st;
        if (st != adsmSuccess) {
            snprintf(reply.message, sizeof reply.message, "%s", last_detail());
            // A refused commit, a launch the server cannot run and a kernel's
            // error are answers; a range outside what the client owns or a
            // malformed request is an attack or a bug, and ends the session.
            if (st == adsmErrorInvalidValue && !device_answered_) {
                log_line("closing %s: %s", peer_.c_str(), reply.message);
                (void)ep_->send(&reply, sizeof reply);
                return;
            }
        }
        if (ep_->send(&reply, sizeof reply) != adsmSuccess) {
            log_line("client %s went away", peer_.c_str());
            return;
        }
    }
    log_line("client %s done", peer_.c_str());
}

}  // namespace adsm::server
