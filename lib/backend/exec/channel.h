// The command channel between a host and a device executor: a bounded
// multi-producer ring of commands, a completion counter and per-stream error
// slots.  It only holds plain data and atomics, so it works unchanged in
// memory shared by two processes (sim) or in one process (cpu).
//
// Commands complete in ring order: position p is done once completed > p.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "adsm.h"
#include "backend/kernel.h"

namespace adsm::exec {

constexpr uint32_t kChannelMagic = 0xad5a0c01;
constexpr uint32_t kRingSlots = 256;
constexpr uint32_t kMaxStreams = 4096;

enum class Op : uint32_t {
    launch = 1,
    register_kernel = 2,
    map_memory = 3,
};

// The payload of a map_memory command: what kernels find at [addr,
// addr+len) from then on.  Ordered with launches, so a kernel queued after
// it sees the new mapping and one queued before never does.
enum class MapSource : uint32_t {
    device = 0,  // the device's own memory (where committed)
    host = 1,    // the host mirror's pages: host-resident memory
    peer = 2,    // another device's memory (MapRecord::peer): a peer link
    none = 3,    // nothing: a kernel that reaches there faults
};
struct MapRecord {
    uint64_t addr;
    uint64_t len;
    MapSource source;
    uint32_t peer;  // which device, for MapSource::peer (the back-end numbers them)
};

// The payload of a register_kernel command: where the kernel's code is.
struct KernelRecord {
    uint32_t kernel_id;
    uint32_t nparams;
    uint32_t param_offset[kMaxKernelParams];
    uint64_t host_fn;          // the host address (for in-process devices)
    uint64_t module_offset;    // host_fn minus its module's load address
    uint64_t module_dev;       // identity of the module file
    uint64_t module_ino;
    char name[128];
    char module_path[1024];    // "" for the main program
};
static_assert(sizeof(KernelRecord) <= kMaxArgsBytes, "kernel record must fit a command payload");

struct alignas(64) Command {
    std::atomic<uint64_t> turn;  // ring sequencing (bounded MPMC queue)
    Op op;
    uint32_t stream;
    uint32_t kernel_id;
    uint32_t size;               // payload bytes
    adsmDim3 grid;
    adsmDim3 block;
    alignas(16) unsigned char payload[kMaxArgsBytes];
};

// When a kernel ran, for the trace.  The executor overwrites the oldest
// span when the host has not read them in time; seq tells the host whether
// a slot still holds the span it wants.
constexpr uint32_t kSpanSlots = 1024;
struct KernelSpan {
    std::atomic<uint64_t> seq;  // span index + 1, written last; 0 while being filled
    uint32_t stream;
    uint32_t kernel_id;
    uint64_t start_ns;
    uint64_t end_ns;
    uint32_t failed;
};

enum class DeviceState : uint32_t { starting = 0, ready = 1, failed = 2 };

struct alignas(64) StreamStatus {
    std::atomic<uint32_t> error;  // adsmError_t of the first failure since cleared
    int32_t signo;
    uint64_t fault_addr;
    adsmDim3 block_idx;
    adsmDim3 thread_idx;
    char kernel[64];
    char message[160];
};

struct Channel {
    uint32_t magic;
    uint32_t slots;
    uint64_t window_base;
    uint64_t window_size;
    std::atomic<uint32_t> state;  // DeviceState, also a futex word
    char failure[256];            // why the device could not start
    char death[160];              // why the device process ended, if it could tell
    char running[64];             // the kernel running now ("" between kernels)
    // Set when a map_memory command failed: kernels queued after it would
    // see the wrong memory, so every launch fails with this instead.
    char map_failure[160];

    alignas(64) std::atomic<uint64_t> enqueue_pos;
    alignas(64) std::atomic<uint64_t> dequeue_pos;
    alignas(64) std::atomic<uint32_t> doorbell;        // futex: bumped to wake a sleeping device
    std::atomic<uint32_t> device_sleeping;
    alignas(64) std::atomic<uint64_t> completed;       // commands done
    std::atomic<uint32_t> completion_epoch;            // futex: bumped per completion
    std::atomic<uint32_t> host_waiters;

    alignas(64) std::atomic<uint64_t> spans_written;
    KernelSpan spans[kSpanSlots];
    // Nanoseconds kernels have run, all of them: the host counts what it
    // has not seen at each sync (Counter::kernel_ns), spans or no spans.
    std::atomic<uint64_t> kernel_ns;

    Command ring[kRingSlots];
    StreamStatus streams[kMaxStreams];
};

// Prepares a zeroed Channel for use.
void channel_init(Channel *c, uint64_t window_base, uint64_t window_size);
// Empties the ring for a new executor; stream errors are kept.
void channel_reset_ring(Channel *c);

// Producer side.  Reserves a slot, lets fill() write the command, and
// publishes it; returns the command's position or UINT64_MAX when the ring
// stayed full until alive() said the device is gone.
template <class Fill, class Alive>
uint64_t channel_enqueue(Channel *c, Fill &&fill, Alive &&alive);

// Wakes the device if it sleeps.  Call after enqueueing.
void channel_ring_doorbell(Channel *c);

// Waits until position pos has completed.  alive() is polled when the wait
// takes long; false from it ends the wait with false.
template <class Alive>
bool channel_wait(Channel *c, uint64_t pos, Alive &&alive);

}  // namespace adsm::exec

#include "backend/exec/channel_impl.h"
