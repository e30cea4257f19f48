// I/O on shared memory with its data on the CUDA double's device: once a
// thread moves enough through them, the interposers' staging buffers are
// pinned by the device, so the copies between them and the device run at
// pinned speed (on a GPU, copies from pageable memory run at a fifth of it
// and hold the CPU while they do).
// Linked with the interposers.
#include <adsm.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/stats.h"

namespace {

uint8_t file_byte(size_t i) { return static_cast<uint8_t>(i * 13 + 5); }

int temp_file(std::string *path) {
    char tmpl[] = "/tmp/adsm-cuda-io-XXXXXX";
    int fd = mkstemp(tmpl);
    *path = tmpl;
    return fd;
}

TEST(CudaIo, StagedCopiesRunFromPinnedMemoryOnceWorthIt) {
    // More than the 32 MiB after which a thread's staging is pinned, in
    // staging rounds of 4 MiB and a piece of one more.
    const size_t n = (40u << 20) + 3 * 4096 + 100, small = 1u << 20;
    std::string in_path, out_path;
    int in = temp_file(&in_path), out = temp_file(&out_path);
    ASSERT_GE(in, 0);
    ASSERT_GE(out, 0);
    std::vector<uint8_t> data(n);  // ordinary memory: no staging
    ASSERT_EQ(adsmGetSize(data.data()), 0u);
    for (size_t i = 0; i < n; ++i) data[i] = file_byte(i);
    ASSERT_EQ(write(in, data.data(), n), static_cast<ssize_t>(n));

    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    ASSERT_NE(p, nullptr);
    auto pageable = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "fake_cuda_pageable_copies"));
    auto pinned = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "fake_cuda_pinned_bytes"));
    ASSERT_TRUE(pageable && pinned) << "runs on the CUDA double (ADSM_DEVICE=cuda)";
    ASSERT_EQ(adsmPrefetch(p, n, 0), adsmSuccess);  // on the device: whole blocks read go straight there

    // A small read: its blocks go from staging to the device, and staging
    // is not pinned for it (pinning would cost more than it saves).
    long pinned_before = pinned();
    ASSERT_EQ(pread(in, p, small, 0), static_cast<ssize_t>(small));
    EXPECT_EQ(pinned(), pinned_before) << "a 1 MiB read pinned memory";
    for (size_t i = 0; i < small; i += 4093) ASSERT_EQ(p[i], file_byte(i)) << i;

    // A big one: staging is pinned before its first round.
    ASSERT_EQ(adsmPrefetch(p, n, 0), adsmSuccess);
    const long before = pageable();
    const uint64_t sent = adsm::stats().get(adsm::Counter::h2d_bytes);
    ASSERT_EQ(pread(in, p, n, 0), static_cast<ssize_t>(n));
    EXPECT_GE(adsm::stats().get(adsm::Counter::h2d_bytes) - sent, n - 2 * 256 * 1024)
        << "the read did not send its blocks from staging to the device";
    EXPECT_GE(pinned() - pinned_before, 8l << 20) << "the two staging buffers were not pinned";
    ASSERT_EQ(adsmPrefetch(p, n, 0), adsmSuccess);
    const uint64_t fetched = adsm::stats().get(adsm::Counter::d2h_bytes);
    ASSERT_EQ(write(out, p, n), static_cast<ssize_t>(n));  // gathered from the device into staging
    EXPECT_GE(adsm::stats().get(adsm::Counter::d2h_bytes) - fetched, n);
    EXPECT_EQ(pageable(), before) << "a copy of the big calls went through pageable memory";

    std::vector<uint8_t> back(n);
    ASSERT_EQ(adsmGetSize(back.data()), 0u);
    ASSERT_EQ(pread(out, back.data(), n, 0), static_cast<ssize_t>(n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], file_byte(i)) << i;
    for (size_t i = 0; i < n; i += 4093) ASSERT_EQ(p[i], file_byte(i)) << i;
    adsmFree(p);
    close(in);
    close(out);
    unlink(in_path.c_str());
    unlink(out_path.c_str());
}

}  // namespace
