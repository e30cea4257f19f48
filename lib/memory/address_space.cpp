#include "memory/address_space.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/data_runs.h"
#include "os/error_text.h"
#include "os/held_fds.h"
#include "os/real_libc.h"
#include "os/vm.h"

namespace adsm {

namespace {
// Frees of at least this much return their pages to the system at once;
// smaller ranges keep theirs for the next allocation.
constexpr size_t kPunchThreshold = 64 * 1024;
}  // namespace

Status AddressSpace::init(uintptr_t preferred, uint64_t size, bool over_device) {
    int fd = os::hold_fd(os::memfd_sized("adsm-host", size));
    if (fd < 0) return fail(adsmErrorInitialization, "cannot create the host mirror memfd: %s", os::error_text(-fd));
    void *user = os::map_shared(fd, 0, size, PROT_NONE, preferred, over_device);
    if (user == MAP_FAILED && over_device) {
        int e = errno;
        os::close_held(fd);
        return fail(adsmErrorInitialization, "cannot map the host mirror over the device's window at %p (%llu bytes): %s%s",
                    reinterpret_cast<void *>(preferred), static_cast<unsigned long long>(size), os::error_text(e),
                    os::address_limit_note(e).c_str());
    }
    if (user == MAP_FAILED) {
        // The preferred window is taken; any free range serves as well.
        user = os::map_shared(fd, 0, size, PROT_NONE, 0);
    }
    if (user == MAP_FAILED) {
        int e = errno;
        os::close_held(fd);
        return fail(adsmErrorInitialization, "cannot reserve a %llu-byte shared window: %s%s",
                    static_cast<unsigned long long>(size), os::error_text(e), os::address_limit_note(e).c_str());
    }
    void *alias = os::map_shared(fd, 0, size, PROT_READ | PROT_WRITE, 0);
    if (alias == MAP_FAILED) {
        int e = errno;
        os::unmap(user, size);
        os::close_held(fd);
        return fail(adsmErrorInitialization, "cannot map the host mirror alias: %s%s", os::error_text(e),
                    os::address_limit_note(e).c_str());
    }
    base_ = reinterpret_cast<uintptr_t>(user);
    size_ = size;
    over_device_ = over_device;
    host_fd_ = fd;
    alias_ = static_cast<uint8_t *>(alias);
    ranges_.init(base_, size_);
    return adsmSuccess;
}

AddressSpace::~AddressSpace() {
    if (size_ == 0) return;
    // (Unmapped, the addresses could go to another mapping before the
    // driver frees its reservation, which may unmap them.)
    if (over_device_) (void)os::reserve(size_, base_, true);
    else os::unmap(reinterpret_cast<void *>(base_), size_);
    detach_after_fork();
}

Status AddressSpace::allocate(size_t span, uintptr_t *out, size_t align) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t a;
    if (!ranges_.allocate(span, &a, align ? align : 1))
        return fail(adsmErrorMemoryAllocation, "the shared window has no free range of %zu bytes (%llu bytes free of %llu)",
                    span, static_cast<unsigned long long>(ranges_.free_bytes()),
                    static_cast<unsigned long long>(size_));
    *out = a;
    return adsmSuccess;
}

void AddressSpace::release(uintptr_t addr, size_t span) {
    os::protect(reinterpret_cast<void *>(addr), span, PROT_NONE);
    if (span >= kPunchThreshold && !keep_pages_) os::punch_hole(host_fd_, addr - base_, span);
    std::lock_guard<std::mutex> lock(mu_);
    ranges_.release(addr, span);
}

void AddressSpace::zero(uintptr_t addr, size_t span) {
    if (span >= kPunchThreshold && !keep_pages_) os::punch_hole(host_fd_, addr - base_, span);
    else os::real_memset(alias(addr), 0, span);
}

void AddressSpace::prefault(uintptr_t addr, size_t span) {
    // Only saves faults: where it cannot (a kernel before 5.14, a part the
    // protocol keeps closed) the program's first touch maps the pages.
    // Entered for reading: entering them for writing would count every page
    // as written where writes are tracked (userfaultfd), and the protocol
    // would then send output buffers the CPU never wrote (measured on an
    // H100: delta sent 3x the bytes of the I/O pipeline's input).
    (void)os::populate(reinterpret_cast<void *>(addr), span, false);
}

os::Runs AddressSpace::host_runs(uintptr_t addr, size_t len) const {
    os::Runs runs;
    if (host_fd_ < 0 || !os::data_runs(host_fd_, alias(addr), addr - base_, len, &runs)) runs.assign(1, {0, len});
    return runs;
}

uint64_t AddressSpace::free_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_.free_bytes();
}

}  // namespace adsm

namespace adsm {

void AddressSpace::detach_after_fork() {
    if (alias_) os::unmap(alias_, size_);
    alias_ = nullptr;
    os::close_held(host_fd_);
    host_fd_ = -1;
}

}  // namespace adsm
