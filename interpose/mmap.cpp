// The mmap family.  The shared window is the runtime's: the program may not
// unmap, move, replace or re-protect any of it behind the runtime's back.
// Such calls fail with the errno the kernel gives for a request it refuses
// (EEXIST for MAP_FIXED_NOREPLACE, EACCES for mprotect, EINVAL otherwise)
// and a warning names the first one; harmless advice is accepted.  Every
// call that does not touch the window goes to the C library unchanged.
//
// mlockall locks pages as they are first touched: the runtime maps the
// device's memory and a view of all shared memory, each the window's size
// (64 GiB on sim), and locked whole, as MCL_CURRENT and MCL_FUTURE lock
// them, they filled the machine's memory and the kernel killed the
// program (mlockall(MCL_CURRENT | MCL_FUTURE), then a shared allocation:
// SIGKILL).  MCL_ONFAULT is added, once said.
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>

#include <atomic>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "support/log.h"

namespace {

using adsm::preload::touches_window;

bool guarded(const void *addr, size_t len) { return !adsm::inside_runtime() && touches_window(addr, len); }

void refuse(const char *fn, const void *addr, size_t len, int err) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        adsm::log(adsm::LogLevel::warn,
                  "%s(%p, %zu) refused: the range belongs to adsm's shared memory (further refusals are not reported)",
                  fn, addr, len);
    errno = err;
}

bool harmless(int advice) {
    switch (advice) {
    case MADV_NORMAL:
    case MADV_RANDOM:
    case MADV_SEQUENTIAL:
    case MADV_WILLNEED:
    case MADV_HUGEPAGE:
    case MADV_NOHUGEPAGE:
    case MADV_DODUMP:
    case MADV_DONTDUMP:
    case MADV_COLD:
    case MADV_PAGEOUT: return true;
    default: return false;
    }
}

}  // namespace

INTERCEPTOR(void *, mmap, void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if ((flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) && guarded(addr, len)) {
        refuse("mmap", addr, len, (flags & MAP_FIXED_NOREPLACE) ? EEXIST : EINVAL);
        return MAP_FAILED;
    }
    return REAL(mmap)(addr, len, prot, flags, fd, off);
}

INTERCEPTOR(void *, mmap64, void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    if ((flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) && guarded(addr, len)) {
        refuse("mmap64", addr, len, (flags & MAP_FIXED_NOREPLACE) ? EEXIST : EINVAL);
        return MAP_FAILED;
    }
    return REAL(mmap64)(addr, len, prot, flags, fd, off);
}

INTERCEPTOR(int, munmap, void *addr, size_t len) {
    if (guarded(addr, len)) {
        refuse("munmap", addr, len, EINVAL);
        return -1;
    }
    return REAL(munmap)(addr, len);
}

INTERCEPTOR(void *, mremap, void *old_addr, size_t old_len, size_t new_len, int flags, ...) {
    void *new_addr = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    // (An old length of 0 asks for a second mapping of the same pages: of
    // shared memory, one the protocols would not know about.)
    if (guarded(old_addr, old_len ? old_len : 1) || ((flags & MREMAP_FIXED) && guarded(new_addr, new_len))) {
        refuse("mremap", old_addr, old_len, EINVAL);
        return MAP_FAILED;
    }
    return REAL(mremap)(old_addr, old_len, new_len, flags, new_addr);
}

INTERCEPTOR(int, mprotect, void *addr, size_t len, int prot) {
    if (guarded(addr, len)) {
        refuse("mprotect", addr, len, EACCES);
        return -1;
    }
    return REAL(mprotect)(addr, len, prot);
}

INTERCEPTOR(int, madvise, void *addr, size_t len, int advice) {
    if (guarded(addr, len)) {
        if (harmless(advice)) return 0;
        refuse("madvise", addr, len, EINVAL);
        return -1;
    }
    return REAL(madvise)(addr, len, advice);
}

INTERCEPTOR(int, posix_madvise, void *addr, size_t len, int advice) {
    if (guarded(addr, len)) {
        if (harmless(advice)) return 0;
        refuse("posix_madvise", addr, len, EINVAL);
        return EINVAL;  // posix_madvise reports, it does not set errno
    }
    return REAL(posix_madvise)(addr, len, advice);
}

INTERCEPTOR(int, mlockall, int flags) {
    if ((flags & (MCL_CURRENT | MCL_FUTURE)) && !(flags & MCL_ONFAULT)) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            adsm::log(adsm::LogLevel::warn,
                      "mlockall locks pages as they are first touched (MCL_ONFAULT added): adsm's device memory and "
                      "its view of shared memory, locked whole, would fill the machine's memory");
        flags |= MCL_ONFAULT;
    }
    return REAL(mlockall)(flags);
}
