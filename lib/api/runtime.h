// The process-wide runtime, started on first use.  It is never destroyed:
// threads and exit handlers may still call in while the process winds down.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/kernel_registry.h"
#include "backend/device.h"
#include "gc/collector.h"
#include "memory/address_space.h"
#include "memory/manager.h"
#include "memory/region_table.h"
#include "os/uffd.h"
#include "protocols/protocol.h"
#include "support/config.h"

namespace adsm {

struct Runtime {
    Config config;
    std::vector<std::unique_ptr<Device>> devices;  // ADSM_DEVICE's list, device 0 first
    Device *device = nullptr;  // device 0: what every device has in common (integrated or not, GPU code)
    AddressSpace space;
    RegionTable table;
    std::unique_ptr<os::UffdTracker> tracker;  // when writes are tracked without faults
    std::unique_ptr<os::UffdTracker> gc_tracker;  // minor collections' own, when the protocol has none
    std::unique_ptr<Protocol> protocol;
    std::unique_ptr<Manager> manager;
    KernelRegistry kernels;
    // The fault handler serves the window: from the start where the protocol
    // takes faults, else from the first fork (whose hold closes objects).
    std::atomic<bool> faults_served{false};
    // The collector, started by the first call that needs it.
    std::atomic<gc::Collector *> collector{nullptr};
    // Set by the program's first API call or routed GPU call, and at the
    // start in chaos mode: ProtocolEnv::kernels_expected.
    std::atomic<bool> kernels_expected{false};
    // Set by the program's first kernel launched with the API (adsmCall):
    // from then on, with a GPU API routed, a thread's malloc'd shared memory
    // is its own context's (note_api_launch).
    std::atomic<bool> api_launches{false};
};

// The program may launch kernels from now on.  (Read first: API calls on
// many threads need not write the flag's line each time.)
inline void expect_kernels(Runtime &rt) {
    if (!rt.kernels_expected.load(std::memory_order_relaxed)) rt.kernels_expected.store(true, std::memory_order_relaxed);
}

// A kernel launched with the API (adsmCall), which releases the calling
// thread's context: malloc'd shared memory goes to that context from now
// on, not to the program's, which routed GPU launches release.  At the
// first, what the program malloc'd before moves to the calling thread's
// context (where no routed launch used it yet), so that a program written
// for the API hands its malloc'd buffers to its kernels on a GPU as it does
// on sim.  (Other API calls do not count: a library of kernels for routed
// launches registers them with adsmRegisterKernel.)
void note_api_launch(Runtime &rt);

// The runtime, starting it if needed.  A failed start is remembered: every
// later call fails the same way, with the same message.  In the child of a
// fork the runtime is gone: the child's shared memory became ordinary memory.
Status runtime(Runtime **out);

// The runtime if it ever started, in a fork child too (its tables remain
// readable there); nullptr otherwise.  Never starts it.
Runtime *started_runtime();
bool forked_child();
// Whether the runtime started and runs in this very process: not a fork
// child, nor a vfork child (another process in the same memory, which
// must not enter the runtime: its locks and threads are the parent's).
bool in_runtime_process();
// Why the runtime could not start, when a start failed; nullptr otherwise.
const char *start_failure();

// The runtime's collector, starting it if needed.
Status collector(Runtime &rt, gc::Collector **out);

// The devices' back-end names, as ADSM_DEVICE lists them ("sim,sim").
std::string device_names(const Runtime &rt);

// "uffd", "mprotect", or "-" when the protocol tracks no writes.
const char *dirty_tracking_name(const Runtime &rt);

// Window size for a device of `capacity` bytes unless ADSM_VA_SIZE says otherwise.
uint64_t default_window_size(uint64_t capacity);
// That size, or less under an address-space limit (RLIMIT_AS).
uint64_t fit_address_limit(uint64_t window);

}  // namespace adsm
