// Every test of an executable that links this runs with libc_spy counting
// the allocations made inside the runtime's fault handler: the faulting
// thread may have stopped inside the allocator, so each one could deadlock
// or corrupt the heap.  The suite fails at its end if there was one, naming
// the first one's call stack.  (Under AddressSanitizer its allocator comes
// before libc_spy and nothing is counted: the normal build checks.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "os/call_stack.h"
#include "os/fault_signals.h"

extern "C" void libc_spy_count_allocations_when(int (*when)(void));
extern "C" int libc_spy_conditional_allocations(void **stack, int max, int *depth);

namespace {

class NoAllocationInTheFaultHandler : public ::testing::Environment {
public:
    void SetUp() override {
        libc_spy_count_allocations_when([] { return adsm::os::in_fault_handler() ? 1 : 0; });
    }
    void TearDown() override {
        libc_spy_count_allocations_when(nullptr);
        void *stack[32];
        int depth = 0;
        const int n = libc_spy_conditional_allocations(stack, 32, &depth);
        std::string where;
        if (n) {
            std::vector<uintptr_t> ips;
            for (int i = 0; i < depth; ++i) ips.push_back(reinterpret_cast<uintptr_t>(stack[i]));
            for (const std::string &frame : adsm::os::describe_code(ips)) where += "\n  " + frame;
        }
        EXPECT_EQ(n, 0) << "allocations inside the fault handler; the first at:" << where;
    }
};

const auto *const g_registered = ::testing::AddGlobalTestEnvironment(new NoAllocationInTheFaultHandler);

}  // namespace
