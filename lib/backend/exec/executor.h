// The device side of a channel: takes commands in order, resolves
// registered kernels to code, runs launches on a GridRunner and publishes
// completions and per-stream errors.  The sim device server runs one in its
// own process; the cpu device runs one on a thread of the host.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "backend/exec/channel.h"
#include "backend/exec/grid_runner.h"

namespace adsm::exec {

class KernelResolver {
public:
    virtual ~KernelResolver() = default;
    // Finds the code of a kernel registered by the host; on failure writes
    // why into err.
    virtual adsmKernelFunc resolve(const KernelRecord &rec, std::string *err) = 0;
};

// Changes what the executor's address space holds at window addresses
// (map_memory commands); only a device in a process of its own has one.
class MemoryMapper {
public:
    virtual ~MemoryMapper() = default;
    // Returns false with why in err.
    virtual bool map(const MapRecord &rec, std::string *err) = 0;
};

class Executor {
public:
    Executor(Channel *channel, KernelResolver *resolver, unsigned threads, MemoryMapper *mapper = nullptr);

    // Serves commands on the calling thread until stop().
    void run();
    void stop();

private:
    struct Kernel {
        adsmKernelFunc fn = nullptr;
        std::string name;
        std::string error;  // why fn is null
        uint32_t nparams = 0;
        uint32_t param_offset[kMaxKernelParams] = {};
    };
    bool wait_for_command(uint64_t pos);
    void execute_register(const Command &cmd);
    void execute_launch(const Command &cmd);
    void execute_map(const Command &cmd);
    void record_span(const Command &cmd, uint64_t start_ns, bool failed);
    void report(uint32_t stream, adsmError_t error, const char *kernel, const FaultInfo *fault, const char *message);

    Channel *c_;
    KernelResolver *resolver_;
    MemoryMapper *mapper_;
    GridRunner runner_;
    std::vector<Kernel> kernels_;
    std::atomic<bool> stop_{false};
    // A private copy of the command being executed, so its ring slot can be
    // reused while the kernel runs.
    alignas(64) Command current_;
};

}  // namespace adsm::exec
