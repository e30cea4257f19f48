// The fault handler's formatter agrees with printf on every conversion the
// runtime's messages use, and refuses the ones it does not know.
#include "os/safe_format.h"

#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

std::string safe(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    bool ok = adsm::os::safe_vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ok ? buf : "<refused>";
}

#define EXPECT_LIKE_PRINTF(fmt, ...)                                 \
    do {                                                             \
        char want[256];                                              \
        snprintf(want, sizeof want, fmt, __VA_ARGS__);               \
        EXPECT_EQ(safe(fmt, __VA_ARGS__), std::string(want)) << fmt; \
    } while (0)

}  // namespace

TEST(SafeFormatTest, AgreesWithPrintf) {
    EXPECT_LIKE_PRINTF("plain %s and %s", "text", "more");
    EXPECT_LIKE_PRINTF("%d %i %d %d", 0, -7, INT32_MIN, INT32_MAX);
    EXPECT_LIKE_PRINTF("%u %x %X", 4000000000u, 0xdeadbeefu, 0xabcu);
    EXPECT_LIKE_PRINTF("%zu %zu", size_t{0}, SIZE_MAX);
    EXPECT_LIKE_PRINTF("%llu %lld %llx", 18446744073709551615ull, -9223372036854775807ll - 1, 0x123456789abcull);
    EXPECT_LIKE_PRINTF("%lu %ld", 123ul, -456l);
    EXPECT_LIKE_PRINTF("%p and %p", reinterpret_cast<void *>(0x7f0012345000), static_cast<void *>(nullptr));
    EXPECT_LIKE_PRINTF("[%5d] [%-5d] [%05d] [%05d]", 42, 42, 42, -42);
    EXPECT_LIKE_PRINTF("[%8s] [%-8s] [%.3s] [%.*s]", "ab", "ab", "abcdef", 2, "xyz");
    EXPECT_LIKE_PRINTF("%c%c 100%%", 'o', 'k');
    EXPECT_LIKE_PRINTF("%hhu %hu", 255, 65535);
    EXPECT_LIKE_PRINTF("[%*d]", 6, 7);
}

TEST(SafeFormatTest, TruncatesWithinTheBuffer) {
    char buf[8];
    va_list ap;
    auto run = [&](const char *fmt, ...) {
        va_start(ap, fmt);
        bool ok = adsm::os::safe_vformat(buf, sizeof buf, fmt, ap);
        va_end(ap);
        return ok;
    };
    ASSERT_TRUE(run("%s-%d", "abcdef", 12345));
    EXPECT_EQ(std::string(buf), "abcdef-");
}

TEST(SafeFormatTest, RefusesWhatItDoesNotKnow) {
    EXPECT_EQ(safe("%f", 1.5), "<refused>");
    EXPECT_EQ(safe("%n", nullptr), "<refused>");
}
