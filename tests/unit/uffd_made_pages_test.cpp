// UffdTracker::collect_made: over memory never armed, the kernel counts
// every page that does not exist as written; collect_made reports only the
// pages the backing file holds, and leaves the range armed, so that from
// then on a page read is not written.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <set>

#include "os/uffd.h"
#include "os/vm.h"

namespace {

using adsm::os::UffdTracker;
using Pages = std::set<size_t>;

constexpr size_t kMirrorPages = 96;
constexpr size_t kMirrorBytes = kMirrorPages * 4096;

class UffdMadePagesTest : public ::testing::Test {
protected:
    void SetUp() override {
        const char *why = "";
        if (!UffdTracker::available(&why)) GTEST_SKIP() << "no write tracking on this kernel: " << why;
        fd_ = adsm::os::memfd_sized("uffd-made-pages-test", kMirrorBytes);
        ASSERT_GE(fd_, 0);
        void *p = adsm::os::map_shared(fd_, 0, kMirrorBytes, PROT_READ | PROT_WRITE);
        void *q = adsm::os::map_shared(fd_, 0, kMirrorBytes, PROT_READ | PROT_WRITE);
        ASSERT_NE(p, MAP_FAILED);
        ASSERT_NE(q, MAP_FAILED);
        view_ = static_cast<volatile uint8_t *>(p);
        alias_ = static_cast<uint8_t *>(q);
        const char *step = "";
        // Registered, never armed: as fresh memory is until its first release.
        ASSERT_EQ(t_.init(addr(0), kMirrorBytes, &step, fd_, alias_), 0) << step;
    }
    void TearDown() override {
        if (view_) adsm::os::unmap(const_cast<uint8_t *>(view_), kMirrorBytes);
        if (alias_) adsm::os::unmap(alias_, kMirrorBytes);
        if (fd_ >= 0) close(fd_);
    }
    uintptr_t addr(size_t page) const { return reinterpret_cast<uintptr_t>(view_) + page * 4096; }
    Pages found(bool made_only) {
        Pages pages;
        struct Arg {
            Pages *pages;
            uintptr_t base;
        } arg{&pages, addr(0)};
        auto note = [](void *a, uintptr_t start, size_t len) {
            auto *g = static_cast<Arg *>(a);
            for (size_t p = (start - g->base) / 4096; p < (start - g->base + len) / 4096; ++p) g->pages->insert(p);
        };
        EXPECT_EQ(made_only ? t_.collect_made(addr(0), kMirrorBytes, note, &arg) : t_.collect(addr(0), kMirrorBytes, note, &arg),
                  0);
        return pages;
    }

    int fd_ = -1;
    volatile uint8_t *view_ = nullptr;
    uint8_t *alias_ = nullptr;
    UffdTracker t_;
};

TEST_F(UffdMadePagesTest, OnlyPagesThatExistAreFoundAndTheRangeIsArmedAfter) {
    view_[3 * 4096] = 1;                            // written
    (void)view_[7 * 4096];                          // read: made, counts as written
    for (size_t p = 20; p < 23; ++p) alias_[p * 4096] = 2;  // made through another view
    view_[kMirrorPages * 4096 - 1] = 3;                   // the last page
    EXPECT_EQ(found(true), (Pages{3, 7, 20, 21, 22, kMirrorPages - 1}));
    // Armed now, holes too: a page read is not written, one written is.
    (void)view_[50 * 4096];
    (void)view_[3 * 4096];
    view_[40 * 4096] = 4;
    EXPECT_EQ(found(false), (Pages{40}));
}

}  // namespace
