// Requests and replies between a remote device's client and its server,
// after the handshake.  Every request is one message: a header and a body
// of the size its operation declares, answered by one reply.  Bulk data
// never travels here: it moves by RMA into the client's exposed memory.
//
// The server trusts nothing in a request: parse_request checks the framing
// and each body's own rules; ClientMemory checks that every range lies in
// what that client committed.  A request that fails either closes that
// client's connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "support/status.h"

namespace adsm::remote {

enum class Op : uint32_t {
    attach = 1,    // the client's window: where its device memory lives
    commit = 2,    // back [addr, addr+len) of the window with device memory
    decommit = 3,  // give it back
    fill = 4,      // set [addr, addr+len) to a byte
    bye = 5,       // the client is done
    launch = 6,    // run a kernel the server registered, by name
    sync = 7,      // wait for a stream's kernels; the first error since its last sync
    // A server whose device memory is not host memory (a GPU) exposes a
    // staging copy of it instead (kStagedMemory in attach's reply): a write
    // lands there and is pushed to the device; a read pulls it first.
    push = 8,  // staging -> device, [addr, addr+len)
    pull = 9,  // device -> staging
    // A server that runs GPU code (kGpuCode in attach's reply) loads the
    // client's own modules: each image in parts, in order; then a kernel
    // of one, by name, says its parameter sizes.
    module = 10,
    function = 11,
    // The parameter sizes the client knows for a kernel: one of its
    // modules' (adsmModuleGetKernelWithParams), or with module 0 one the
    // server has by name (the client registered it with its sizes).  Where
    // the driver knows their number only (Level Zero, a module that is not
    // SPIR-V) launches are laid out by them; where it knows them, they must
    // match.
    declare = 12,
};

struct RequestHeader {
    uint32_t magic;
    Op op;
    uint64_t seq;     // echoed in the reply
    uint32_t length;  // body bytes after the header
    uint32_t reserved;
};

struct AttachBody {
    uint64_t window_base;
    uint64_t window_size;
};
struct RangeBody {  // commit, decommit, push, pull
    uint64_t addr;
    uint64_t len;
};
struct FillBody {
    uint64_t addr;
    uint64_t len;
    uint32_t value;
    uint32_t reserved;
};

// A launch: the fixed part, then args_size bytes of arguments laid out as
// the kernel's registration says (every parameter in a 16-byte slot).
constexpr size_t kKernelNameBytes = 64;
constexpr size_t kMaxLaunchArgs = 4096;
struct LaunchBody {
    char kernel[kKernelNameBytes];  // NUL-terminated
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t args_size;
    uint32_t stream;  // the client's stream: its kernels run in order, others' alongside
    uint32_t module;  // 0: a kernel the server has by that name; else one of the client's modules
    uint32_t reserved;
    uint8_t args[kMaxLaunchArgs];
};

// Part of a module image: parts come in order, from offset 0 to total.
constexpr size_t kModulePartBytes = 32 * 1024;
constexpr uint64_t kMaxModuleBytes = 256ull << 20;  // all of a client's images together
constexpr uint32_t kMaxModules = 1024;              // module numbers 1 to this
struct ModuleBody {
    uint32_t module;  // the client's number for it
    uint32_t length;  // bytes in data
    uint64_t total;
    uint64_t offset;
    uint8_t data[kModulePartBytes];
};
constexpr size_t kModuleFixedBytes = offsetof(ModuleBody, data);
struct FunctionBody {
    uint32_t module;
    uint32_t reserved;
    char kernel[kKernelNameBytes];  // NUL-terminated
};
constexpr uint32_t kMaxParams = 64;
struct DeclareBody {
    uint32_t module;  // 0: a kernel the server has by name
    uint32_t params;
    char kernel[kKernelNameBytes];  // NUL-terminated
    uint32_t sizes[kMaxParams];     // the first `params`, each 1 to kMaxLaunchArgs
};
// A sync's answer can take as long as the kernels: meanwhile the server
// sends a reply with status kStillWorking at least every heartbeat_ms, so
// that the client tells a slow kernel from a server it cannot reach.  With
// kSendSpans it sends, before its answer, SpanBatch messages saying when
// the kernels that ran since the last such sync ran (for the client's
// trace).
struct SyncBody {
    uint32_t stream;
    uint32_t heartbeat_ms;  // 0: none; else kMinHeartbeatMs to kMaxHeartbeatMs
    uint32_t flags;         // kSendSpans, or 0
    uint32_t reserved;
};
constexpr uint32_t kMinHeartbeatMs = 10, kMaxHeartbeatMs = 60000;
constexpr uint32_t kSendSpans = 1;
constexpr int32_t kStillWorking = -1;  // no adsmError_t is negative: the final reply follows
constexpr int32_t kSpans = -2;         // a SpanBatch; the final reply follows

// When a kernel ran, as nanoseconds before the batch was sent: the two
// machines' clocks differ, the time since does not (but for the message's
// way over, which the client's trace does not subtract).
struct WireSpan {
    char kernel[kKernelNameBytes];
    uint32_t stream;  // the client's
    uint32_t failed;
    uint64_t start_ago_ns;
    uint64_t end_ago_ns;
};
constexpr uint32_t kSpansPerBatch = 256;
struct SpanBatch {
    uint32_t magic;
    int32_t status;  // kSpans
    uint64_t seq;    // the sync's
    uint32_t count;
    uint32_t reserved;
    WireSpan spans[kSpansPerBatch];
};
constexpr size_t kLaunchFixedBytes = offsetof(LaunchBody, args);

struct Reply {
    uint32_t magic;
    int32_t status;     // an adsmError_t
    uint64_t seq;
    uint64_t capacity;  // attach: this client's device memory
    uint64_t rma_key;   // commit: the key under which the range is exposed (offsets from its start)
    uint32_t flags;     // attach: kStagedMemory, kGpuCode, kZeroedCommits
    uint32_t params;    // function: the kernel's parameters...
    uint32_t param_sizes[kMaxParams];  // ...and their sizes
    char message[200];  // why, when status is not adsmSuccess
};
constexpr uint32_t kStagedMemory = 1;
constexpr uint32_t kGpuCode = 2;
// attach: a range reads as zeros once committed, so the client's zeroed
// allocations need no fill of their own (a round trip each).
constexpr uint32_t kZeroedCommits = 4;

// Windows the server accepts: whole pages, at most this large; streams per
// client.
constexpr uint64_t kMaxWindow = 1ull << 40;
constexpr uint32_t kMaxStreams = 256;

struct Request {
    RequestHeader header;
    union {
        AttachBody attach;
        RangeBody range;
        FillBody fill;
        LaunchBody launch;
        SyncBody sync;
        ModuleBody module;
        FunctionBody function;
        DeclareBody declare;
    } body;
};

// Parses one message into *out, or says what is wrong with it.
Status parse_request(const void *msg, size_t n, Request *out);

// One client's device memory as the server sees it: its window and the
// ranges it committed, within its capacity.
class ClientMemory {
public:
    explicit ClientMemory(uint64_t capacity) : capacity_(capacity) {}
    Status attach(uint64_t base, uint64_t size);
    bool attached() const { return size_ != 0; }
    uint64_t base() const { return base_; }
    uint64_t size() const { return size_; }
    uint64_t used() const { return used_; }

    // Inside the window, whole pages, not overlapping a committed range;
    // within the capacity.
    Status commit(uint64_t addr, uint64_t len);
    // Exactly a committed range (or a run of whole committed ranges).
    Status decommit(uint64_t addr, uint64_t len);
    // Every byte committed.
    Status check(uint64_t addr, uint64_t len) const;

private:
    uint64_t capacity_;
    uint64_t base_ = 0, size_ = 0, used_ = 0;
    std::map<uint64_t, uint64_t> committed_;  // start -> length
};

}  // namespace adsm::remote
