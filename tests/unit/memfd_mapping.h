// A memfd mapped shared and writable, as the runtime's host mirror is, for
// unit tests of code that works on that mirror.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "os/vm.h"

class MemfdMapping {
public:
    MemfdMapping(const char *name, size_t size) : size_(size) {
        fd_ = adsm::os::memfd_sized(name, size);
        if (fd_ < 0) return;
        void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p != MAP_FAILED) data_ = static_cast<uint8_t *>(p);
    }
    ~MemfdMapping() {
        if (data_) munmap(data_, size_);
        if (fd_ >= 0) close(fd_);
    }
    MemfdMapping(const MemfdMapping &) = delete;
    MemfdMapping &operator=(const MemfdMapping &) = delete;

    bool ok() const { return data_ != nullptr; }
    int fd() const { return fd_; }
    uint8_t *data() const { return data_; }
    // Whether the memfd has the page at byte `off` (it was made and not
    // given back since).
    bool page_exists(size_t off) const {
        unsigned char v = 0;
        return mincore(data_ + off / 4096 * 4096, 4096, &v) == 0 && (v & 1);
    }

private:
    size_t size_;
    int fd_ = -1;
    uint8_t *data_ = nullptr;
};
