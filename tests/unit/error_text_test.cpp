// An errno's text for a message built anywhere, the fault handler included
// (os/error_text.h): the C library's own words, found without allocating
// (libc_spy.c counts allocations) even for a number it does not know, where
// strerror formats one into a buffer it allocates.
#include "os/error_text.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

extern "C" int libc_spy_watch_this_thread(void);
extern "C" int libc_spy_stop_watching(void);

namespace {

TEST(ErrorTextTest, NamesKnownNumbersAsTheCLibraryDoesAndUnknownOnesByTheirNumber) {
    const int before = libc_spy_watch_this_thread();
    const char *nomem = adsm::os::error_text(ENOMEM);
    const char *range = adsm::os::error_text(ERANGE);
    char unknown[32], negative[32];  // (each text holds until the next)
    snprintf(unknown, sizeof unknown, "%s", adsm::os::error_text(123456));
    snprintf(negative, sizeof negative, "%s", adsm::os::error_text(-ENOMEM));
    EXPECT_EQ(libc_spy_stop_watching() - before, 0);
    EXPECT_STREQ(nomem, "Cannot allocate memory");
    EXPECT_STREQ(range, "Numerical result out of range");
    EXPECT_STREQ(unknown, "unknown error 123456");
    EXPECT_STREQ(negative, "unknown error -12");
}

}  // namespace
