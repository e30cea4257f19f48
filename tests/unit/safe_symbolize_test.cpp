// Naming code addresses in a signal handler (os/safe_symbolize.h): the
// names agree with the loader's and the symbol tables', and describing a
// fault's site allocates nothing (libc_spy.c counts allocations).
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "os/call_stack.h"
#include "os/safe_symbolize.h"

extern "C" int libc_spy_watch_this_thread(void);
extern "C" int libc_spy_stop_watching(void);

namespace {

// In the executable's full symbol table only (not exported).
__attribute__((noinline)) int local_function_to_name(int x) {
    asm volatile("" ::: "memory");
    return x * 3 + 1;
}

uintptr_t address_of(const void *f) { return reinterpret_cast<uintptr_t>(f); }

TEST(SafeSymbolizeTest, NamesAFunctionOnlyTheFullSymbolTableKnows) {
    adsm::os::CodeName n;
    const uintptr_t f = address_of(reinterpret_cast<const void *>(&local_function_to_name));
    ASSERT_TRUE(adsm::os::name_code_address(f + 3, f + 3, &n));
    EXPECT_NE(std::string(n.function).find("local_function_to_name"), std::string::npos) << n.function;
    EXPECT_EQ(n.offset, 3u);
    EXPECT_STREQ(n.module, "signal_safety_tests");
}

TEST(SafeSymbolizeTest, NamesALibraryFunctionAsTheLoaderDoes) {
    void *f = dlsym(RTLD_DEFAULT, "getpid");
    ASSERT_NE(f, nullptr);
    Dl_info info;
    ASSERT_NE(dladdr(f, &info), 0);
    adsm::os::CodeName n;
    ASSERT_TRUE(adsm::os::name_code_address(address_of(f), address_of(f), &n));
    const char *base = strrchr(info.dli_fname, '/');
    EXPECT_STREQ(n.module, base ? base + 1 : info.dli_fname);
    // The full table may know the function by an alias of the exported name.
    EXPECT_NE(n.function[0], '\0');
    EXPECT_EQ(n.offset, 0u);
}

TEST(SafeSymbolizeTest, AReturnAddressPastAFunctionsEndNamesTheCaller) {
    // The byte after the function: its caller's return address if the
    // function ended with a call.  Looked up one byte back, it is named
    // from the function, its offset one past the last byte.
    adsm::os::CodeName n;
    void *f = dlsym(RTLD_DEFAULT, "getpid");
    ASSERT_NE(f, nullptr);
    const uintptr_t a = address_of(f);
    ASSERT_TRUE(adsm::os::name_code_address(a + 1, a, &n));
    EXPECT_EQ(n.offset, 1u);
}

TEST(SafeSymbolizeTest, AnonymousMemoryHasNoName) {
    void *p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    adsm::os::CodeName n;
    ASSERT_TRUE(adsm::os::name_code_address(address_of(p), address_of(p), &n));
    EXPECT_STREQ(n.function, "");
    EXPECT_STREQ(n.module, "");
    munmap(p, 4096);
    EXPECT_FALSE(adsm::os::name_code_address(address_of(p), address_of(p), &n)) << "unmapped";
}

// A fault whose handler describes where it happened, as the runtime's does
// for a race: the thread may have stopped inside the allocator.
char *g_page;
char g_site[512];
int g_allocations_in_handler = -1;

void describe_and_open(int, siginfo_t *, void *uctx) {
    int before = libc_spy_watch_this_thread();
    adsm::os::describe_fault_site(uctx, 4, g_site, sizeof g_site);
    g_allocations_in_handler = libc_spy_stop_watching() - before;
    mprotect(g_page, 4096, PROT_READ | PROT_WRITE);
}

__attribute__((noinline)) void write_to_the_protected_page() {
    asm volatile("" ::: "memory");
    *static_cast<volatile char *>(g_page) = 1;
}

// Takes one fault on a read-only page and returns how the handler described it.
std::string describe_a_fault() {
    g_page = static_cast<char *>(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(g_page, MAP_FAILED);
    struct sigaction sa = {}, old;
    sa.sa_sigaction = describe_and_open;
    sa.sa_flags = SA_SIGINFO;
    EXPECT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
    write_to_the_protected_page();
    sigaction(SIGSEGV, &old, nullptr);
    munmap(g_page, 4096);
    return g_site;
}

// (The unwinder is loaded when the runtime starts; this process has none.)
TEST(SafeSymbolizeTest, AFaultSiteIsDescribedWithoutAllocating) {
    EXPECT_EQ(describe_a_fault(), "(unknown code)") << "no unwinder loaded yet";
    ASSERT_TRUE(adsm::os::load_unwinder());
    ASSERT_TRUE(adsm::os::load_unwinder()) << "a second load finds it loaded";
    std::string site = describe_a_fault();
    EXPECT_EQ(g_allocations_in_handler, 0) << "allocations while describing " << g_site;
    EXPECT_EQ(site.rfind("_ZN12_GLOBAL__N_127write_to_the_protected_page", 0), 0u) << site;
    EXPECT_NE(site.find("(signal_safety_tests) <- "), std::string::npos) << site;
    EXPECT_NE(site.find("AFaultSiteIsDescribedWithoutAllocating"), std::string::npos) << site;
}

}  // namespace
