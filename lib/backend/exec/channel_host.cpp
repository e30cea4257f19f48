#include "backend/exec/channel_host.h"

#include <cstdio>
#include <cstring>

#include "backend/code_location.h"
#include "support/stats.h"
#include "support/trace.h"

namespace adsm::exec {

Status ChannelHost::create_stream(StreamId *out) {
    std::lock_guard<std::mutex> lock(streams_mu_);
    uint32_t id;
    if (!free_streams_.empty()) {
        id = free_streams_.back();
        free_streams_.pop_back();
    } else if (next_stream_ < kMaxStreams) {
        id = next_stream_++;
    } else {
        return fail(adsmErrorMemoryAllocation, "more than %u contexts are alive at once", kMaxStreams);
    }
    Stream &s = streams_[id];
    s.pending.store(false);
    s.lost.store(false);
    s.used.store(true);
    c_->streams[id].error.store(0, std::memory_order_relaxed);
    *out = id;
    return adsmSuccess;
}

void ChannelHost::destroy_stream(StreamId id) {
    if (id >= kMaxStreams) return;
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_[id].used.store(false);
    free_streams_.push_back(id);
}

Status ChannelHost::build_record(const KernelInfo &k, KernelRecord *rec) {
    memset(rec, 0, sizeof *rec);
    rec->kernel_id = k.id;
    rec->nparams = static_cast<uint32_t>(k.param_offsets.size());
    for (size_t i = 0; i < k.param_offsets.size() && i < kMaxKernelParams; ++i) rec->param_offset[i] = k.param_offsets[i];
    rec->host_fn = reinterpret_cast<uint64_t>(k.fn);
    snprintf(rec->name, sizeof rec->name, "%s", k.name.c_str());
    if (!needs_module_) return adsmSuccess;
    CodeLocation loc;
    std::string err;
    if (!locate_code(reinterpret_cast<const void *>(k.fn), &loc, &err))
        return fail(adsmErrorInvalidLaunch, "kernel '%s' cannot run on this device: %s", k.name.c_str(), err.c_str());
    if (loc.module_path.size() >= sizeof rec->module_path)
        return fail(adsmErrorInvalidLaunch, "kernel '%s': module path too long", k.name.c_str());
    rec->module_offset = loc.offset;
    rec->module_dev = loc.dev;
    rec->module_ino = loc.ino;
    snprintf(rec->module_path, sizeof rec->module_path, "%s", loc.module_path.c_str());
    return adsmSuccess;
}

Status ChannelHost::ensure_registered(const KernelInfo &k, uint32_t generation, const Alive &alive) {
    std::lock_guard<std::mutex> lock(reg_mu_);
    if (k.id >= registered_.size()) {
        registered_.resize(k.id + 1, 0);
        records_.resize(k.id + 1);
        record_errors_.resize(k.id + 1);
    }
    if (registered_[k.id] == generation + 1) return adsmSuccess;
    if (!records_[k.id] && record_errors_[k.id].empty()) {
        auto rec = std::make_unique<KernelRecord>();
        if (build_record(k, rec.get()) != adsmSuccess) record_errors_[k.id] = last_detail();
        else records_[k.id] = std::move(rec);
    }
    if (!records_[k.id]) return fail(adsmErrorInvalidLaunch, "%s", record_errors_[k.id].c_str());
    const KernelRecord &rec = *records_[k.id];
    // Registered under the lock, so any launch of this kernel queued after
    // it by another thread lands behind the registration in the ring.
    uint64_t pos = channel_enqueue(
        c_,
        [&](Command &cmd) {
            cmd.op = Op::register_kernel;
            cmd.stream = 0;
            cmd.kernel_id = k.id;
            cmd.size = sizeof rec;
            memcpy(cmd.payload, &rec, sizeof rec);
        },
        alive);
    if (pos == UINT64_MAX) return fail(adsmErrorDeviceLost, "the device stopped accepting commands");
    registered_[k.id] = generation + 1;
    return adsmSuccess;
}

Status ChannelHost::launch(StreamId id, const LaunchDesc &l, uint32_t generation, const Alive &alive) {
    Stream &s = streams_[id];
    if (Status st = ensure_registered(*l.kernel, generation, alive); st != adsmSuccess) return st;
    uint64_t pos = channel_enqueue(
        c_,
        [&](Command &cmd) {
            cmd.op = Op::launch;
            cmd.stream = id;
            cmd.kernel_id = l.kernel->id;
            cmd.grid = l.grid;
            cmd.block = l.block;
            cmd.size = l.args_size;
            if (l.args_size) memcpy(cmd.payload, l.args, l.args_size);
        },
        alive);
    if (pos == UINT64_MAX) return fail(adsmErrorDeviceLost, "the device stopped accepting commands");
    channel_ring_doorbell(c_);
    s.last_pos.store(pos, std::memory_order_relaxed);
    s.generation.store(generation, std::memory_order_relaxed);
    s.pending.store(true, std::memory_order_release);
    return adsmSuccess;
}

Status ChannelHost::map_memory(const MapRecord &rec, const Alive &alive) {
    uint64_t pos = channel_enqueue(
        c_,
        [&](Command &cmd) {
            cmd.op = Op::map_memory;
            cmd.stream = 0;
            cmd.kernel_id = 0;
            cmd.size = sizeof rec;
            memcpy(cmd.payload, &rec, sizeof rec);
        },
        alive);
    if (pos == UINT64_MAX) return fail(adsmErrorDeviceLost, "the device stopped accepting commands");
    channel_ring_doorbell(c_);
    return adsmSuccess;
}

Status ChannelHost::synchronize(StreamId id, const Alive &alive) {
    Stream &s = streams_[id];
    if (s.lost.exchange(false)) {
        s.pending.store(false);
        return fail(adsmErrorDeviceLost, "%s", lost_reason_);
    }
    if (s.pending.load(std::memory_order_acquire)) {
        if (!channel_wait(c_, s.last_pos.load(std::memory_order_relaxed), alive)) {
            // alive() said no; whoever handles the loss marks the streams.
            s.lost.store(false);
            s.pending.store(false);
            return fail(adsmErrorDeviceLost, "the device died while this context's kernels ran");
        }
        s.pending.store(false, std::memory_order_relaxed);
        if (trace::enabled()) trace_kernels();
        count_kernel_time();
    }
    StreamStatus &st = c_->streams[id];
    uint32_t e = st.error.load(std::memory_order_acquire);
    if (e == 0) return adsmSuccess;
    Status code = static_cast<Status>(e);
    if (st.signo)
        fail(code, "kernel '%s' crashed on the device: %s at address %p, block (%u,%u,%u) thread (%u,%u,%u)", st.kernel,
             st.message, reinterpret_cast<void *>(st.fault_addr), st.block_idx.x, st.block_idx.y, st.block_idx.z,
             st.thread_idx.x, st.thread_idx.y, st.thread_idx.z);
    else
        fail(code, "kernel '%s': %s", st.kernel, st.message);
    st.error.store(0, std::memory_order_release);
    return code;
}

void ChannelHost::count_kernel_time() {
    uint64_t now = c_->kernel_ns.load(std::memory_order_relaxed);
    uint64_t seen = kernel_ns_seen_.load(std::memory_order_relaxed);
    // Another thread's sync may have counted past this one's reading.
    while (now > seen && !kernel_ns_seen_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    if (now > seen) stats().add(Counter::kernel_ns, now - seen);
}

void ChannelHost::trace_kernels() {
    take_kernel_spans([](const char *name, uint32_t stream, uint64_t start, uint64_t end, bool failed) {
        trace::record(trace::Kind::kernel, start, end, stream, failed, name, trace::stream_track(stream));
    });
}

void ChannelHost::take_kernel_spans(const SpanSeen &seen) {
    os::FutexGuard lock(spans_mu_);
    uint64_t written = c_->spans_written.load(std::memory_order_acquire);
    // Spans older than the ring were overwritten before anyone looked.
    if (written - spans_read_ > kSpanSlots) spans_read_ = written - kSpanSlots;
    for (; spans_read_ < written; ++spans_read_) {
        KernelSpan &k = c_->spans[spans_read_ % kSpanSlots];
        if (k.seq.load(std::memory_order_acquire) != spans_read_ + 1) continue;
        uint32_t stream = k.stream, id = k.kernel_id, failed = k.failed;
        uint64_t start = k.start_ns, end = k.end_ns;
        std::atomic_thread_fence(std::memory_order_acquire);
        if (k.seq.load(std::memory_order_relaxed) != spans_read_ + 1) continue;  // overwritten while read
        char name[sizeof(KernelRecord::name)] = "kernel";
        {
            std::lock_guard<std::mutex> reg(reg_mu_);
            if (id < records_.size() && records_[id]) snprintf(name, sizeof name, "%s", records_[id]->name);
        }
        seen(name, stream, start, end, failed != 0);
    }
}

void ChannelHost::lost(uint32_t generation, const char *why) {
    snprintf(lost_reason_, sizeof lost_reason_, "%s", why);
    uint64_t done = c_->completed.load(std::memory_order_acquire);
    for (Stream &s : streams_) {
        if (!s.used.load() || !s.pending.load(std::memory_order_acquire)) continue;
        if (s.generation.load() == generation && s.last_pos.load() >= done) s.lost.store(true);
    }
}

void ChannelHost::reset() {
    channel_reset_ring(c_);
    for (uint32_t i = 0; i < kMaxStreams; ++i) {
        if (!streams_[i].lost.load()) streams_[i].pending.store(false);
    }
}

}  // namespace adsm::exec
