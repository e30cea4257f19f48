#include "backend/remote/fabric.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/remote/fabric_library.h"
#include "os/clock.h"
#include "os/futex.h"

namespace adsm::remote {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 9);
// RMA goes in chunks of this size, kRmaDepth of them in flight: on
// loopback over tcp, 512 KiB x 8 moved 64 MiB at 0.7x (writes) and 0.8x
// (reads) of fi_pingpong's bandwidth, where 4 MiB one at a time reached
// 0.5x and 0.65x, and larger chunks or deeper queues did no better; plain
// RMA with fi_rma_bw's window of 64 x 1 MiB is no faster than these chunks
// (adsm-bench-rma-baseline, in adsm-bench-remote).
constexpr size_t kRmaChunk = 512u << 10;

Status fabric_error(const char *what, ssize_t r) {
    return fail(adsmErrorDeviceLost, "%s: %s", what, fabric_library().strerror(static_cast<int>(-r)));
}

fi_info *hints_for(const std::string &provider) {
    fi_info *h = fabric_library().dupinfo(nullptr);
    if (!h) return nullptr;
    h->ep_attr->type = FI_EP_MSG;
    h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    h->mode = FI_CONTEXT;
    // Keys the caller picks, offsets from the registered base: what the
    // protocol assumes; a provider that needs more is not offered.
    h->domain_attr->mr_mode = 0;
    h->addr_format = FI_SOCKADDR_IN;
    if (!provider.empty()) h->fabric_attr->prov_name = strdup(provider.c_str());
    return h;
}

struct InfoGuard {
    fi_info *p = nullptr;
    ~InfoGuard() {
        if (p) fabric_library().freeinfo(p);
    }
};

void close_fid(fid *f) {
    if (f) fi_close(f);
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Waits for `wanted` on eq (a connection event), up to timeout_ms.
Status wait_event(fid_eq *eq, uint32_t wanted, int timeout_ms, const char *what) {
    fi_eq_cm_entry entry;
    uint32_t event = 0;
    ssize_t r = fi_eq_sread(eq, &event, &entry, sizeof entry, timeout_ms, 0);
    if (r == -FI_EAGAIN) return fail(adsmErrorDeviceLost, "%s: no answer within %d ms", what, timeout_ms);
    if (r == -FI_EAVAIL) {
        fi_eq_err_entry err{};
        fi_eq_readerr(eq, &err, 0);
        return fail(adsmErrorDeviceLost, "%s: %s", what, fabric_library().strerror(err.err));
    }
    if (r < 0) return fabric_error(what, r);
    if (event != wanted) return fail(adsmErrorDeviceLost, "%s: unexpected connection event %u", what, event);
    return adsmSuccess;
}

}  // namespace

// ------------------------------------------------------------------ Endpoint

Endpoint::~Endpoint() {
    if (ep_) fi_shutdown(ep_, 0);
    close_fid(ep_ ? &ep_->fid : nullptr);
    for (auto &[key, mr] : exposed_) close_fid(&mr->fid);
    close_fid(cq_ ? &cq_->fid : nullptr);
    close_fid(eq_ ? &eq_->fid : nullptr);
    close_fid(domain_ ? &domain_->fid : nullptr);
    if (own_fabric_) close_fid(fabric_ ? &fabric_->fid : nullptr);
}

Status Endpoint::open(fid_fabric *fabric, fi_info *info, bool own_fabric) {
    fabric_ = fabric;
    own_fabric_ = own_fabric;
    if (int r = fi_domain(fabric_, info, &domain_, nullptr)) return fabric_error("fi_domain", r);
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    if (int r = fi_eq_open(fabric_, &eq_attr, &eq_, nullptr)) return fabric_error("fi_eq_open", r);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;  // (a receive's length)
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    cq_attr.size = 64;
    if (int r = fi_cq_open(domain_, &cq_attr, &cq_, nullptr)) return fabric_error("fi_cq_open", r);
    if (int r = fi_endpoint(domain_, info, &ep_, nullptr)) return fabric_error("fi_endpoint", r);
    if (int r = fi_ep_bind(ep_, &eq_->fid, 0)) return fabric_error("fi_ep_bind (events)", r);
    if (int r = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV)) return fabric_error("fi_ep_bind (completions)", r);
    if (int r = fi_enable(ep_)) return fabric_error("fi_enable", r);
    recv_bufs_.assign(kRecvSlots, std::vector<uint8_t>(kMaxMessage));
    ctx_.reset(new fi_context[kRmaFirst + kRmaDepth]());
    for (size_t i = 0; i < kRecvSlots; ++i)
        if (Status s = post_recv(i); s != adsmSuccess) return s;
    return adsmSuccess;
}

Status Endpoint::post_recv(size_t slot) {
    for (;;) {
        ssize_t r = fi_recv(ep_, recv_bufs_[slot].data(), kMaxMessage, nullptr, 0, &ctx_[slot]);
        if (r == 0) return adsmSuccess;
        if (r != -FI_EAGAIN) return fabric_error("fi_recv", r);
        fi_cq_read(cq_, nullptr, 0);  // progress
    }
}

bool Endpoint::peer_gone() {
    fi_eq_cm_entry entry;
    uint32_t event = 0;
    ssize_t r = fi_eq_read(eq_, &event, &entry, sizeof entry, 0);
    if ((r >= 0 && event == FI_SHUTDOWN) || r == -FI_EAVAIL) closed_ = true;
    fi_cq_read(cq_, nullptr, 0);  // (progress, which notices a dead connection)
    return closed_;
}

Status Endpoint::check_shutdown() {
    fi_eq_cm_entry entry;
    uint32_t event = 0;
    ssize_t r = fi_eq_read(eq_, &event, &entry, sizeof entry, 0);
    if ((r >= 0 && event == FI_SHUTDOWN) || r == -FI_EAVAIL) closed_ = true;
    if (closed_) return fail(adsmErrorDeviceLost, "the connection to %s was closed", peer_.c_str());
    return adsmSuccess;
}

namespace {
char any_rma;
}
void *const Endpoint::kAnyRma = &any_rma;

unsigned Endpoint::spin_us(int setting) {
    if (setting != kSpinAuto) return static_cast<unsigned>(setting);
    return sysconf(_SC_NPROCESSORS_ONLN) >= kAutoSpinCpus ? kAutoSpinUs : 0;
}

Status Endpoint::wait_for(void *context, int timeout_ms, const char *what) {
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;
    const uint64_t spin_end = spin_ns_ ? os::now_ns() + spin_ns_ : 0;
    for (;;) {
        if (!context && !landed_.empty()) return adsmSuccess;
        if (closed_) return fail(adsmErrorDeviceLost, "%s: the connection to %s is closed", what, peer_.c_str());
        fi_cq_msg_entry entry;
        if (spin_end && os::now_ns() < spin_end) {
            // (fi_cq_read drives the provider's progress as sread does.)
            ssize_t r = fi_cq_read(cq_, &entry, 1);
            if (r == -FI_EAGAIN) {
                os::cpu_relax();
                continue;
            }
            if (r >= 0) {
                if (took(entry, context)) return adsmSuccess;
                continue;
            }
            if (r != -FI_EAVAIL) return fabric_error(what, r);
            return completion_error(what);
        }
        int64_t left = deadline == INT64_MAX ? 100 : std::min<int64_t>(100, deadline - now_ms());
        if (left < 0) {
            // An operation that did not complete is still posted, on the
            // caller's buffer and on a context the next one would reuse:
            // the endpoint is done with.  (A wait for any message is not.)
            if (context) closed_ = true;
            return fail(adsmErrorDeviceLost, "%s: no completion within %d ms", what, timeout_ms);
        }
        ssize_t r = fi_cq_sread(cq_, &entry, 1, nullptr, static_cast<int>(left));
        if (r == -FI_EAGAIN) {
            if (Status s = check_shutdown(); s != adsmSuccess) return s;
            continue;
        }
        if (r == -FI_EAVAIL) return completion_error(what);
        if (r < 0) return fabric_error(what, r);
        if (took(entry, context)) return adsmSuccess;
    }
}

bool Endpoint::took(const fi_cq_msg_entry &entry, void *context) {
    if (entry.op_context == context && context) return true;
    auto *c = static_cast<fi_context *>(entry.op_context);
    if (c >= &ctx_[kRmaFirst] && c < &ctx_[kRmaFirst + kRmaDepth]) {
        rma_busy_[c - &ctx_[kRmaFirst]] = false;
        --rma_in_flight_;
        return context == kAnyRma;
    }
    for (size_t i = 0; i < kRecvSlots; ++i)
        if (entry.op_context == &ctx_[i]) landed_.push_back({i, entry.len});
    return false;
}

Status Endpoint::completion_error(const char *what) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    closed_ = true;
    return fail(adsmErrorDeviceLost, "%s: %s", what, fabric_library().strerror(err.err));
}

Status Endpoint::send(const void *data, size_t n) {
    if (n > kMaxMessage) return fail(adsmErrorInvalidValue, "a %zu-byte message is larger than %zu", n, kMaxMessage);
    for (;;) {
        ssize_t r = fi_send(ep_, data, n, nullptr, 0, &ctx_[kRecvSlots]);
        if (r == 0) break;
        if (r != -FI_EAGAIN) {
            closed_ = true;
            return fabric_error("fi_send", r);
        }
        if (Status s = check_shutdown(); s != adsmSuccess) return s;
        fi_cq_read(cq_, nullptr, 0);
    }
    return wait_for(&ctx_[kRecvSlots], 10000, "sending a message");
}

Status Endpoint::recv(void *data, size_t cap, size_t *got, int timeout_ms) {
    if (Status s = wait_for(nullptr, timeout_ms, "waiting for a message"); s != adsmSuccess) return s;
    Landed l = landed_.front();
    landed_.pop_front();
    Status result = adsmSuccess;
    if (l.len > cap) {
        result = fail(adsmErrorInvalidValue, "a %zu-byte message where at most %zu fit", l.len, cap);
    } else {
        memcpy(data, recv_bufs_[l.slot].data(), l.len);
        *got = l.len;
    }
    if (Status s = post_recv(l.slot); s != adsmSuccess) return s;
    return result;
}

Status Endpoint::expose(void *base, size_t len, uint64_t key) {
    if (exposed_.count(key)) return fail(adsmErrorInvalidValue, "RMA key %#llx is in use", static_cast<unsigned long long>(key));
    fid_mr *mr = nullptr;
    if (int r = fi_mr_reg(domain_, base, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0, &mr, nullptr))
        return fabric_error("fi_mr_reg", r);
    exposed_[key] = mr;
    return adsmSuccess;
}

void Endpoint::withdraw(uint64_t key) {
    auto it = exposed_.find(key);
    if (it == exposed_.end()) return;
    close_fid(&it->second->fid);
    exposed_.erase(it);
}

Status Endpoint::rma(bool write, void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms) {
    auto *p = static_cast<uint8_t *>(local);
    const char *what = write ? "an RMA write" : "an RMA read";
    for (size_t at = 0; at < n || rma_in_flight_;) {
        if (at == n || rma_in_flight_ == kRmaDepth) {  // wait for room, or for the last chunks
            if (Status s = wait_for(kAnyRma, timeout_ms, what); s != adsmSuccess) return s;
            continue;
        }
        size_t slot = 0;
        while (rma_busy_[slot]) ++slot;
        size_t len = std::min(kRmaChunk, n - at);
        fi_context *c = &ctx_[kRmaFirst + slot];
        ssize_t r = write ? fi_write(ep_, p + at, len, nullptr, 0, offset + at, key, c)
                          : fi_read(ep_, p + at, len, nullptr, 0, offset + at, key, c);
        if (r == -FI_EAGAIN) {  // the provider's queue is full: a completion makes room
            if (!rma_in_flight_) fi_cq_read(cq_, nullptr, 0);
            else if (Status s = wait_for(kAnyRma, timeout_ms, what); s != adsmSuccess) return s;
            continue;
        }
        if (r) return fabric_error(write ? "fi_write" : "fi_read", r);
        rma_busy_[slot] = true;
        ++rma_in_flight_;
        at += len;
    }
    return adsmSuccess;
}

Status Endpoint::write(const void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms) {
    if (Status s = rma(true, const_cast<void *>(local), n, offset, key, timeout_ms); s != adsmSuccess) return s;
    // A write's completion says its data left, not that it landed.  The
    // target applies RMA in order: once a read of the last byte comes back,
    // everything before it is in the target's memory, as a finished device
    // copy must be (a later request, or a kernel, sees it).
    if (n == 0) return adsmSuccess;
    uint8_t last;
    return rma(false, &last, 1, offset + n - 1, key, timeout_ms);
}

Status Endpoint::read(void *local, size_t n, uint64_t offset, uint64_t key, int timeout_ms) {
    return rma(false, local, n, offset, key, timeout_ms);
}

// ------------------------------------------------------------------ Listener

Listener::~Listener() {
    close_fid(pep_ ? &pep_->fid : nullptr);
    close_fid(eq_ ? &eq_->fid : nullptr);
    close_fid(fabric_ ? &fabric_->fid : nullptr);
    if (info_) fabric_library().freeinfo(info_);
}

Status Listener::open(const std::string &address, const std::string &port, const std::string &provider,
                      std::unique_ptr<Listener> *out) {
    const FabricLibrary *lib = nullptr;
    if (Status s = load_fabric(&lib); s != adsmSuccess) return s;
    std::unique_ptr<Listener> l(new Listener);
    InfoGuard hints{hints_for(provider)};
    if (!hints.p) return fail(adsmErrorMemoryAllocation, "fi_allocinfo failed");
    int r = lib->getinfo(kApiVersion, address.empty() ? "0.0.0.0" : address.c_str(), port.c_str(), FI_SOURCE, hints.p,
                         &l->info_);
    if (r)
        return fail(adsmErrorNoDevice, "no libfabric provider %s offers a reliable connected endpoint with RMA on %s:%s: %s",
                    provider.empty() ? "(any)" : provider.c_str(), address.empty() ? "*" : address.c_str(), port.c_str(),
                    lib->strerror(-r));
    if ((r = lib->fabric(l->info_->fabric_attr, &l->fabric_, nullptr))) return fabric_error("fi_fabric", r);
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    if ((r = fi_eq_open(l->fabric_, &eq_attr, &l->eq_, nullptr))) return fabric_error("fi_eq_open", r);
    if ((r = fi_passive_ep(l->fabric_, l->info_, &l->pep_, nullptr))) return fabric_error("fi_passive_ep", r);
    if ((r = fi_pep_bind(l->pep_, &l->eq_->fid, 0))) return fabric_error("fi_pep_bind", r);
    if ((r = fi_listen(l->pep_)))
        return fail(adsmErrorNoDevice, "cannot listen on %s:%s: %s", address.c_str(), port.c_str(), lib->strerror(-r));
    sockaddr_in bound{};
    size_t len = sizeof bound;
    if (fi_getname(&l->pep_->fid, &bound, &len) == 0) l->port_ = ntohs(bound.sin_port);
    *out = std::move(l);
    return adsmSuccess;
}

Status Listener::accept(std::unique_ptr<Endpoint> *out, int timeout_ms) {
    out->reset();
    fi_eq_cm_entry entry{};
    uint32_t event = 0;
    ssize_t r = fi_eq_sread(eq_, &event, &entry, sizeof entry, timeout_ms, 0);
    if (r == -FI_EAGAIN || r == -FI_EINTR) return adsmSuccess;  // none came (or a signal: the caller looks)
    if (r == -FI_EAVAIL) {
        fi_eq_err_entry err{};
        fi_eq_readerr(eq_, &err, 0);
        return fail(adsmErrorDeviceLost, "a connection request failed: %s", fabric_library().strerror(err.err));
    }
    if (r < 0) return fabric_error("waiting for connections", r);
    if (event != FI_CONNREQ) return adsmSuccess;
    InfoGuard info{entry.info};
    std::unique_ptr<Endpoint> e(new Endpoint);
    char peer[64] = "?";
    if (info.p->dest_addr && info.p->addr_format == FI_SOCKADDR_IN) {
        auto *sin = static_cast<sockaddr_in *>(info.p->dest_addr);
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip);
        snprintf(peer, sizeof peer, "%s:%u", ip, ntohs(sin->sin_port));
    }
    e->peer_ = peer;
    if (Status s = e->open(fabric_, info.p, false); s != adsmSuccess) {
        if (e->ep_ == nullptr) fi_reject(pep_, info.p->handle, nullptr, 0);
        return s;
    }
    if (int rr = fi_accept(e->ep_, nullptr, 0)) return fabric_error("fi_accept", rr);
    if (Status s = wait_event(e->eq_, FI_CONNECTED, 5000, "accepting a connection"); s != adsmSuccess) return s;
    *out = std::move(e);
    return adsmSuccess;
}

Status connect(const std::string &host, const std::string &port, const std::string &provider, int timeout_ms,
               std::unique_ptr<Endpoint> *out) {
    out->reset();
    const FabricLibrary *lib = nullptr;
    if (Status s = load_fabric(&lib); s != adsmSuccess) return s;
    InfoGuard hints{hints_for(provider)};
    if (!hints.p) return fail(adsmErrorMemoryAllocation, "fi_allocinfo failed");
    InfoGuard info;
    int r = lib->getinfo(kApiVersion, host.c_str(), port.c_str(), 0, hints.p, &info.p);
    if (r)
        return fail(adsmErrorNoDevice, "no libfabric provider %s reaches %s:%s with a reliable connected endpoint: %s",
                    provider.empty() ? "(any)" : provider.c_str(), host.c_str(), port.c_str(), lib->strerror(-r));
    fid_fabric *fabric = nullptr;
    if ((r = lib->fabric(info.p->fabric_attr, &fabric, nullptr))) return fabric_error("fi_fabric", r);
    std::unique_ptr<Endpoint> e(new Endpoint);
    e->peer_ = host + ":" + port;
    if (Status s = e->open(fabric, info.p, true); s != adsmSuccess) return s;
    if ((r = fi_connect(e->ep_, info.p->dest_addr, nullptr, 0)))
        return fail(adsmErrorNoDevice, "cannot connect to %s:%s: %s", host.c_str(), port.c_str(), lib->strerror(-r));
    if (Status s = wait_event(e->eq_, FI_CONNECTED, timeout_ms, "connecting"); s != adsmSuccess)
        return fail(adsmErrorNoDevice, "cannot connect to the device server at %s:%s: %s", host.c_str(), port.c_str(),
                    std::string(last_detail()).c_str());
    *out = std::move(e);
    return adsmSuccess;
}

}  // namespace adsm::remote
