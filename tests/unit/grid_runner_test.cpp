#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <vector>

#include "backend/exec/grid_runner.h"
#include "os/fault_signals.h"

using adsm::exec::FaultInfo;
using adsm::exec::GridRunner;

namespace {

struct Coverage {
    std::vector<std::atomic<int>> *hits;
    adsmDim3 grid, block;
};

void count_kernel(const adsmThreadIdx *t, void **args) {
    auto *c = static_cast<Coverage *>(args[0]);
    EXPECT_EQ(t->gridDim.x, c->grid.x);
    EXPECT_EQ(t->blockDim.y, c->block.y);
    size_t bx = t->blockIdx.x, by = t->blockIdx.y, bz = t->blockIdx.z;
    size_t block_id = bx + c->grid.x * (by + size_t(c->grid.y) * bz);
    size_t thread_id = t->threadIdx.x + c->block.x * (t->threadIdx.y + size_t(c->block.y) * t->threadIdx.z);
    size_t per_block = size_t(c->block.x) * c->block.y * c->block.z;
    (*c->hits)[block_id * per_block + thread_id].fetch_add(1);
}

void crash_kernel(const adsmThreadIdx *t, void **) {
    if (t->blockIdx.x == 3 && t->threadIdx.x == 7) {
        volatile int *volatile bad = reinterpret_cast<int *>(uintptr_t(16));
        *bad = 1;
    }
}

// The division by zero is the point: keep UBSan from stopping it first.
__attribute__((no_sanitize("undefined"))) void divide_kernel(const adsmThreadIdx *t, void **args) {
    volatile int zero = *static_cast<int *>(args[0]);
    volatile int r = int(t->threadIdx.x) / zero;
    (void)r;
}

void note_handler_kernel(const adsmThreadIdx *, void **args) {
    if (adsm::os::in_fault_handler()) static_cast<std::atomic<int> *>(args[0])->fetch_add(1);
}

}  // namespace

TEST(GridRunnerTest, EveryThreadOfEveryBlockRunsOnce) {
    for (unsigned threads : {1u, 2u, 4u}) {
        GridRunner runner(threads);
        for (adsmDim3 grid : {adsmDim3{1, 1, 1}, adsmDim3{7, 3, 2}, adsmDim3{1000, 1, 1}})
            for (adsmDim3 block : {adsmDim3{1, 1, 1}, adsmDim3{32, 4, 2}}) {
                size_t total = size_t(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
                std::vector<std::atomic<int>> hits(total);
                Coverage c{&hits, grid, block};
                void *args[] = {&c};
                FaultInfo f;
                ASSERT_TRUE(runner.run(count_kernel, grid, block, args, &f));
                for (size_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
            }
    }
}

TEST(GridRunnerTest, AFaultIsCaughtAndLocated) {
    GridRunner runner(2);
    FaultInfo f;
    EXPECT_FALSE(runner.run(crash_kernel, {8, 1, 1}, {16, 1, 1}, nullptr, &f));
    EXPECT_EQ(f.signo, SIGSEGV);
    EXPECT_EQ(f.addr, 16u);
    EXPECT_EQ(f.block.x, 3u);
    EXPECT_EQ(f.thread.x, 7u);
    // The runner keeps working after a fault.
    std::vector<std::atomic<int>> hits(4);
    Coverage c{&hits, {2, 1, 1}, {2, 1, 1}};
    void *args[] = {&c};
    EXPECT_TRUE(runner.run(count_kernel, {2, 1, 1}, {2, 1, 1}, args, &f));
}

TEST(GridRunnerTest, ArithmeticFaultsAreCaughtToo) {
    GridRunner runner(1);
    int zero = 0;
    void *args[] = {&zero};
    FaultInfo f;
    EXPECT_FALSE(runner.run(divide_kernel, {1, 1, 1}, {4, 1, 1}, args, &f));
    EXPECT_EQ(f.signo, SIGFPE);
}

// The guard jumps out of the fault handler: the threads that faulted must
// not count as inside it afterwards.
TEST(GridRunnerTest, ThreadsWhoseKernelFaultedAreOutOfTheFaultHandlerAfterwards) {
    for (unsigned threads : {1u, 4u}) {
        GridRunner runner(threads);
        FaultInfo f;
        for (int i = 0; i < 3; ++i) EXPECT_FALSE(runner.run(crash_kernel, {64, 1, 1}, {16, 1, 1}, nullptr, &f));
        EXPECT_FALSE(adsm::os::in_fault_handler()) << "the launching thread, with " << threads << " threads";
        std::atomic<int> inside{0};
        void *args[] = {&inside};
        ASSERT_TRUE(runner.run(note_handler_kernel, {4096, 1, 1}, {1, 1, 1}, args, &f));
        EXPECT_EQ(inside.load(), 0) << "blocks that ran on a thread still counted as in the fault handler";
    }
}
