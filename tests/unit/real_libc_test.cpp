// The runtime's own handles on the C library (os/real_libc.h) and the table
// they come from, here outside the preload: a program that links the
// runtime's objects, as the sanitizer build's libadsm does.
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include <gtest/gtest.h>

#include "os/real_libc.h"
#include "os/real_table.h"

namespace {

// An entry of the test's own: the table gathers entries from every file.
ADSM_REAL_FUNCTION(g_strlen, "strlen");

volatile sig_atomic_t g_caught = 0;
void on_usr2(int) { g_caught = 1; }

}  // namespace

TEST(RealLibcTest, TheTableIsResolvedBeforeMain) {
    // Read without real(), which would resolve it on the spot.
    EXPECT_EQ(__atomic_load_n(&g_strlen.address, __ATOMIC_RELAXED), dlsym(RTLD_NEXT, "strlen"));
    EXPECT_NE(g_strlen.address, nullptr);
}

TEST(RealLibcTest, CopiesMovesAndFills) {
    char buf[64];
    adsm::os::real_memset(buf, 'x', sizeof buf);
    EXPECT_EQ(buf[0], 'x');
    EXPECT_EQ(buf[63], 'x');
    adsm::os::real_memcpy(buf, "0123456789", 10);
    adsm::os::real_memmove(buf + 2, buf, 8);  // overlapping
    EXPECT_EQ(memcmp(buf, "0101234567x", 11), 0);
}

TEST(RealLibcTest, SigactionIsTheCLibrarys) {
    struct sigaction sa = {}, old = {};
    sa.sa_handler = on_usr2;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(adsm::os::real_sigaction(SIGUSR2, &sa, &old), 0);
    struct sigaction now = {};
    ASSERT_EQ(sigaction(SIGUSR2, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, on_usr2);
    raise(SIGUSR2);
    EXPECT_EQ(g_caught, 1);
    EXPECT_EQ(adsm::os::real_sigaction(SIGUSR2, &old, nullptr), 0);
}

TEST(RealLibcTest, DlsymIsTheCLibrarys) {
    EXPECT_EQ(adsm::os::real_dlsym(RTLD_DEFAULT, "strlen"), dlsym(RTLD_DEFAULT, "strlen"));
    EXPECT_EQ(adsm::os::real_dlsym(RTLD_DEFAULT, "adsm_no_such_function"), nullptr);
}
