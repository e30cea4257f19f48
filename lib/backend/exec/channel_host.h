// The host side of a channel, shared by every back-end that runs kernels
// through an Executor: stream slots, lazy kernel registration, launches and
// waits, and the bookkeeping that turns a lost device into an error on
// exactly the streams that had work on it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/device.h"
#include "backend/exec/channel.h"
#include "os/futex_lock.h"

namespace adsm::exec {

class ChannelHost {
public:
    using Alive = std::function<bool()>;

    // needs_module: the executor runs in another process and must find
    // kernels by module and offset rather than by host address.
    ChannelHost(Channel *channel, bool needs_module) : c_(channel), needs_module_(needs_module) {}

    Status create_stream(StreamId *out);
    void destroy_stream(StreamId id);

    // Queues a launch for the executor of `generation`.
    Status launch(StreamId id, const LaunchDesc &l, uint32_t generation, const Alive &alive);
    // Queues a change of what kernels find at [addr, addr+len), ahead of
    // every launch queued after it.
    Status map_memory(const MapRecord &rec, const Alive &alive);
    // Waits for the stream's last launch and reports its first error.
    Status synchronize(StreamId id, const Alive &alive);

    // The executor of `generation` is gone: streams with unfinished work on
    // it will report adsmErrorDeviceLost.
    void lost(uint32_t generation, const char *why);
    // Prepares the channel for a new executor (after lost()).
    void reset();

    // Draws the kernels that ran since the last look on the trace (each
    // synchronize does, for the kernels it waited for).
    void trace_kernels();
    // The kernels that ran since the last look, each once, to `seen`
    // (trace_kernels' source; the device server sends them to its client).
    using SpanSeen = std::function<void(const char *name, uint32_t stream, uint64_t start_ns, uint64_t end_ns,
                                        bool failed)>;
    void take_kernel_spans(const SpanSeen &seen);

private:
    struct Stream {
        std::atomic<bool> used{false};
        std::atomic<bool> pending{false};  // launches not yet waited for
        std::atomic<uint64_t> last_pos{0};
        std::atomic<uint32_t> generation{0};
        std::atomic<bool> lost{false};
    };
    Status ensure_registered(const KernelInfo &k, uint32_t generation, const Alive &alive);
    Status build_record(const KernelInfo &k, KernelRecord *rec);

    Channel *c_;
    bool needs_module_;
    Stream streams_[kMaxStreams];
    std::mutex streams_mu_;  // stream slot allocation only
    std::vector<uint32_t> free_streams_;
    uint32_t next_stream_ = 0;

    std::mutex reg_mu_;
    std::vector<uint32_t> registered_;             // kernel id -> generation registered + 1
    std::vector<std::unique_ptr<KernelRecord>> records_;
    std::vector<std::string> record_errors_;
    char lost_reason_[200] = {};

    os::FutexLock spans_mu_;  // synchronize, from the fault handler too, drains the spans
    uint64_t spans_read_ = 0;
    // Adds the kernel time the device counted since the last sync to the
    // statistics.
    void count_kernel_time();
    std::atomic<uint64_t> kernel_ns_seen_{0};
};

}  // namespace adsm::exec
