// Fresh memory under every protocol and tracker of the model test (on
// `sim` and `cpu`, and on the GPU drivers' doubles: fresh.cuda.*,
// fresh.levelzero.*): the CPU's first writes reach the device, a page the
// CPU only reads back after a kernel wrote it is not sent again, a copy
// into it crosses the link once, a program that reads back what it stored
// in fresh memory stops sending its stores ahead, and where the userfaultfd
// tracker leaves open blocks writable (lazy, delta) a fresh page's first
// write faults once, not twice, and what a big copy or fill put there is
// read without a fault per page.
#include <adsm.hpp>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gpu/doubles/fake_module.hpp"
#include "support/stats.h"

namespace {

constexpr size_t kPage = 4096;

void fill_pages(const adsm::thread_index &t, uint8_t *p, size_t pages, uint8_t v) {
    size_t i = adsm::global_x(t);
    if (i < pages) p[i * kPage + 3] = static_cast<uint8_t>(v + i);
}

void copy_pages(const adsm::thread_index &t, const uint8_t *src, uint8_t *dst, size_t pages) {
    size_t i = adsm::global_x(t);
    if (i < pages) dst[i] = src[i * kPage + 1];
}

adsm::kernel<fill_pages> &fill_pages_k() {
    static adsm::kernel<fill_pages> k = adsm_test::device_kernel<fill_pages>("fresh.fill");
    return k;
}

adsm::kernel<copy_pages> &copy_pages_k() {
    static adsm::kernel<copy_pages> k = adsm_test::device_kernel<copy_pages>("fresh.copy");
    return k;
}

adsmDeviceInfo device_info() {
    adsmDeviceInfo info;
    adsmGetDeviceInfo(&info);
    return info;
}

long minor_faults_of_this_thread() {
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

uint64_t sent() { return adsm::stats().get(adsm::Counter::h2d_bytes); }
uint64_t fetched() { return adsm::stats().get(adsm::Counter::d2h_bytes); }

// Whether a big store into fresh memory goes to the device alone: where its
// blocks open read-only (not under batch, on an integrated device, nor
// where the userfaultfd tracker leaves them writable: lazy, delta).
bool fresh_stores_go_ahead() {
    const adsmDeviceInfo info = device_info();
    const std::string protocol = info.protocol;
    return protocol != "batch" && !info.integrated &&
           !(std::string(info.dirty_tracking) == "uffd" && (protocol == "lazy" || protocol == "delta"));
}

// Stores `source` into o and has the CPU read it back: the bytes fetched
// from the device meanwhile.
uint64_t store_and_read_back(uint8_t *o, const std::vector<uint8_t> &source) {
    EXPECT_EQ(adsmMemcpy(o, source.data(), source.size()), adsmSuccess);
    const uint64_t before = fetched();
    unsigned wrong = 0;
    for (size_t i = 0; i < source.size(); i += kPage / 2) wrong += o[i] != source[i];
    EXPECT_EQ(wrong, 0u) << "the CPU read back other bytes than were stored";
    return fetched() - before;
}

TEST(FreshMemoryTest, NeitherUntouchedMemoryNorAKernelsOutputReadBackGoesToTheDevice) {
    const size_t pages = 64;
    auto *out = static_cast<uint8_t *>(adsmAlloc(pages * kPage));
    auto *other = static_cast<uint8_t *>(adsmAlloc(kPage));
    ASSERT_TRUE(out && other);
    const bool batch = std::string(device_info().protocol) == "batch";
    // The objects' first release: the CPU never touched them, so nothing
    // goes (batch sends every object, as it says).
    const uint64_t at_first = sent();
    fill_pages_k()(adsm::blocks_for(pages, 64), 64, out, pages, uint8_t{7});
    ASSERT_EQ(adsmSync(), adsmSuccess);
    if (batch)
        EXPECT_GE(sent() - at_first, pages * kPage);
    else
        EXPECT_EQ(sent() - at_first, 0u) << "fresh memory the CPU never touched went to the device";
    unsigned wrong = 0;
    for (size_t i = 0; i < pages; ++i) wrong += out[i * kPage + 3] != static_cast<uint8_t>(7 + i);
    EXPECT_EQ(wrong, 0u);
    // Another call that releases the whole context: the CPU wrote nothing
    // since the last one.
    const uint64_t before = sent();
    fill_pages_k()(1, 64, other, size_t{1}, uint8_t{1});
    ASSERT_EQ(adsmSync(), adsmSuccess);
    if (batch)
        EXPECT_GE(sent() - before, pages * kPage);
    else
        EXPECT_EQ(sent() - before, 0u) << "pages the CPU only read went to the device again";
    EXPECT_EQ(adsmFree(out), adsmSuccess);
    EXPECT_EQ(adsmFree(other), adsmSuccess);
}

TEST(FreshMemoryTest, TheFirstWritesReachTheDeviceAndFaultOncePerPageWhereBlocksOpenWritable) {
    const size_t pages = 512;
    auto *in = static_cast<uint8_t *>(adsmAlloc(pages * kPage));
    auto *out = static_cast<uint8_t *>(adsmAlloc(pages));
    ASSERT_TRUE(in && out);
    const long before = minor_faults_of_this_thread();
    for (size_t i = 0; i < pages; ++i) in[i * kPage + 1] = static_cast<uint8_t>(i * 3 + 1);
    const long faults = minor_faults_of_this_thread() - before;
    adsm::kernel<copy_pages> &copy = copy_pages_k();
    copy(adsm::blocks_for(pages, 64), 64, in, out, pages);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    unsigned wrong = 0;
    for (size_t i = 0; i < pages; ++i) wrong += out[i] != static_cast<uint8_t>(i * 3 + 1);
    EXPECT_EQ(wrong, 0u) << "writes to fresh pages did not reach the device";
    const adsmDeviceInfo info = device_info();
    const std::string protocol = info.protocol;
    // (Not on a GPU, whose mirror is pinned: pages are entered into the view
    // ahead of the CPU there, so the tracker watches fresh memory from the
    // start, and a fresh page's first write faults twice: TrackedWrites::watch.)
    if (std::string(info.dirty_tracking) == "uffd" && (protocol == "lazy" || protocol == "delta") &&
        !adsm_test::on_gpu()) {
        // (A sanitizer build adds a fault per 8 pages: the shadow of what is written.)
        EXPECT_LE(faults, static_cast<long>(pages + pages / 4)) << "a fresh page's first write faulted twice";
    }
    EXPECT_EQ(adsmFree(in), adsmSuccess);
    EXPECT_EQ(adsmFree(out), adsmSuccess);
}

// A program's copy into fresh memory (a file read into a new buffer, the
// usual way data reaches a kernel) crosses the link once, whichever side
// the runtime puts the bytes on first.
TEST(FreshMemoryTest, BytesCopiedIntoFreshMemoryCrossToTheDeviceOnce) {
    const size_t pages = 512;
    std::vector<uint8_t> source(pages * kPage);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + i / kPage);
    auto *in = static_cast<uint8_t *>(adsmAlloc(source.size()));
    auto *out = static_cast<uint8_t *>(adsmAlloc(pages));
    ASSERT_TRUE(in && out);
    const uint64_t before = sent();
    ASSERT_EQ(adsmMemcpy(in, source.data(), source.size()), adsmSuccess);
    adsm::kernel<copy_pages> &copy = copy_pages_k();
    copy(adsm::blocks_for(pages, 64), 64, in, out, pages);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    unsigned wrong = 0;
    for (size_t i = 0; i < pages; ++i) wrong += out[i] != source[i * kPage + 1];
    EXPECT_EQ(wrong, 0u) << "the copied bytes did not reach the kernel";
    // (batch sends every object at each call: the copy's and `out`'s bytes.)
    EXPECT_LE(sent() - before, source.size() + pages) << "the copied bytes went to the device more than once";
    EXPECT_EQ(adsmFree(in), adsmSuccess);
    EXPECT_EQ(adsmFree(out), adsmSuccess);
}

// A file read into fresh memory a piece at a time, the CPU checking each
// piece before any kernel runs: a store into blocks whose pages the CPU
// never made goes to the device alone, and once the CPU has read such bytes
// back, the object's later pieces stay on the host.  Each byte then crosses
// to the device once, at the call, and only the first piece comes back.
TEST(FreshMemoryTest, AnObjectWhoseStoresTheCpuReadsBackTakesLaterStoresOnTheHost) {
    const size_t piece = 256 * kPage, pieces = 8, pages = piece * pieces / kPage;
    std::vector<uint8_t> source(piece * pieces);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 13 + i / kPage);
    auto *in = static_cast<uint8_t *>(adsmAlloc(source.size()));
    auto *out = static_cast<uint8_t *>(adsmAlloc(pages));
    ASSERT_TRUE(in && out);
    const uint64_t sent_before = sent(), fetched_before = fetched();
    unsigned wrong = 0;
    for (size_t p = 0; p < pieces; ++p) {
        ASSERT_EQ(adsmMemcpy(in + p * piece, source.data() + p * piece, piece), adsmSuccess);
        for (size_t i = p * piece; i < (p + 1) * piece; i += kPage / 4) wrong += in[i] != source[i];
    }
    EXPECT_EQ(wrong, 0u) << "the CPU read back other bytes than it stored";
    // The first piece may have gone to the device alone and come back, in
    // the blocks that hold it (lazy's block is the object); no later one.
    // (Rolling sends written blocks ahead of the call: what was sent so far
    // is not asked.)
    const adsmDeviceInfo info = device_info();
    const size_t block = std::string(info.protocol) == "lazy" ? source.size() : info.block_size;
    const size_t first_blocks = (piece + block - 1) / block * block;
    EXPECT_LE(fetched() - fetched_before, first_blocks) << "pieces after the first came back from the device";
    adsm::kernel<copy_pages> &copy = copy_pages_k();
    copy(adsm::blocks_for(pages, 64), 64, in, out, pages);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    wrong = 0;
    for (size_t i = 0; i < pages; ++i) wrong += out[i] != source[i * kPage + 1];
    EXPECT_EQ(wrong, 0u) << "the stored bytes did not reach the kernel";
    // The call sends each byte once (batch: every object whole, `out` too):
    // not the first piece again, which the CPU only read back, but for its
    // part in a block that later pieces were stored into (lazy: all of it).
    EXPECT_LE(sent() - sent_before, source.size() + pages + piece % block)
        << "the stored bytes went to the device more than once";
    EXPECT_EQ(adsmFree(in), adsmSuccess);
    EXPECT_EQ(adsmFree(out), adsmSuccess);
}

// Once the CPU has read back a store that went to the device alone, the
// other objects of its context take their stores on the host too, until
// the context's next call: a program reading several inputs into new
// buffers, parsing each before it calls a kernel.  After the call stores
// into fresh memory go ahead again, as at first (the first call after the
// context learnt it checks whether it still holds).  In a thread of its
// own: a context of its own, which no other test taught anything.
TEST(FreshMemoryTest, AfterTheCpuReadsBackAStoreItsContextStoresOnTheHostUntilItsNextCall) {
    const bool ahead = fresh_stores_go_ahead();
    const size_t piece = 256 * kPage;
    std::vector<uint8_t> source(piece);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
    std::thread program([&] {
        auto *out = static_cast<uint8_t *>(adsmAlloc(kPage));
        ASSERT_NE(out, nullptr);
        uint8_t *objs[3] = {};
        for (int i = 0; i < 2; ++i) {
            objs[i] = static_cast<uint8_t *>(adsmAlloc(2 * piece));
            ASSERT_NE(objs[i], nullptr);
        }
        EXPECT_EQ(store_and_read_back(objs[0], source) > 0, ahead) << "the first store into fresh memory";
        EXPECT_EQ(store_and_read_back(objs[1], source), 0u)
            << "a store went to the device alone after the CPU read one back";
        fill_pages_k()(1, 64, out, size_t{1}, uint8_t{1});
        ASSERT_EQ(adsmSync(), adsmSuccess);
        objs[2] = static_cast<uint8_t *>(adsmAlloc(2 * piece));  // (fresh: one the call released is the device's)
        ASSERT_NE(objs[2], nullptr);
        EXPECT_EQ(store_and_read_back(objs[2], source) > 0, ahead)
            << "after the call, stores into fresh memory went as at first";
        for (uint8_t *o : objs) EXPECT_EQ(adsmFree(o), adsmSuccess);
        EXPECT_EQ(adsmFree(out), adsmSuccess);
    });
    program.join();
}

// A program whose every phase reads its input into a new buffer, checks it
// on the CPU and calls a kernel: what its context learnt of the CPU reading
// stores back is kept from one call to the next, dropped only now and then
// to see whether it still holds.  Each phase's input made the round trip
// before (there alone, and back at the check).  In a thread of its own: a
// context of its own, which no other test taught anything.
TEST(FreshMemoryTest, WhatAProgramTeachesOfReadingStoresBackOutlastsItsCalls) {
    const bool ahead = fresh_stores_go_ahead();
    const size_t piece = 256 * kPage, phases = 16;
    std::vector<uint8_t> source(piece);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 5 + 1);
    size_t fetching = 0;  // phases whose check fetched what was stored
    std::thread program([&] {
        auto *out = static_cast<uint8_t *>(adsmAlloc(kPage));
        ASSERT_NE(out, nullptr);
        for (size_t p = 0; p < phases; ++p) {
            auto *in = static_cast<uint8_t *>(adsmAlloc(piece));
            ASSERT_NE(in, nullptr);
            fetching += store_and_read_back(in, source) > 0;
            fill_pages_k()(1, 64, out, size_t{1}, static_cast<uint8_t>(p));
            ASSERT_EQ(adsmSync(), adsmSuccess);
            EXPECT_EQ(adsmFree(in), adsmSuccess);
        }
        EXPECT_EQ(adsmFree(out), adsmSuccess);
    });
    program.join();
    if (!ahead) {
        EXPECT_EQ(fetching, 0u) << "stores into fresh memory went to the device alone";
        return;
    }
    // Learnt in the first phase; then checked at the 1st, 2nd, 4th, 8th
    // and 16th call in a row: relearnt in phases 2, 3, 5 and 9.
    EXPECT_GE(fetching, 1u) << "no store into fresh memory went to the device alone";
    EXPECT_LE(fetching, 5u) << "of " << phases << " phases, each reading its input back";
}

// Where fresh memory's blocks open writable (the userfaultfd tracker under
// lazy and delta), a big copy or fill into it lands in the host copy; the
// CPU then reads it without a fault per page to map what the runtime wrote.
TEST(FreshMemoryTest, WhatACopyOrAFillPutOnTheHostIsReadWithoutAFaultPerPage) {
    const adsmDeviceInfo info = device_info();
    const std::string protocol = info.protocol;
    // (Elsewhere fresh blocks open read-only, and a big store goes to the device alone.)
    const bool on_host = std::string(info.dirty_tracking) == "uffd" && (protocol == "lazy" || protocol == "delta");
    const size_t pages = 512;
    std::vector<uint8_t> source(pages * kPage, 0x5c);
    auto *copied = static_cast<uint8_t *>(adsmAlloc(source.size()));
    auto *filled = static_cast<uint8_t *>(adsmAlloc(source.size()));
    ASSERT_TRUE(copied && filled);
    ASSERT_EQ(adsmMemcpy(copied, source.data(), source.size()), adsmSuccess);
    ASSERT_EQ(adsmMemset(filled, 0x5c, source.size()), adsmSuccess);
    for (uint8_t *p : {copied, filled}) {
        const long before = minor_faults_of_this_thread();
        unsigned wrong = 0;
        for (size_t i = 0; i < pages; ++i) wrong += p[i * kPage + 5] != 0x5c;
        const long faults = minor_faults_of_this_thread() - before;
        EXPECT_EQ(wrong, 0u);
        // (A sanitizer build adds a fault per 8 pages: the shadow of what is read.)
        if (on_host) {
            EXPECT_LE(faults, static_cast<long>(pages / 4))
                << (p == copied ? "copied" : "filled") << " pages faulted as the CPU read them";
        }
    }
    EXPECT_EQ(adsmFree(copied), adsmSuccess);
    EXPECT_EQ(adsmFree(filled), adsmSuccess);
}

}  // namespace
