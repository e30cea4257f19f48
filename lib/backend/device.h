// The accelerator back-end interface.  A device backs ranges of the shared
// window with its own memory, copies between host memory and device
// addresses, and runs kernels on streams (one per context) in order.
//
// Addresses the device sees are window addresses: the memory manager picks
// them, the device only commits memory behind them.  That is what keeps CPU
// and device addresses identical on every back-end.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/kernel.h"
#include "support/config.h"
#include "os/fault_injection.h"
#include "support/status.h"

namespace adsm {

using StreamId = uint32_t;

// Runs when an asynchronous copy has ended (on the copy engine's thread, or
// on the submitter's when the copy was done on the spot): `status` says
// whether the data landed.  After a failure the destination holds nothing
// the caller may rely on.
using CopyDone = void (*)(void *arg, Status status);

// What one tracked write costs (a userfaultfd write-protect fault the kernel
// resolves): about 0.6 us a page on a GPU host, 38 ms of a 256 MiB round
// trip on an H100.  Over a link that moves a page in less, a protection
// fault per block finds what the CPU wrote for less than tracking each page.
constexpr double kTrackedWriteNs = 600;
constexpr bool link_outpaces_tracking(double gbps) { return gbps > 0 && 4096 / gbps < kTrackedWriteNs; }

class Device {
public:
    virtual ~Device() = default;

    virtual const char *name() const = 0;
    // Device and host share physical memory: nothing ever needs copying.
    virtual bool integrated() const = 0;
    virtual uint64_t capacity() const = 0;
    virtual uint64_t used() const = 0;
    // A range reads as zeros once committed, whatever it held before: a
    // zeroed allocation's device copy needs no fill of its own (a round
    // trip each on a remote device).
    virtual bool commits_zeroed() const { return false; }

    // Where the window must lie, for a device whose driver hands out device
    // addresses (a GPU): the driver reserves the range first and the host
    // mirror is then mapped over that reservation.  *out is the reserved
    // base, or 0 when any free range will do (the default).
    virtual Status reserve_window(uintptr_t preferred, uint64_t size, uintptr_t *out);
    // Sets up device memory for the window.  host_fd backs the host mirror;
    // host_alias is the runtime's always-writable view of it, the host
    // memory every protocol copy names.
    virtual Status attach_window(uintptr_t base, uint64_t size, int host_fd, uint8_t *host_alias) = 0;
    // The device pins host-mirror pages for its copy engine: they must never
    // be handed back to the system (hole punching) while it may use them.
    virtual bool pins_host_memory() const { return false; }
    // It pins every mirror page of a commit at once, so those pages exist
    // and entering them into the view in one call is cheap.
    virtual bool pins_at_commit() const { return false; }
    // The CPU faults on [*start, *start + *len) of an object at [lo, hi)
    // (the block its protocol opens).  A device that pins mirror pages at
    // their first use pins the pieces of its memory (granules) that hold the
    // range now, widens the range to them (within the object) and says
    // whether the CPU uses any of them for the first time: their pages exist
    // then, and the caller may enter them into the view in one call.  Pinning
    // by the piece, not the object, leaves the parts of big objects the CPU
    // never touches unpinned and unmade.  Runs in the fault handler.
    enum class MirrorUse { not_pinned, again, first };
    virtual MirrorUse pin_for_cpu(uintptr_t /*lo*/, uintptr_t /*hi*/, uintptr_t * /*start*/, uint64_t * /*len*/) {
        return MirrorUse::not_pinned;
    }
    // Pins host memory the runtime keeps and copies through again and again
    // (the interposer's I/O staging), so those copies run at the link's
    // pinned speed and overlap the program; false where the device does not
    // pin (its copies run at one speed, or it stages them itself).
    virtual bool pin_staging(void * /*p*/, size_t /*n*/) { return false; }
    virtual void unpin_staging(void * /*p*/) {}
    // A 4 KiB page crosses the link to the device faster than the kernel
    // takes to report one tracked write: see link_outpaces_tracking.
    virtual bool fast_link() const { return false; }
    // Backs [dev, dev+bytes) with device memory; fails cleanly when full.
    virtual Status commit(uintptr_t dev, uint64_t bytes) = 0;
    // Device memory goes; the host copy stays (an evicted object's is its
    // only one).
    virtual void decommit(uintptr_t dev, uint64_t bytes) = 0;
    // The host copy of [dev, dev+bytes) is garbage (its object was freed):
    // a device that keeps the mirror's pages (pins_host_memory) gives back
    // those it does not pin.
    virtual void forget_host_copy(uintptr_t, uint64_t) {}

    // Devices that share the window's addresses with this one (GPUs of one
    // driver: one address space per process) hold memory at an address one
    // at a time.  Objects of different such devices must lie
    // mapping_granularity() apart, and one moves to another such device by
    // hand_over: `to` takes over [dev, dev+bytes) (whole granules of this
    // device's, the object's alone) with their contents, at the same
    // addresses; all or nothing.
    virtual bool shares_addresses_with(const Device &) const { return false; }
    virtual uint64_t mapping_granularity() const { return 4096; }
    virtual Status hand_over(Device &to, uintptr_t dev, uint64_t bytes);

    // What kernels on this device find at [dev, dev+bytes) (whole pages),
    // from the next launch on:
    //   map_host_memory: the host mirror's own pages (host-resident memory:
    //     nothing is ever copied there, no device memory backs it);
    //   map_peer_memory: `holder`'s device memory, where an object lives
    //     that this device's kernels reach over a peer link;
    //   unmap_memory: this device's own memory again (uncommitted).
    // A device that cannot map that memory at window addresses refuses; an
    // integrated one has nothing to do.
    virtual Status map_host_memory(uintptr_t dev, uint64_t bytes);
    virtual Status map_peer_memory(Device &holder, uintptr_t dev, uint64_t bytes);
    virtual void unmap_memory(uintptr_t, uint64_t) {}

    // Synchronous copies and fills through the device's copy engine.  The
    // copies are async-signal-safe: the fault handler moves data with them.
    virtual Status copy_to_device(uintptr_t dev, const void *src, size_t n) = 0;
    virtual Status copy_to_host(void *dst, uintptr_t dev, size_t n) = 0;
    virtual Status fill(uintptr_t dev, int value, size_t n) = 0;

    // Copies [dev, dev+n) of this device's memory to the same addresses in
    // `to`'s, without going through host memory, where the two devices can
    // (a peer link); the runtime otherwise moves the data through the host
    // copy.  Synchronous.
    virtual bool can_copy_to(const Device &) const { return false; }
    virtual Status copy_to_peer(Device &to, uintptr_t dev, size_t n);

    // Asynchronous copies, in submission order, overlapping the caller's
    // work.  Return a ticket for wait_copies, or 0 if the copy was done (or
    // failed) on the spot: then `done` already ran.  Async-signal-safe.  The
    // ranges must be valid (checked by the caller).  A copy that fails is
    // reported twice: to its `done`, and by the next wait_copies.
    virtual void start_copy_engine() {}
    virtual uint64_t copy_to_device_async(uintptr_t dev, const void *src, size_t n, CopyDone done, void *arg);
    virtual uint64_t copy_to_host_async(void *dst, uintptr_t dev, size_t n, CopyDone done, void *arg);
    // Waits for every asynchronous copy up to `ticket` (kAllCopies, or any
    // ticket not issued yet, such as one of another device an object left:
    // all so far, never one to come).  Returns, once, the first failure of
    // an asynchronous copy not reported yet, so that the call that waits (a
    // release, an I/O call) fails instead of going on with data that never
    // landed.
    static constexpr uint64_t kAllCopies = UINT64_MAX;
    virtual Status wait_copies(uint64_t) { return take_copy_failure(); }

    // In a fork child: let go of the device without disturbing the parent's
    // use of it (close descriptors, forget the device process).
    virtual void detach_after_fork() {}
    // Whether a fork child can still read this device's memory (it lives in
    // the process's own pages).  A driver's GPU or a server's device cannot:
    // what only it holds is brought to the host before the fork.
    virtual bool serves_fork_child() const { return true; }

    // Draws the kernels that have run and were not drawn yet on the trace
    // (synchronizations draw the ones they wait for; this catches the rest
    // when the trace is written).
    virtual void trace_kernels() {}
    // Hands over the kernels that ran since the last look instead (a device
    // server sends them to its client for its trace); sim and cpu keep
    // them, other devices none.
    using KernelSpanSeen =
        std::function<void(const char *name, uint32_t stream, uint64_t start_ns, uint64_t end_ns, bool failed)>;
    virtual void take_kernel_spans(const KernelSpanSeen &) {}

    // The device runs GPU code (modules, a routed program's own kernels)
    // rather than host functions.
    virtual bool runs_gpu_code() const { return false; }
    // GPU code.  A module is a driver image (cubin, fatbin, PTX); a function
    // of it is found by name with its parameter sizes as the driver reports
    // them.  Devices that run host functions refuse modules.
    virtual Status load_module(const void *image, size_t size, void **module);
    virtual Status module_function(void *module, const char *name, void **fn, std::vector<uint32_t> *param_sizes);
    // The sizes the program stated for fn's parameters (all of them), where
    // the driver reported kUnknownParamSize for some: a device whose kernels
    // are laid out elsewhere (a server) is told them; others need nothing.
    virtual Status declare_params(void * /*fn*/, const std::vector<uint32_t> & /*sizes*/) { return adsmSuccess; }
    // The parameter sizes of a driver function the program obtained itself
    // (a routed program's own kernel).
    virtual Status function_params(void *fn, const char *name, std::vector<uint32_t> *param_sizes);
    // The driver context whose memory the window is (Level Zero: a routed
    // program's objects must live in it to reach shared memory), or null.
    virtual void *native_context() const { return nullptr; }
    // The driver's handle of the GPU this device is (Level Zero: a routed
    // program's work on another GPU is the driver's alone), or null.
    virtual void *native_device() const { return nullptr; }
    // Whether this device can run k at all (host function or module code),
    // checked before a call releases anything.
    virtual Status check_kernel(const KernelInfo &k) const;

    virtual Status create_stream(StreamId *out) = 0;
    virtual void destroy_stream(StreamId id) = 0;
    // Queues a kernel; it runs after everything queued on the stream before.
    virtual Status launch(StreamId id, const LaunchDesc &launch) = 0;
    // Makes the stream wait for what was queued so far on a stream of the
    // program's own in the device's native API (a CUDA graph's launch), so
    // that synchronizing it waits for that too.  Devices without native
    // streams refuse.
    virtual Status follow(StreamId id, void *native_stream);
    // Waits for the stream; returns (and clears) the first error since the
    // previous synchronize.
    virtual Status synchronize(StreamId id) = 0;

protected:
    // The first asynchronous-copy failure not reported yet; both are
    // async-signal-safe (the fault handler submits and waits for copies).
    void note_copy_failure(Status s);
    Status take_copy_failure();
    // Failure injection for tests (os/fault_injection.h): the error the
    // armed event at `site` gets, naming `what`; success when none is armed.
    Status injected_failure(os::injection::Site site, const char *what) const;

private:
    std::atomic<int> copy_failure_{adsmSuccess};
};

// Builds the back-end `name`, or explains why it cannot.
Status create_device(const std::string &name, const Config &config, std::unique_ptr<Device> *out);
// Builds every device of config.devices, device 0 first, or explains why
// they cannot serve one process together.
Status create_devices(const Config &config, std::vector<std::unique_ptr<Device>> *out);

// Whether every device of a list works on the host's own pages: one memory
// for all, nothing ever copied or protected.  A list mixing kinds is not.
template <class List>
bool all_integrated(const List &devices) {
    for (const auto &d : devices)
        if (!d->integrated()) return false;
    return true;
}

}  // namespace adsm
