#include "os/vm.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "os/fault_injection.h"
#include "os/proc_text.h"
#include "os/raw_syscall.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace adsm::os {
namespace {
// (raw_syscall sets errno and returns -1 on failure, as syscall() does:
// the code itself, taken as the kernel's negative one, said EPERM for
// every failed mapping.)
void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    long r = raw_syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return r == -1 ? MAP_FAILED : reinterpret_cast<void *>(r);
}
}  // namespace

std::string address_limit_note(int err) {
    struct rlimit r;
    if (err != ENOMEM || getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return "";
    char note[160];
    snprintf(note, sizeof note, " (the process may map %llu MiB in all: RLIMIT_AS, `ulimit -v`)",
             static_cast<unsigned long long>(r.rlim_cur >> 20));
    return note;
}

uint64_t address_room() {
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    // (statm's first field: the pages mapped now, as the limit counts them.)
    char statm[128];
    unsigned long long pages = 0;
    if (!read_proc_text("/proc/self/statm", statm, sizeof statm) || sscanf(statm, "%llu", &pages) != 1) return 0;
    const uint64_t used = pages * kPageSize;
    return r.rlim_cur > used ? r.rlim_cur - used : 0;
}

int memfd_sized(const char *name, uint64_t size) {
    int fd = static_cast<int>(raw_syscall(SYS_memfd_create, name, MFD_CLOEXEC));
    if (fd < 0) return -errno;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

void *map_shared(int fd, uint64_t off, size_t len, int prot, uintptr_t at, bool replace) {
    int flags = MAP_SHARED | MAP_NORESERVE;
    if (at) flags |= replace ? MAP_FIXED : MAP_FIXED_NOREPLACE;
    void *p = sys_mmap(reinterpret_cast<void *>(at), len, prot, flags, fd, static_cast<off_t>(off));
    // Kernels before 4.17 treat the unknown flag as a hint: refuse a move.
    if (p != MAP_FAILED && at && reinterpret_cast<uintptr_t>(p) != at) {
        unmap(p, len);
        errno = EEXIST;
        return MAP_FAILED;
    }
    return p;
}

void *reserve(size_t len, uintptr_t at, bool replace) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (at) flags |= replace ? MAP_FIXED : MAP_FIXED_NOREPLACE;
    void *p = sys_mmap(reinterpret_cast<void *>(at), len, PROT_NONE, flags, -1, 0);
    if (p != MAP_FAILED && at && reinterpret_cast<uintptr_t>(p) != at) {
        unmap(p, len);
        errno = EEXIST;
        return MAP_FAILED;
    }
    return p;
}

void *map_anon(size_t len, int prot, bool noreserve) {
    return sys_mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0), -1, 0);
}

int unmap(void *addr, size_t len) {
    long r = raw_syscall(SYS_munmap, addr, len);
    return r < 0 ? -errno : 0;
}

int readable(const void *addr) {
    // The kernel reads through the page tables with the mapping's
    // permissions, and reports EFAULT where the program would fault.  A
    // page of a shared mapping that does not exist yet would be made by
    // that read: such a page is not asked about.
    int saved = errno;
    unsigned char made = 0;
    if (raw_syscall(SYS_mincore, page_down(reinterpret_cast<uintptr_t>(addr)), kPageSize, &made) == 0 && !(made & 1)) {
        errno = saved;
        return -1;
    }
    char byte;
    struct iovec local = {&byte, 1}, remote = {const_cast<void *>(addr), 1};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    int verdict = n == 1 ? 1 : errno == EFAULT ? 0 : -1;
    errno = saved;
    return verdict;
}

namespace {
bool copy_checked(void *to, const void *from, size_t n, bool remote_is_from) {
    const int saved = errno;
    struct iovec local = {remote_is_from ? to : const_cast<void *>(from), n};
    struct iovec remote = {remote_is_from ? const_cast<void *>(from) : to, n};
    ssize_t r = remote_is_from ? process_vm_readv(getpid(), &local, 1, &remote, 1, 0)
                               : process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
    if (r < 0 && errno != EFAULT) {
        std::memcpy(to, from, n);
        r = static_cast<ssize_t>(n);
    }
    errno = saved;
    return r == static_cast<ssize_t>(n);
}
}  // namespace

bool copy_checked_from(void *to, const void *from, size_t n) { return copy_checked(to, from, n, true); }
bool copy_checked_to(void *to, const void *from, size_t n) { return copy_checked(to, from, n, false); }

namespace {
// Calls run(lo, hi) for each run of pages of [page_down(addr), addr+len)
// that exist, as mincore sees them, until it returns false.  False if the
// kernel would not say (then nothing more is called).
template <class Run>
bool for_each_made_run(const void *addr, size_t len, Run &&run) {
    uintptr_t at = page_down(reinterpret_cast<uintptr_t>(addr)), start = 0;
    const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
    unsigned char made[512];
    while (at < end) {
        size_t pages = (end - at + kPageSize - 1) / kPageSize;
        if (pages > sizeof made) pages = sizeof made;
        if (raw_syscall(SYS_mincore, at, pages * kPageSize, made) != 0) return false;
        for (size_t i = 0; i < pages; ++i, at += kPageSize) {
            if (made[i] & 1) {
                if (!start) start = at;
            } else if (start) {
                if (!run(start, at)) return true;
                start = 0;
            }
        }
    }
    if (start) run(start, at);
    return true;
}
}  // namespace

bool any_page_made(const void *addr, size_t len) {
    if (len == 0) return false;
    int saved = errno;
    // The first run found ends the walk; a kernel that will not say counts as made.
    bool any = false;
    auto found = [&](uintptr_t, uintptr_t) {
        any = true;
        return false;
    };
    if (!for_each_made_run(addr, len, found)) any = true;
    errno = saved;
    return any;
}

int protect(void *addr, size_t len, int prot) {
    // As when a split would pass vm.max_map_count.
    if (injection::should_fail(injection::Site::protect)) return -ENOMEM;
    long r = raw_syscall(SYS_mprotect, addr, len, prot);
    return r < 0 ? -errno : 0;
}

int remap_fixed(void *from, size_t len, void *to) {
    long r = raw_syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    return r < 0 ? -errno : 0;
}

int populate(void *addr, size_t len, bool for_write) {
#ifndef MADV_POPULATE_READ
    constexpr int MADV_POPULATE_READ = 22, MADV_POPULATE_WRITE = 23;
#endif
    long r = raw_syscall(SYS_madvise, addr, len, for_write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
    return r < 0 ? -errno : 0;
}

void populate_made_pages(void *addr, size_t len) {
    int saved = errno;
    for_each_made_run(addr, len, [](uintptr_t lo, uintptr_t hi) {
        (void)populate(reinterpret_cast<void *>(lo), hi - lo, /*for_write=*/true);
        return true;
    });
    errno = saved;
}

int punch_hole(int fd, uint64_t off, uint64_t len) {
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(len)) != 0)
        return -errno;
    return 0;
}

bool page_size_supported() { return sysconf(_SC_PAGESIZE) == static_cast<long>(kPageSize); }

}  // namespace adsm::os
