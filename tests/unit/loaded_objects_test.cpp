// Which loaded object holds an address: the C library's functions share
// one, the test program's are another, and memory of no object has none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "os/loaded_objects.h"

namespace {

void in_the_program() {}

bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

}  // namespace

// (Functions no sanitizer intercepts: under AddressSanitizer `&strlen` is
// its runtime's.)
TEST(LoadedObjectsTest, TheCLibrarysFunctionsShareAnObjectApartFromTheProgram) {
    const void *libc = adsm::os::object_of(reinterpret_cast<void *>(&getpid));
    ASSERT_NE(libc, nullptr);
    EXPECT_EQ(adsm::os::object_of(reinterpret_cast<void *>(&getppid)), libc);
    const void *program = adsm::os::object_of(reinterpret_cast<void *>(&in_the_program));
    ASSERT_NE(program, nullptr);
    EXPECT_NE(program, libc);
    const char *file = adsm::os::object_file(reinterpret_cast<void *>(&getpid));
    ASSERT_NE(file, nullptr);
    EXPECT_TRUE(ends_with(file, "libc.so.6")) << file;
    EXPECT_STREQ(adsm::os::object_file(reinterpret_cast<void *>(&in_the_program)), "") << "the program's own name";
}

TEST(LoadedObjectsTest, MemoryOfNoObjectHasNone) {
    int on_stack = 0;
    void *on_heap = malloc(1 << 20);
    EXPECT_EQ(adsm::os::object_of(&on_stack), nullptr);
    EXPECT_EQ(adsm::os::object_of(on_heap), nullptr);
    EXPECT_EQ(adsm::os::object_of(nullptr), nullptr);
    EXPECT_EQ(adsm::os::object_file(&on_stack), nullptr);
    free(on_heap);
}
