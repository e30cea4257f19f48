#include "backend/exec/grid_runner.h"

#include <pthread.h>
#include <signal.h>

#include "backend/exec/kernel_guard.h"
#include "os/fault_signals.h"
#include "os/futex.h"
#include "os/stop_signal.h"

namespace adsm::exec {

GridRunner::GridRunner(unsigned threads) {
    install_kernel_guard();
    os::ensure_alt_stack();
    // Helpers start from generation 0 whenever they get scheduled, so a job
    // posted before they run is not missed.
    for (unsigned i = 1; i < threads; ++i) helpers_.emplace_back([this] { worker_loop(0); });
}

GridRunner::~GridRunner() {
    stop_.store(true);
    generation_.fetch_add(1);
    os::futex_wake(&generation_);
    for (auto &t : helpers_) t.join();
}

void GridRunner::worker_loop(uint32_t seen) {
    os::ensure_alt_stack();
    for (;;) {
        uint32_t g = generation_.load(std::memory_order_acquire);
        if (g == seen) {
            os::IdleStack idle;
            os::futex_wait(&generation_, g);
            continue;
        }
        seen = g;
        if (stop_.load()) return;
        work();
        if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            done_.fetch_add(1, std::memory_order_release);
            os::futex_wake(&done_);
        }
    }
}

namespace {
// Kept out of line so that nothing it keeps in registers needs to survive the
// longjmp out of a faulting kernel.
__attribute__((noinline)) void run_blocks(const adsmKernelFunc fn, adsmDim3 grid, adsmDim3 block, void **args,
                                          uint64_t blocks, uint64_t chunk, std::atomic<uint64_t> &next,
                                          const std::atomic<bool> &abort, GuardFrame &frame) {
    adsmThreadIdx t;
    t.gridDim = grid;
    t.blockDim = block;
    const uint64_t gx = grid.x, gxy = uint64_t(grid.x) * grid.y;
    for (;;) {
        if (abort.load(std::memory_order_relaxed)) return;
        uint64_t first = next.fetch_add(chunk, std::memory_order_relaxed);
        if (first >= blocks) return;
        uint64_t last = first + chunk < blocks ? first + chunk : blocks;
        for (uint64_t b = first; b < last; ++b) {
            t.blockIdx.z = static_cast<unsigned>(b / gxy);
            t.blockIdx.y = static_cast<unsigned>((b % gxy) / gx);
            t.blockIdx.x = static_cast<unsigned>(b % gx);
            frame.bx = t.blockIdx.x;
            frame.by = t.blockIdx.y;
            frame.bz = t.blockIdx.z;
            for (unsigned z = 0; z < block.z; ++z) {
                t.threadIdx.z = z;
                frame.tz = z;
                for (unsigned y = 0; y < block.y; ++y) {
                    t.threadIdx.y = y;
                    frame.ty = y;
                    for (unsigned x = 0; x < block.x; ++x) {
                        t.threadIdx.x = x;
                        frame.tx = x;
                        fn(&t, args);
                    }
                }
            }
        }
    }
}
}  // namespace

// The fault handler runs with asynchronous signals held back; a jump out of
// it leaves them so unless the mask is put back.  A worker's mask never
// changes between kernels, so it is read once per thread: sigsetjmp, or a
// read per kernel, would cost a system call each time.
static const sigset_t &worker_mask() {
    __attribute__((tls_model("initial-exec"))) static thread_local sigset_t mask;
    __attribute__((tls_model("initial-exec"))) static thread_local bool known = false;
    if (!known) {
        pthread_sigmask(SIG_SETMASK, nullptr, &mask);
        known = true;
    }
    return mask;
}

void GridRunner::work() {
    GuardFrame frame;
    const sigset_t &mask = worker_mask();
    if (sigsetjmp(frame.env, 0) != 0) {
        pthread_sigmask(SIG_SETMASK, &mask, nullptr);
        // The kernel faulted on this thread; the first fault is the report.
        bool expected = false;
        if (faulted_.compare_exchange_strong(expected, true)) {
            fault_.signo = frame.signo;
            fault_.addr = frame.addr;
            fault_.block = {frame.bx, frame.by, frame.bz};
            fault_.thread = {frame.tx, frame.ty, frame.tz};
        }
        abort_.store(true, std::memory_order_relaxed);
        return;
    }
    arm_guard(&frame);
    run_blocks(job_.fn, job_.grid, job_.block, job_.args, job_.blocks, job_.chunk, next_, abort_, frame);
    disarm_guard();
}

bool GridRunner::run(adsmKernelFunc fn, adsmDim3 grid, adsmDim3 block, void **args, FaultInfo *fault) {
    uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
    uint64_t threads = helpers_.size() + 1;
    job_ = {fn, grid, block, args, blocks, 1};
    uint64_t chunk = blocks / (threads * 8);
    job_.chunk = chunk ? chunk : 1;
    next_.store(0, std::memory_order_relaxed);
    abort_.store(false, std::memory_order_relaxed);
    faulted_.store(false, std::memory_order_relaxed);

    bool helpers = blocks > 1 && !helpers_.empty();
    uint32_t done_before = done_.load(std::memory_order_acquire);
    if (helpers) {
        busy_.store(static_cast<uint32_t>(helpers_.size()), std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
        os::futex_wake(&generation_);
    }
    work();
    if (helpers) {
        while (done_.load(std::memory_order_acquire) == done_before) os::futex_wait(&done_, done_before);
    }
    if (faulted_.load(std::memory_order_acquire)) {
        *fault = fault_;
        return false;
    }
    return true;
}

}  // namespace adsm::exec
