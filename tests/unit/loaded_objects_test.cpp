// Which loaded object holds an address: the C library's functions share
// one, the test program's are another, and memory of no object has none.
#include <gtest/gtest.h>

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

TEST(LoadedObjectsTest, TheCLibrarysFunctionsShareAnObjectApartFromTheProgram) {
    const void *libc = adsm::os::object_of(reinterpret_cast<void *>(&strlen));
    ASSERT_NE(libc, nullptr);
    EXPECT_EQ(adsm::os::object_of(reinterpret_cast<void *>(&strcmp)), libc);
    const void *program = adsm::os::object_of(reinterpret_cast<void *>(&in_the_program));
    ASSERT_NE(program, nullptr);
    EXPECT_NE(program, libc);
    ASSERT_NE(adsm::os::object_file(reinterpret_cast<void *>(&strlen)), nullptr);
    EXPECT_TRUE(ends_with(adsm::os::object_file(reinterpret_cast<void *>(&strlen)), "libc.so.6"))
        << adsm::os::object_file(reinterpret_cast<void *>(&strlen));
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
