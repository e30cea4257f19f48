// os::populate_made_pages: a second mapping of a memfd gets page tables for
// exactly the pages the first one made (the simulated device's process maps
// what the host copied in), and no page is made by it.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "memfd_mapping.h"

namespace {

constexpr size_t kMadePage = 4096;
// More pages than populate_made_pages asks mincore about at once (512).
constexpr size_t kMadePages = 1100;

// Whether this process's page tables map the page at addr (/proc/self/pagemap, bit 63).
bool mapped_here(const void *addr) {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    uint64_t entry = 0;
    const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(addr) / kMadePage * sizeof entry);
    const bool read = pread(fd, &entry, sizeof entry, at) == sizeof entry;
    close(fd);
    return read && (entry >> 63) & 1;
}

TEST(MadePagesTest, ASecondMappingGetsTheMadePagesAndNoOthers) {
    MemfdMapping first("made-pages-test", kMadePages * kMadePage);
    ASSERT_TRUE(first.ok());
    // Runs that cross the 512-page batches, single pages, and the last page.
    std::vector<bool> made(kMadePages, false);
    for (size_t p : {0ul, 1ul, 2ul, 7ul, 300ul, 1099ul}) made[p] = true;
    for (size_t p = 500; p < 530; ++p) made[p] = true;
    for (size_t p = 1000; p < 1030; ++p) made[p] = true;
    for (size_t p = 0; p < kMadePages; ++p)
        if (made[p]) first.data()[p * kMadePage + 5] = static_cast<uint8_t>(p | 1);

    void *second = mmap(nullptr, kMadePages * kMadePage, PROT_READ | PROT_WRITE, MAP_SHARED, first.fd(), 0);
    ASSERT_NE(second, MAP_FAILED);
    auto *bytes = static_cast<uint8_t *>(second);
    for (size_t p = 0; p < kMadePages; ++p) ASSERT_FALSE(mapped_here(bytes + p * kMadePage)) << "page " << p;

    adsm::os::populate_made_pages(second, kMadePages * kMadePage);

    for (size_t p = 0; p < kMadePages; ++p) {
        EXPECT_EQ(mapped_here(bytes + p * kMadePage), made[p]) << "page " << p;
        EXPECT_EQ(first.page_exists(p * kMadePage), made[p]) << "page " << p << " was made";
    }
    // Mapped for writing: what this mapping writes, the first reads.
    bytes[1000 * kMadePage + 9] = 0x77;
    EXPECT_EQ(first.data()[1000 * kMadePage + 9], 0x77);
    EXPECT_EQ(bytes[300 * kMadePage + 5], static_cast<uint8_t>(300 | 1));
    munmap(second, kMadePages * kMadePage);
}

}  // namespace
