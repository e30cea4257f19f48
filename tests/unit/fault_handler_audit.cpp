// Every test of an executable that links this runs with libc_spy counting
// the allocations and the blocking lock acquisitions (pthread mutexes and
// read-write locks) made inside the runtime's fault handler: the faulting
// thread may have stopped inside the allocator or holding that lock, so
// each one could deadlock or corrupt the heap.  The suite fails at its end
// if there was one, naming the first one's call stack.  (Under
// AddressSanitizer its allocator comes before libc_spy and no allocation is
// counted: the normal build checks.)
//
// One lock is fine: libunwind's, which it takes only with every signal
// blocked (that is how its local unwinding is async-signal-safe), so a
// handler never finds it held by the thread it interrupted.
#include <dlfcn.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "os/call_stack.h"
#include "os/fault_signals.h"

extern "C" void libc_spy_count_when(int (*when)(int kind, void *caller));
extern "C" int libc_spy_conditional_calls(int kind, void **stack, int max, int *depth);

namespace {

constexpr int kAllocation = 0, kLock = 1;
void *g_libunwind;  // its load address

void *module_of(const void *code) {
    Dl_info info;
    return dladdr(code, &info) ? info.dli_fbase : nullptr;
}

int counts(int kind, void *caller) {
    if (!adsm::os::in_fault_handler()) return 0;
    return kind == kLock && g_libunwind && module_of(caller) == g_libunwind ? 0 : 1;
}

class FaultHandlerAudit : public ::testing::Environment {
public:
    void SetUp() override {
        g_libunwind = module_of(reinterpret_cast<const void *>(&unw_step));
        libc_spy_count_when(counts);
    }
    void TearDown() override {
        libc_spy_count_when(nullptr);
        expect_none(kAllocation, "allocations");
        expect_none(kLock, "blocking lock acquisitions");
    }

private:
    static void expect_none(int kind, const char *what) {
        void *stack[32];
        int depth = 0;
        const int n = libc_spy_conditional_calls(kind, stack, 32, &depth);
        std::string where;
        if (n) {
            std::vector<uintptr_t> ips;
            for (int i = 0; i < depth; ++i) ips.push_back(reinterpret_cast<uintptr_t>(stack[i]));
            for (const std::string &frame : adsm::os::describe_code(ips)) where += "\n  " + frame;
        }
        EXPECT_EQ(n, 0) << what << " inside the fault handler; the first at:" << where;
    }
};

const auto *const g_registered = ::testing::AddGlobalTestEnvironment(new FaultHandlerAudit);

}  // namespace
