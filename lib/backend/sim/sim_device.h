// The simulated discrete accelerator, host side.
//
// Device memory is a memfd of its own, physically separate from the host
// mirror.  The device server (this program re-executed in device mode, see
// sim_server.cpp) maps it at the window's addresses, so kernels use the very
// pointers the CPU uses; the host reaches it only through a DMA view at
// another address, the way a copy engine would.  Data the runtime has not
// copied is therefore really absent on the device.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/device.h"
#include "backend/exec/channel_host.h"
#include "backend/sim/copy_engine.h"
#include "backend/sim/link_model.h"
#include "backend/sim/pin_model.h"
#include "os/futex_rwlock.h"
#include "support/range_set.h"

namespace adsm {

class SimDevice final : public Device {
public:
    explicit SimDevice(const Config &config);
    ~SimDevice() override;

    const char *name() const override { return "sim"; }
    bool integrated() const override { return false; }
    uint64_t capacity() const override { return capacity_; }
    uint64_t used() const override { return used_.load(std::memory_order_relaxed); }
    bool fast_link() const override { return link_outpaces_tracking(link_.gbps()); }
    // With ADSM_SIM_PIN_US_PER_MIB, as the cuda back-end: mirror pages
    // count as pinned at their first use (pin_model.h).
    bool pins_host_memory() const override { return pins_.enabled(); }
    MirrorUse pin_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len) override {
        return pins_.use_for_cpu(lo, hi, start, len);
    }

    Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) override;
    // Before attach_window: this device's process is given no other
    // device's memory, and no other's is given this one's.  (A device
    // server's clients each have one; a program's devices are peers.)
    void keep_apart();
    // Kills the device process: kernels running there end, and a wait for
    // them returns (the device is lost; the next launch starts another).
    // Called from synchronize's `waiting`, or while nothing else uses the
    // device: no new process replaces this one meanwhile.
    void end_device_process();
    Status commit(uintptr_t dev, uint64_t bytes) override;
    void decommit(uintptr_t dev, uint64_t bytes) override;

    Status map_host_memory(uintptr_t dev, uint64_t bytes) override;
    Status map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes) override;
    void unmap_memory(uintptr_t dev, uint64_t bytes) override;

    Status copy_to_device(uintptr_t dev, const void *src, size_t n) override;
    Status copy_to_host(void *dst, uintptr_t dev, size_t n) override;
    Status fill(uintptr_t dev, int value, size_t n) override;
    // Two simulated devices copy between their memories directly, over
    // both their links at once (as PCIe peer-to-peer does), never through
    // host memory.
    bool can_copy_to(const Device &to) const override;
    Status copy_to_peer(Device &to, uintptr_t dev, size_t n) override;

    void start_copy_engine() override { engine_.start(); }
    uint64_t copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg) override;
    uint64_t copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg) override;
    void trace_kernels() override;
    Status wait_copies(uint64_t ticket) override;

    void detach_after_fork() override;

    Status create_stream(StreamId *out) override;
    void destroy_stream(StreamId id) override;
    Status launch(StreamId id, const LaunchDesc &launch) override;
    Status synchronize(StreamId id) override;
    // The same, calling `waiting` about every 50 ms until the kernels are
    // done (the device server answers its client's heartbeats from there).
    Status synchronize(StreamId id, const std::function<void()> &waiting);
    void take_kernel_spans(const KernelSpanSeen &seen) override;

    // The device process's pid, 0 if none was started (for tests that kill it).
    pid_t server_pid() const { return pid_.load(); }
    // The host's view of device memory at window address dev: where a
    // remote device server lets its client's RMA land (attached first).
    uint8_t *memory_at(uintptr_t dev) const { return dma_ + (dev - base_); }

private:
    Status check_range(uintptr_t dev, size_t n) const;
    Status start_server();          // under the exclusive lock
    // What kernels find at a range other than this device's own memory.
    struct Mapping {
        uint64_t bytes;
        exec::MapSource source;
        uint32_t peer;
    };
    Status add_mapping(uintptr_t dev, const Mapping &m);
    // The records that tell a device process what kernels find over
    // [lo, hi): a mapping where there is one, else this device's memory
    // where committed, else nothing.  With `fresh` (a process that just
    // started, the window all inaccessible) the inaccessible pieces are
    // left out.  Under ranges_mu_.
    void plan(uintptr_t lo, uintptr_t hi, bool fresh, std::vector<exec::MapRecord> *out) const;
    // [lo, hi) changed: told at the next launch (under ranges_mu_).
    void mark_unshown(uintptr_t lo, uintptr_t hi);
    bool server_alive();
    std::string death_reason() const;
    void handle_death(uint32_t generation);
    void transfer_done(Direction d, size_t n, uintptr_t dev, uint64_t start);
    // A synchronous operation that began at `start` returns no sooner than a GPU's would.
    void sync_floor(uint64_t start);

    Config config_;
    uint64_t capacity_;
    std::atomic<uint64_t> used_{0};
    LinkModel link_;
    CopyEngine engine_{link_};
    PinModel pins_;

    uintptr_t base_ = 0;
    uint64_t size_ = 0;
    int dev_fd_ = -1;
    int host_fd_ = -1;              // the host mirror (host-resident ranges map it)
    uint32_t index_ = 0;            // among the process's simulated devices (peer numbers)
    uint64_t peer_group_ = 0;       // devices that may reach each other's memory (keep_apart)
    // The ranges mapped to other memory, by start: a new device process
    // maps them again before it runs anything.  (Under ranges_mu_.)
    std::mutex ranges_mu_;
    std::map<uintptr_t, Mapping> mappings_;
    // Where this device's own memory is committed.  Kernels find nothing
    // elsewhere, as on a GPU: one that strays there faults instead of
    // making pages past ADSM_SIM_MEMORY (or a device server's --memory).
    RangeSet committed_;
    // Commits and decommits a running device process has not been told of:
    // told at the next launch, whatever came first, so that allocation
    // costs no message and no mapping change in that process each time.
    RangeSet unshown_;
    std::atomic<bool> unshown_any_{false};
    // Tells the device process of them (before a launch, under server_mu_).
    void show_unshown();
    void send_records(const std::vector<exec::MapRecord> &records);  // to the device process, in order
    std::mutex show_mu_;  // one show at a time, planned and sent in order
    // Records [dev, +bytes) committed or not, to be shown.
    void note_committed(uintptr_t dev, uint64_t bytes, bool committed);
    uint8_t *dma_ = nullptr;        // host view of device memory
    int channel_fd_ = -1;
    exec::Channel *channel_ = nullptr;
    std::unique_ptr<exec::ChannelHost> host_;

    // Shared by launches and waits; exclusive to start or bury a server.
    os::FutexRwLock server_mu_;
    std::atomic<bool> running_{false};
    std::atomic<uint32_t> generation_{0};
    std::atomic<pid_t> pid_{0};
    // The device process's own descriptor: a signal sent by it reaches that
    // process or none, never another that took its pid after it ended.
    std::atomic<int> pidfd_{-1};
    std::atomic<bool> kill_by_pid_{false};  // the kernel has no pidfds: the pid must do
    // ADSM_SIM_LAUNCH_US: the earliest time each stream's last kernel may
    // be seen complete.
    static constexpr uint32_t kLaunchSlots = 4096;
    uint64_t launch_ns_ = 0;
    uint64_t sync_copy_ns_ = 0;  // ADSM_SIM_SYNC_COPY_US
    std::atomic<uint64_t> done_not_before_[kLaunchSlots] = {};

    // Our end of a socket whose other end only the device process holds: it
    // reads as closed the moment that process ends, however it ends.
    std::atomic<int> sock_{-1};
};

}  // namespace adsm
