// os::make_pages: every page of every run is made, whatever the pieces and
// threads, and nothing between the runs.
#include <gtest/gtest.h>

#include <vector>

#include "memfd_mapping.h"
#include "os/page_makers.h"

namespace {

constexpr size_t kPage = 4096;

class PageMakersTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(memory_.ok());
        map_ = reinterpret_cast<char *>(memory_.data());
    }
    // Pages of the memfd that exist, one flag per page.
    std::vector<bool> made() {
        std::vector<bool> out(kSize / kPage);
        for (size_t i = 0; i < out.size(); ++i) out[i] = memory_.page_exists(i * kPage);
        return out;
    }
    static constexpr size_t kSize = 256 * kPage;
    MemfdMapping memory_{"page-makers-test", kSize};
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
