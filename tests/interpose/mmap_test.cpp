#include <sys/mman.h>

#include "helpers.h"

using namespace interpose_test;

TEST(MmapTest, SharedMemoryCannotBeUnmappedMovedOrReprotected) {
    auto *p = static_cast<uint8_t *>(malloc(2 * kThreshold));
    ASSERT_TRUE(shared(p));
    memset(p, 3, 2 * kThreshold);
    errno = 0;
    EXPECT_EQ(munmap(p, 4096), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(mprotect(p, 4096, PROT_READ), -1);
    EXPECT_EQ(errno, EACCES);
    EXPECT_EQ(mremap(p, 4096, 8192, MREMAP_MAYMOVE), MAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(mremap(p + 4096, 0, 4096, MREMAP_MAYMOVE), MAP_FAILED) << "a second mapping of the same pages";
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(mmap(p, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), MAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(mmap(p, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), MAP_FAILED);
    EXPECT_EQ(errno, EEXIST);
    EXPECT_EQ(madvise(p, 4096, MADV_DONTNEED), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(madvise(p, 4096, MADV_WILLNEED), 0) << "harmless advice is accepted";
    EXPECT_EQ(posix_madvise(p, 4096, POSIX_MADV_DONTNEED), EINVAL);
    // Moving other memory onto shared memory is refused too.
    void *q = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_EQ(mremap(q, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, p), MAP_FAILED);
    // Nothing changed: the data is intact and the runtime still manages it.
    for (size_t i = 0; i < 2 * kThreshold; i += 4096) ASSERT_EQ(p[i], 3);
    close_on_device(p, 2 * kThreshold, 2);
    EXPECT_EQ(p[100], pattern(100, 2));
    munmap(q, 4096);
    free(p);
}

TEST(MmapTest, OrdinaryMemoryIsUntouched) {
    void *q = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(q, MAP_FAILED);
    EXPECT_EQ(madvise(q, 8192, MADV_DONTNEED), 0);
    void *r = mremap(q, 8192, 16384, MREMAP_MAYMOVE);
    ASSERT_NE(r, MAP_FAILED);
    EXPECT_EQ(mprotect(r, 4096, PROT_READ), 0);
    EXPECT_EQ(munmap(r, 16384), 0);
}
