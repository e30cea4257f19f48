// An errno's text for a message built anywhere, the fault handler included
// (os/error_text.h): the C library's own words, found without allocating
// (libc_spy.c counts allocations) even for a number it does not know, where
// strerror formats one into a buffer it allocates.
#include "os/error_text.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

extern "C" int libc_spy_watch_this_thread(void);
extern "C" int libc_spy_stop_watching(void);

namespace {

TEST(ErrorTextTest, NamesKnownNumbersAsTheCLibraryDoesAndUnknownOnesPlainly) {
    const int before = libc_spy_watch_this_thread();
    const char *nomem = adsm::os::error_text(ENOMEM);
    const char *range = adsm::os::error_text(ERANGE);
    const char *unknown = adsm::os::error_text(123456);
    const char *negative = adsm::os::error_text(-ENOMEM);
    EXPECT_EQ(libc_spy_stop_watching() - before, 0);
    EXPECT_STREQ(nomem, "Cannot allocate memory");
    EXPECT_STREQ(range, "Numerical result out of range");
    EXPECT_STREQ(unknown, "unknown error");
    EXPECT_STREQ(negative, "unknown error");
}

}  // namespace
