#include "backend/exec/executor.h"

#include <signal.h>

#include <cstdio>
#include <cstring>

#include "os/clock.h"
#include "os/futex.h"
#include "os/stop_signal.h"

namespace adsm::exec {
namespace {
// An idle device spins this long for the next command before sleeping, so
// back-to-back launches do not pay for a futex wake each.
constexpr uint64_t kIdleSpinNs = 50000;

const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    default: return "signal";
    }
}
}  // namespace

Executor::Executor(Channel *channel, KernelResolver *resolver, unsigned threads, MemoryMapper *mapper)
    : c_(channel), resolver_(resolver), mapper_(mapper), runner_(threads) {}

void Executor::stop() {
    stop_.store(true);
    c_->doorbell.fetch_add(1);
    os::futex_wake(&c_->doorbell);
}

bool Executor::wait_for_command(uint64_t pos) {
    os::IdleStack idle;  // the kernels it ran are over
    Command &slot = c_->ring[pos % kRingSlots];
    uint64_t start = os::now_ns();
    for (;;) {
        if (slot.turn.load(std::memory_order_acquire) == pos + 1) return true;
        if (stop_.load(std::memory_order_relaxed)) return false;
        if (os::now_ns() - start < kIdleSpinNs) {
            os::cpu_relax();
            continue;
        }
        uint32_t bell = c_->doorbell.load(std::memory_order_seq_cst);
        c_->device_sleeping.store(1, std::memory_order_seq_cst);
        if (slot.turn.load(std::memory_order_seq_cst) != pos + 1 && !stop_.load())
            os::futex_wait(&c_->doorbell, bell, 200ull * 1000 * 1000);
        c_->device_sleeping.store(0, std::memory_order_relaxed);
        start = os::now_ns();
    }
}

void Executor::run() {
    for (;;) {
        uint64_t pos = c_->dequeue_pos.load(std::memory_order_relaxed);
        if (!wait_for_command(pos)) return;
        Command &slot = c_->ring[pos % kRingSlots];
        current_.op = slot.op;
        current_.stream = slot.stream;
        current_.kernel_id = slot.kernel_id;
        current_.size = slot.size;
        current_.grid = slot.grid;
        current_.block = slot.block;
        memcpy(current_.payload, slot.payload, slot.size <= kMaxArgsBytes ? slot.size : kMaxArgsBytes);
        slot.turn.store(pos + kRingSlots, std::memory_order_release);
        c_->dequeue_pos.store(pos + 1, std::memory_order_relaxed);

        switch (current_.op) {
        case Op::register_kernel: execute_register(current_); break;
        case Op::launch: execute_launch(current_); break;
        case Op::map_memory: execute_map(current_); break;
        }

        c_->completed.store(pos + 1, std::memory_order_release);
        c_->completion_epoch.fetch_add(1, std::memory_order_seq_cst);
        if (c_->host_waiters.load(std::memory_order_seq_cst)) os::futex_wake(&c_->completion_epoch);
    }
}

void Executor::execute_register(const Command &cmd) {
    KernelRecord rec;
    memcpy(&rec, cmd.payload, sizeof rec);
    rec.name[sizeof rec.name - 1] = '\0';
    rec.module_path[sizeof rec.module_path - 1] = '\0';
    if (rec.kernel_id >= kernels_.size()) kernels_.resize(rec.kernel_id + 1);
    Kernel &k = kernels_[rec.kernel_id];
    k.name = rec.name;
    k.nparams = rec.nparams < kMaxKernelParams ? rec.nparams : kMaxKernelParams;
    memcpy(k.param_offset, rec.param_offset, sizeof k.param_offset);
    k.error.clear();
    k.fn = resolver_->resolve(rec, &k.error);
}

void Executor::execute_map(const Command &cmd) {
    MapRecord rec;
    memcpy(&rec, cmd.payload, sizeof rec);
    std::string err = "this device cannot map memory";
    if (mapper_ && mapper_->map(rec, &err)) return;
    if (c_->map_failure[0] == '\0')
        snprintf(c_->map_failure, sizeof c_->map_failure, "the device could not map %s memory at %#llx (+%llu): %s",
                 rec.source == MapSource::host   ? "host"
                 : rec.source == MapSource::peer ? "another device's"
                 : rec.source == MapSource::none ? "no"
                                                 : "its own", static_cast<unsigned long long>(rec.addr),
                 static_cast<unsigned long long>(rec.len), err.c_str());
}

void Executor::execute_launch(const Command &cmd) {
    if (c_->map_failure[0] != '\0') {
        report(cmd.stream, adsmErrorLaunchFailure, "?", nullptr, c_->map_failure);
        return;
    }
    if (cmd.kernel_id >= kernels_.size() || (!kernels_[cmd.kernel_id].fn && kernels_[cmd.kernel_id].error.empty())) {
        report(cmd.stream, adsmErrorInvalidLaunch, "?", nullptr, "kernel was never registered on the device");
        return;
    }
    const Kernel &k = kernels_[cmd.kernel_id];
    if (!k.fn) {
        report(cmd.stream, adsmErrorInvalidLaunch, k.name.c_str(), nullptr, k.error.c_str());
        return;
    }
    void *args[kMaxKernelParams];
    for (uint32_t i = 0; i < k.nparams; ++i)
        args[i] = const_cast<unsigned char *>(cmd.payload) + k.param_offset[i];
    FaultInfo fault;
    // Named for the host's benefit, should this process die in the kernel.
    snprintf(c_->running, sizeof c_->running, "%s", k.name.c_str());
    uint64_t start = os::now_ns();
    bool ok = runner_.run(k.fn, cmd.grid, cmd.block, args, &fault);
    c_->running[0] = '\0';
    record_span(cmd, start, !ok);
    if (!ok)
        report(cmd.stream, adsmErrorLaunchFailure, k.name.c_str(), &fault, signal_name(fault.signo));
}

void Executor::record_span(const Command &cmd, uint64_t start_ns, bool failed) {
    uint64_t i = c_->spans_written.load(std::memory_order_relaxed);
    KernelSpan &s = c_->spans[i % kSpanSlots];
    s.seq.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.stream = cmd.stream;
    s.kernel_id = cmd.kernel_id;
    s.start_ns = start_ns;
    s.end_ns = os::now_ns();
    c_->kernel_ns.fetch_add(s.end_ns - start_ns, std::memory_order_relaxed);
    s.failed = failed;
    s.seq.store(i + 1, std::memory_order_release);
    c_->spans_written.store(i + 1, std::memory_order_release);
}

void Executor::report(uint32_t stream, adsmError_t error, const char *kernel, const FaultInfo *fault,
                      const char *message) {
    if (stream >= kMaxStreams) return;
    StreamStatus &s = c_->streams[stream];
    if (s.error.load(std::memory_order_acquire) != 0) return;  // the first error is the one reported
    s.signo = fault ? fault->signo : 0;
    s.fault_addr = fault ? fault->addr : 0;
    s.block_idx = fault ? fault->block : adsmDim3{0, 0, 0};
    s.thread_idx = fault ? fault->thread : adsmDim3{0, 0, 0};
    snprintf(s.kernel, sizeof s.kernel, "%s", kernel);
    snprintf(s.message, sizeof s.message, "%s", message);
    s.error.store(static_cast<uint32_t>(error), std::memory_order_release);
}

}  // namespace adsm::exec
