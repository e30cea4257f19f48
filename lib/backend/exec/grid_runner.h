// Runs one kernel over a CUDA-style grid on a pool of threads: blocks are
// handed out in chunks from an atomic counter, and each block's threads run
// in x-fastest order.  The calling thread works too, so a one-block kernel
// never wakes anybody.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "adsm.h"

namespace adsm::exec {

struct FaultInfo {
    int signo = 0;
    uintptr_t addr = 0;
    adsmDim3 block{0, 0, 0};
    adsmDim3 thread{0, 0, 0};
};

class GridRunner {
public:
    explicit GridRunner(unsigned threads);
    ~GridRunner();
    GridRunner(const GridRunner &) = delete;
    GridRunner &operator=(const GridRunner &) = delete;

    // False if the kernel faulted; *fault says where.  Not reentrant: one
    // grid at a time.
    bool run(adsmKernelFunc fn, adsmDim3 grid, adsmDim3 block, void **args, FaultInfo *fault);

private:
    struct Job {
        adsmKernelFunc fn;
        adsmDim3 grid, block;
        void **args;
        uint64_t blocks;
        uint64_t chunk;
    };
    void worker_loop(uint32_t seen);
    void work();

    Job job_{};
    std::atomic<uint64_t> next_{0};
    std::atomic<bool> abort_{false};
    std::atomic<bool> faulted_{false};
    FaultInfo fault_{};
    std::atomic<uint32_t> generation_{0};  // futex: a new job is posted
    std::atomic<uint32_t> busy_{0};        // helpers still working on the job
    std::atomic<uint32_t> done_{0};        // futex: bumped when the last helper finishes
    std::atomic<bool> stop_{false};
    std::vector<std::thread> helpers_;
};

}  // namespace adsm::exec
