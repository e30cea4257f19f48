// Shared by the interposition tests, which run with the interposers linked
// into the test program and ADSM_MALLOC_THRESHOLD=64K (see CMakeLists.txt).
#pragma once

#include <adsm.hpp>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/preload.h"
#include "gpu/doubles/fake_module.hpp"
#include "support/stats.h"

namespace interpose_test {

constexpr size_t kThreshold = 64 * 1024;

// Hides a value from the compiler, so a deliberately bad call is made as
// written and fresh memory is not taken for uninitialised data.
template <class T>
T opaque(T v) {
    asm volatile("" : "+r"(v));
    return v;
}

inline bool shared(const void *p) {
    const void *q = opaque(p);
    return adsm::preload::in_window(q) && adsmGetSize(q) != 0;
}

inline uint64_t counter(adsm::Counter c) { return adsm::stats().get(c); }

// The calling thread's device.
inline adsmDeviceInfo device_info() {
    adsmDeviceInfo info{};
    EXPECT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    return info;
}

inline std::string protocol_in_use() { return device_info().protocol; }

// Whether the calling thread's device works on the host's own pages (cpu).
inline bool device_is_integrated() { return device_info().integrated != 0; }

inline void device_write(const adsm::thread_index &t, uint8_t *p, size_t n, uint8_t v) {
    size_t i = adsm::global_x(t);
    if (i < n) p[i] = static_cast<uint8_t>(v + i * 7);
}

// Makes every block of p's allocation closed (its data on the device) by
// having a kernel write it: p[i] = v + 7i.
inline void close_on_device(uint8_t *p, size_t n, uint8_t v) {
    static auto k = adsm_test::device_kernel<device_write>("interpose.device_write");
    k(adsm::blocks_for(n, 256), 256, p, n, v);
    adsm::sync();
}

inline uint8_t pattern(size_t i, uint8_t v) { return static_cast<uint8_t>(v + i * 7); }

// A new object of n bytes, closed on the device by close_on_device(v), for
// a test that makes the runtime's store into it fail.  New, not malloc'd:
// under delta a block the CPU read before (as a block malloc kept may
// have been) comes back to the host after the sync, and a store then goes
// there, where nothing can fail.  Freed with adsmFree.
inline uint8_t *closed_new_object(size_t n, uint8_t v) {
    auto *p = static_cast<uint8_t *>(adsmAlloc(n));
    if (p) close_on_device(p, n, v);
    return p;
}

// A file of n bytes with byte i = i * 13 + 5.
struct TempFile {
    std::string path;
    int fd = -1;
    explicit TempFile(size_t n) {
        char tmpl[] = "/tmp/adsm-io-XXXXXX";
        fd = mkstemp(tmpl);
        path = tmpl;
        std::vector<uint8_t> data(n);
        for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 13 + 5);
        EXPECT_EQ(::write(fd, data.data(), n), static_cast<ssize_t>(n));
        lseek(fd, 0, SEEK_SET);
    }
    ~TempFile() {
        close(fd);
        unlink(path.c_str());
    }
};
inline uint8_t file_byte(size_t i) { return static_cast<uint8_t>(i * 13 + 5); }

inline void device_add(const adsm::thread_index &t, uint8_t *p, size_t n, uint8_t v) {
    size_t i = adsm::global_x(t);
    if (i < n) p[i] = static_cast<uint8_t>(p[i] + v);
}

// A kernel adds v to every byte of p: it reads what the CPU wrote, and the
// CPU then reads what it wrote.
inline void add_on_device(uint8_t *p, size_t n, uint8_t v) {
    static auto k = adsm_test::device_kernel<device_add>("interpose.device_add");
    k(adsm::blocks_for(n, 256), 256, p, n, v);
    adsm::sync();
}

// Fills an array of pollfd on the device: every entry watches `fd` for
// input, with revents left as 0x7777 for the kernel to overwrite.
inline void device_pollfds(const adsm::thread_index &t, struct pollfd *a, size_t n, int fd) {
    size_t i = adsm::global_x(t);
    if (i < n) a[i] = {fd, POLLIN, static_cast<short>(0x7777)};
}

// A shared buffer of three blocks closed on the device, and a structure at
// a block's end (so that it spans two blocks where it can).
struct ClosedBuffer {
    static constexpr size_t kSize = 3 * kThreshold;
    uint8_t *p = static_cast<uint8_t *>(malloc(kSize));
    ClosedBuffer() { close(); }
    ~ClosedBuffer() { free(p); }
    // The device's pattern in every byte again, every block closed.
    void close() { close_on_device(p, kSize, 9); }
    // Every block closed, with the bytes the CPU left there.
    void keep_on_device() { add_on_device(p, kSize, 0); }
    template <class T>
    T *at_block_end() {
        return reinterpret_cast<T *>(p + kThreshold - sizeof(T) / 2 / alignof(T) * alignof(T));
    }
    // Whether some byte of [s, s+n) no longer holds the device's pattern.
    bool written(const void *s, size_t n) const {
        const size_t from = static_cast<const uint8_t *>(s) - p;
        for (size_t i = from; i < from + n; ++i)
            if (p[i] != pattern(i, 9)) return true;
        return false;
    }
    // Whether every byte outside [s, s+n) still holds the device's pattern.
    bool kept_outside(const void *s, size_t n) const {
        const size_t from = static_cast<const uint8_t *>(s) - p;
        for (size_t i = 0; i < kSize; ++i)
            if ((i < from || i >= from + n) && p[i] != pattern(i, 9)) return false;
        return true;
    }
};

}  // namespace interpose_test
