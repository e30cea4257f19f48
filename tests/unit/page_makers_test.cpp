// os::make_pages: every page of every run is made, whatever the pieces and
// threads, and nothing between the runs.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "os/page_makers.h"
#include "os/vm.h"

namespace {

constexpr size_t kPage = 4096;

class PageMakersTest : public ::testing::Test {
protected:
    void SetUp() override {
        fd_ = adsm::os::memfd_sized("page-makers-test", kSize);
        ASSERT_GE(fd_, 0);
        map_ = static_cast<char *>(mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
        ASSERT_NE(map_, MAP_FAILED);
    }
    void TearDown() override {
        munmap(map_, kSize);
        close(fd_);
    }
    // Pages of the memfd that exist, one flag per page.
    std::vector<bool> made() {
        std::vector<unsigned char> v(kSize / kPage);
        EXPECT_EQ(mincore(map_, kSize, v.data()), 0);
        std::vector<bool> out(v.size());
        for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] & 1;
        return out;
    }
    static constexpr size_t kSize = 256 * kPage;
    int fd_ = -1;
    char *map_ = nullptr;
};

TEST_F(PageMakersTest, EveryPageOfEveryRunAndNothingElse) {
    // Runs of 3, 5, 1 and 40 pages, pieces of 4 pages: pieces straddle runs.
    const adsm::os::PageRun runs[] = {{map_ + 2 * kPage, 3 * kPage},
                                      {map_ + 10 * kPage, 5 * kPage},
                                      {map_ + 20 * kPage, 1 * kPage},
                                      {map_ + 100 * kPage, 40 * kPage}};
    adsm::os::make_pages(runs, 4, 4, 4 * kPage);
    std::vector<bool> want(kSize / kPage, false);
    for (const auto &r : runs)
        for (size_t p = 0; p < r.len / kPage; ++p) want[(static_cast<char *>(r.addr) - map_) / kPage + p] = true;
    EXPECT_EQ(made(), want);
}

TEST_F(PageMakersTest, OneThreadOrOnePieceMakesThemAllToo) {
    const adsm::os::PageRun run{map_, 64 * kPage};
    adsm::os::make_pages(&run, 1, 1, 4 * kPage);
    adsm::os::PageRun second{map_ + 64 * kPage, 64 * kPage};
    adsm::os::make_pages(&second, 1, 8, 0);  // piece 0: the whole as one piece
    std::vector<bool> m = made();
    for (size_t p = 0; p < 128; ++p) EXPECT_TRUE(m[p]) << p;
    for (size_t p = 128; p < m.size(); ++p) EXPECT_FALSE(m[p]) << p;
}

}  // namespace
