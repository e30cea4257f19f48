#include "backend/remote/wire.h"

#include <cstring>

#include "backend/remote/handshake.h"

namespace adsm::remote {
namespace {

constexpr uint64_t kPage = 4096;

bool page_aligned(uint64_t v) { return v % kPage == 0; }

size_t body_size(Op op) {
    switch (op) {
    case Op::attach: return sizeof(AttachBody);
    case Op::commit:
    case Op::decommit:
    case Op::push:
    case Op::pull: return sizeof(RangeBody);
    case Op::fill: return sizeof(FillBody);
    case Op::bye: return 0;
    case Op::sync: return sizeof(SyncBody);
    case Op::launch: return kLaunchFixedBytes;  // and its arguments
    case Op::module: return kModuleFixedBytes;  // and its part
    case Op::function: return sizeof(FunctionBody);
    case Op::declare: return sizeof(DeclareBody);
    }
    return SIZE_MAX;
}

}  // namespace

Status parse_request(const void *msg, size_t n, Request *out) {
    memset(out, 0, sizeof *out);
    if (n < sizeof(RequestHeader)) return fail(adsmErrorInvalidValue, "a %zu-byte message is shorter than a request", n);
    memcpy(&out->header, msg, sizeof out->header);
    const RequestHeader &h = out->header;
    if (h.magic != kWireMagic) return fail(adsmErrorInvalidValue, "not a request (magic %#x)", h.magic);
    size_t want = body_size(h.op);
    if (want == SIZE_MAX) return fail(adsmErrorInvalidValue, "unknown operation %u", static_cast<unsigned>(h.op));
    const size_t carried = n - sizeof(RequestHeader);
    const bool variable = h.op == Op::launch || h.op == Op::module;
    const size_t most = h.op == Op::launch ? kMaxLaunchArgs : kModulePartBytes;
    if (h.length != carried || carried < want || (!variable && carried != want) || (variable && carried > want + most))
        return fail(adsmErrorInvalidValue, "operation %u declares %u body bytes and carries %zu; it takes %zu%s",
                    static_cast<unsigned>(h.op), h.length, carried, want, variable ? " and its arguments" : "");
    memcpy(&out->body, static_cast<const uint8_t *>(msg) + sizeof(RequestHeader), carried);
    switch (h.op) {
    case Op::attach:
        if (!page_aligned(out->body.attach.window_base) || !page_aligned(out->body.attach.window_size) ||
            out->body.attach.window_size == 0 || out->body.attach.window_size > kMaxWindow ||
            out->body.attach.window_base + out->body.attach.window_size < out->body.attach.window_base)
            return fail(adsmErrorInvalidValue, "a window must be whole pages, at most %llu bytes",
                        static_cast<unsigned long long>(kMaxWindow));
        break;
    case Op::fill:
        if (out->body.fill.value > 255) return fail(adsmErrorInvalidValue, "a fill value is a byte");
        break;
    case Op::launch: {
        const LaunchBody &l = out->body.launch;
        if (memchr(l.kernel, 0, sizeof l.kernel) == nullptr || l.kernel[0] == '\0')
            return fail(adsmErrorInvalidValue, "a launch names no kernel");
        if (l.args_size != carried - kLaunchFixedBytes)
            return fail(adsmErrorInvalidValue, "a launch declares %u argument bytes and carries %zu", l.args_size,
                        carried - kLaunchFixedBytes);
        for (int d = 0; d < 3; ++d)
            if (l.grid[d] == 0 || l.block[d] == 0) return fail(adsmErrorInvalidValue, "a launch with an empty grid or block");
        if (l.stream >= kMaxStreams) return fail(adsmErrorInvalidValue, "stream %u: at most %u", l.stream, kMaxStreams);
        if (l.module > kMaxModules) return fail(adsmErrorInvalidValue, "module %u: at most %u", l.module, kMaxModules);
        break;
    }
    case Op::module: {
        const ModuleBody &m = out->body.module;
        if (m.module == 0 || m.module > kMaxModules)
            return fail(adsmErrorInvalidValue, "module %u: 1 to %u", m.module, kMaxModules);
        if (m.length != carried - kModuleFixedBytes)
            return fail(adsmErrorInvalidValue, "a module part declares %u bytes and carries %zu", m.length,
                        carried - kModuleFixedBytes);
        if (m.length == 0 || m.total > kMaxModuleBytes || m.offset > m.total || m.length > m.total - m.offset)
            return fail(adsmErrorInvalidValue, "a module part of %u bytes at %llu of %llu (images of at most %llu bytes)",
                        m.length, static_cast<unsigned long long>(m.offset), static_cast<unsigned long long>(m.total),
                        static_cast<unsigned long long>(kMaxModuleBytes));
        break;
    }
    case Op::function: {
        const FunctionBody &f = out->body.function;
        if (f.module == 0 || f.module > kMaxModules)
            return fail(adsmErrorInvalidValue, "module %u: 1 to %u", f.module, kMaxModules);
        if (memchr(f.kernel, 0, sizeof f.kernel) == nullptr || f.kernel[0] == '\0')
            return fail(adsmErrorInvalidValue, "a function request names no kernel");
        break;
    }
    case Op::declare: {
        const DeclareBody &d = out->body.declare;
        if (d.module > kMaxModules) return fail(adsmErrorInvalidValue, "module %u: at most %u", d.module, kMaxModules);
        if (memchr(d.kernel, 0, sizeof d.kernel) == nullptr || d.kernel[0] == '\0')
            return fail(adsmErrorInvalidValue, "a declaration names no kernel");
        if (d.params > kMaxParams) return fail(adsmErrorInvalidValue, "%u parameters declared: at most %u", d.params, kMaxParams);
        for (uint32_t i = 0; i < d.params; ++i)
            if (d.sizes[i] == 0 || d.sizes[i] > kMaxLaunchArgs)
                return fail(adsmErrorInvalidValue, "parameter %u declared with %u bytes: 1 to %zu", i, d.sizes[i],
                            kMaxLaunchArgs);
        break;
    }
    case Op::sync:
        if (out->body.sync.stream >= kMaxStreams)
            return fail(adsmErrorInvalidValue, "stream %u: at most %u", out->body.sync.stream, kMaxStreams);
        if (uint32_t h = out->body.sync.heartbeat_ms; h && (h < kMinHeartbeatMs || h > kMaxHeartbeatMs))
            return fail(adsmErrorInvalidValue, "a heartbeat every %u ms: %u to %u, or 0", h, kMinHeartbeatMs,
                        kMaxHeartbeatMs);
        if (out->body.sync.flags & ~kSendSpans) return fail(adsmErrorInvalidValue, "unknown sync flags %#x", out->body.sync.flags);
        break;
    default: break;
    }
    return adsmSuccess;
}

Status ClientMemory::attach(uint64_t base, uint64_t size) {
    if (attached()) return fail(adsmErrorInvalidValue, "the client attached its window already");
    base_ = base;
    size_ = size;
    return adsmSuccess;
}

Status ClientMemory::commit(uint64_t addr, uint64_t len) {
    if (!attached()) return fail(adsmErrorInvalidValue, "no window attached");
    if (len == 0 || !page_aligned(addr) || !page_aligned(len) || addr < base_ || addr - base_ > size_ ||
        len > size_ - (addr - base_))
        return fail(adsmErrorInvalidValue, "[%#llx, +%llu) is not whole pages of the client's window",
                    static_cast<unsigned long long>(addr), static_cast<unsigned long long>(len));
    auto next = committed_.lower_bound(addr);
    if (next != committed_.end() && next->first < addr + len)
        return fail(adsmErrorInvalidValue, "[%#llx, +%llu) overlaps committed memory", static_cast<unsigned long long>(addr),
                    static_cast<unsigned long long>(len));
    if (next != committed_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second > addr)
            return fail(adsmErrorInvalidValue, "[%#llx, +%llu) overlaps committed memory",
                        static_cast<unsigned long long>(addr), static_cast<unsigned long long>(len));
    }
    if (len > capacity_ - used_)
        return fail(adsmErrorMemoryAllocation,
                    "remote device memory exhausted: %llu bytes requested, %llu of %llu bytes in use (the server's "
                    "--memory)",
                    static_cast<unsigned long long>(len), static_cast<unsigned long long>(used_),
                    static_cast<unsigned long long>(capacity_));
    committed_[addr] = len;
    used_ += len;
    return adsmSuccess;
}

Status ClientMemory::decommit(uint64_t addr, uint64_t len) {
    // Whole committed ranges, back to back, exactly covering [addr, addr+len).
    uint64_t at = addr;
    auto it = committed_.find(addr);
    while (at < addr + len && it != committed_.end() && it->first == at && it->second <= addr + len - at) {
        at += it->second;
        ++it;
    }
    if (len == 0 || at != addr + len)
        return fail(adsmErrorInvalidValue, "[%#llx, +%llu) is not committed memory", static_cast<unsigned long long>(addr),
                    static_cast<unsigned long long>(len));
    for (auto e = committed_.find(addr); e != committed_.end() && e->first < addr + len;) {
        used_ -= e->second;
        e = committed_.erase(e);
    }
    return adsmSuccess;
}

Status ClientMemory::check(uint64_t addr, uint64_t len) const {
    uint64_t at = addr, end = addr + len;
    if (end < addr) return fail(adsmErrorInvalidValue, "a range that wraps around");
    auto it = committed_.upper_bound(addr);
    if (it != committed_.begin()) --it;
    while (at < end) {
        if (it == committed_.end() || it->first > at || it->first + it->second <= at)
            return fail(adsmErrorInvalidValue, "[%#llx, +%llu) reaches memory the client did not commit",
                        static_cast<unsigned long long>(addr), static_cast<unsigned long long>(len));
        at = it->first + it->second;
        ++it;
    }
    return adsmSuccess;
}

}  // namespace adsm::remote
