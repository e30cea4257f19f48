#include "os/uffd.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "os/data_runs.h"
#include "os/held_fds.h"
#include "os/raw_syscall.h"

// Debian 12's headers predate these (Linux 6.7); the values are the kernel ABI.
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

namespace {
struct page_region_abi {
    uint64_t start, end, categories;
};
struct pm_scan_arg_abi {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
        category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, pm_scan_arg_abi);
constexpr uint64_t kScanWpMatching = 1 << 0;
constexpr uint64_t kScanCheckWpAsync = 1 << 1;
constexpr uint64_t kPageIsWritten = 1 << 1;
constexpr uint64_t kFeatures = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_HUGETLBFS_SHMEM | UFFD_FEATURE_WP_UNPOPULATED;

int open_uffd() {
    int fd = static_cast<int>(adsm::os::raw_syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (fd < 0) return -errno;
    struct uffdio_api api;
    memset(&api, 0, sizeof api);
    api.api = UFFD_API;
    api.features = kFeatures;
    if (ioctl(fd, UFFDIO_API, &api) != 0 || (api.features & kFeatures) != kFeatures) {
        int e = errno ? errno : ENOTSUP;
        close(fd);
        return -e;
    }
    return fd;
}
}  // namespace

namespace adsm::os {

bool UffdTracker::available(const char **why) {
    static int verdict = 0;  // 0 unknown, 1 yes, 2 no
    static const char *reason = "";
    if (verdict == 0) {
        int fd = open_uffd();
        if (fd < 0) {
            reason = fd == -ENOSYS ? "userfaultfd is not available"
                     : fd == -EPERM ? "userfaultfd is not permitted (vm.unprivileged_userfaultfd)"
                                    : "userfaultfd lacks async write-protection (Linux 6.7+)";
            verdict = 2;
        } else {
            close(fd);
            int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
            pm_scan_arg_abi arg;
            memset(&arg, 0, sizeof arg);
            arg.size = sizeof arg;
            // An empty, valid scan tells whether the ioctl exists.
            static char probe[4096] __attribute__((aligned(4096)));
            arg.start = reinterpret_cast<uintptr_t>(probe);
            arg.end = arg.start;
            bool ok = pm >= 0 && ioctl(pm, kPagemapScan, &arg) >= 0;
            if (pm >= 0) close(pm);
            verdict = ok ? 1 : 2;
            if (!ok) reason = "the PAGEMAP_SCAN ioctl is missing (Linux 6.7+)";
        }
    }
    if (why) *why = reason;
    return verdict == 1;
}

int UffdTracker::init(uintptr_t base, size_t size, const char **failed_step, int backing, const void *backing_view) {
    int fd = open_uffd();
    if (fd < 0) {
        *failed_step = "userfaultfd";
        return -fd;
    }
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = base;
    reg.range.len = size;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
        int e = errno;
        close(fd);
        *failed_step = "userfaultfd register of the window";
        return e;
    }
    int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pm < 0) {
        int e = errno;
        close(fd);
        *failed_step = "opening /proc/self/pagemap";
        return e;
    }
    uffd_ = hold_fd(fd);
    pagemap_ = hold_fd(pm);
    if (backing >= 0 && backing_view) {
        backing_view_ = static_cast<const uint8_t *>(backing_view);
        char path[48];
        snprintf(path, sizeof path, "/proc/self/fd/%d", backing);
        backing_ = hold_fd(open(path, O_RDONLY | O_CLOEXEC));  // (-1: collect_made is collect)
    }
    pid_ = getpid();
    base_ = base;
    size_ = size;
    return 0;
}

UffdTracker::~UffdTracker() {
    for (int fd : {uffd_, pagemap_, backing_}) close_held(fd);
    const size_t bytes = ((size_ >> 12) + 63) / 64 * sizeof(uint64_t);
    for (auto &log : logs_)
        if (std::atomic<uint64_t> *l = log.load(std::memory_order_acquire)) munmap(l, bytes);
}

void UffdTracker::detach_after_fork() {
    close_held(backing_);
    backing_ = -1;
    backing_view_ = nullptr;
}

bool UffdTracker::usable() const { return uffd_ >= 0 && getpid() == pid_; }

int UffdTracker::add_reader(Reader who) {
    // Every reader gets a log, the protocol's included: from now on what
    // one reader arms again, the others must still find.
    size_t bytes = ((size_ >> 12) + 63) / 64 * sizeof(uint64_t);
    for (unsigned r = 0; r < kReaders; ++r) {
        if (logs_[r].load(std::memory_order_acquire)) continue;
        void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return errno;
        logs_[r].store(static_cast<std::atomic<uint64_t> *>(m), std::memory_order_release);
    }
    readers_.fetch_or(1u << who, std::memory_order_acq_rel);
    return 0;
}

namespace {
// Calls f(word, mask) for each word of a page bitmap that pages [first,
// end) touch, mask holding their bits.
template <class F>
void for_each_word(size_t first, size_t end, F &&f) {
    for (size_t pg = first; pg < end;) {
        size_t lo = pg % 64, n = end - pg < 64 - lo ? end - pg : 64 - lo;
        f(pg / 64, (n == 64 ? ~uint64_t(0) : ((uint64_t(1) << n) - 1)) << lo);
        pg += n;
    }
}

// for_each_word over the pages [addr, addr+len) touches in a window of
// `size` bytes at `base`, cut at the window's end; nothing outside it.
template <class F>
void for_each_page_word(uintptr_t base, size_t size, uintptr_t addr, size_t len, F &&f) {
    if (addr < base || addr - base >= size) return;
    size_t first = (addr - base) >> 12, end = (addr - base + len + 4095) >> 12;
    if (end > size >> 12) end = size >> 12;
    for_each_word(first, end, f);
}
}  // namespace

void UffdTracker::log_run(unsigned reader, uintptr_t start, size_t len) {
    std::atomic<uint64_t> *log = logs_[reader].load(std::memory_order_acquire);
    if (!log) return;
    for_each_page_word(base_, size_, start, len,
                       [&](size_t w, uint64_t mask) { log[w].fetch_or(mask, std::memory_order_relaxed); });
}

void UffdTracker::forget_run(unsigned reader, uintptr_t start, size_t len) {
    std::atomic<uint64_t> *log = logs_[reader].load(std::memory_order_acquire);
    if (!log) return;
    for_each_page_word(base_, size_, start, len,
                       [&](size_t w, uint64_t mask) { log[w].fetch_and(~mask, std::memory_order_relaxed); });
}

void UffdTracker::note_unseen(uintptr_t addr, size_t len) {
    if (len == 0) return;
    unsigned readers = readers_.load(std::memory_order_acquire);
    for (unsigned r = 0; r < kReaders; ++r)
        if (r != kProtocol && (readers >> r & 1)) log_run(r, addr & ~uintptr_t(4095), (addr & 4095) + len);
}

// Takes `reader`'s logged pages in [addr, addr+len) and reports them in runs.
void UffdTracker::report_log(unsigned reader, uintptr_t addr, size_t len, RunFn fn, void *arg) {
    std::atomic<uint64_t> *log = logs_[reader].load(std::memory_order_acquire);
    size_t run = 0, run_len = 0;  // the run being gathered, in pages
    auto flush = [&] {
        if (run_len) fn(arg, base_ + (run << 12), run_len << 12);
        run_len = 0;
    };
    for_each_page_word(base_, size_, addr, len, [&](size_t w, uint64_t mask) {
        uint64_t bits = log[w].load(std::memory_order_relaxed) & mask;
        if (bits) bits = log[w].fetch_and(~mask, std::memory_order_relaxed) & mask;
        if (!bits) return flush();
        for (uint64_t b = bits; b;) {
            // The run of set bits starting at the lowest one.
            unsigned i = static_cast<unsigned>(__builtin_ctzll(b));
            uint64_t ones = ~(b >> i);
            unsigned n = ones ? static_cast<unsigned>(__builtin_ctzll(ones)) : 64 - i;
            size_t at = w * 64 + i;
            if (run_len && run + run_len != at) flush();
            if (!run_len) run = at;
            run_len += n;
            b = i + n >= 64 ? 0 : b & (~uint64_t(0) << (i + n));
        }
        // A run goes on into the next word only if it reached this one's end.
        if (!(bits >> 63 & 1) || !(mask >> 63 & 1)) flush();
    });
    flush();
}

int UffdTracker::arm(uintptr_t addr, size_t len) {
    // What was written there is forgotten for the caller only.
    unsigned readers = readers_.load(std::memory_order_acquire);
    for (unsigned r = 0; r < kReaders; ++r)
        if (r != kProtocol && (readers >> r & 1)) log_run(r, addr, len);
    struct uffdio_writeprotect wp;
    wp.range.start = addr;
    wp.range.len = len;
    wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    if (ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0) return errno;
    // Pages another reader found written before and logged for the
    // protocol too may be those of an object freed since, whose range this
    // one reuses: found at its first release, they would send its blocks'
    // host bytes over what it holds on the device.
    forget_run(kProtocol, addr, len);
    return 0;
}

int UffdTracker::collect(uintptr_t addr, size_t len, RunFn fn, void *arg, Reader who) {
    unsigned readers = readers_.load(std::memory_order_acquire);
    const bool shared = readers != (1u << kProtocol) && addr >= base_ && addr - base_ < size_;
    if (shared) collecting_.fetch_add(1, std::memory_order_acq_rel);
    page_region_abi vec[64];
    uintptr_t pos = addr, end = addr + len;
    while (pos < end) {
        pm_scan_arg_abi a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.flags = kScanWpMatching | kScanCheckWpAsync;
        a.start = pos;
        a.end = end;
        a.vec = reinterpret_cast<uintptr_t>(vec);
        a.vec_len = 64;
        a.category_mask = kPageIsWritten;
        a.return_mask = kPageIsWritten;
        long n = ioctl(pagemap_, kPagemapScan, &a);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            if (shared) {
                // What the scan armed before it failed is lost to every
                // reader: all of the range counts as written for each.
                for (unsigned r = 0; r < kReaders; ++r)
                    if (readers >> r & 1) log_run(r, addr, len);
                collecting_.fetch_sub(1, std::memory_order_acq_rel);
            }
            return e;
        }
        for (long i = 0; i < n; ++i) {
            if (!shared) {
                fn(arg, vec[i].start, vec[i].end - vec[i].start);
                continue;
            }
            // Every reader's log, this one's too: its own report comes from
            // its log, merged with what other readers found before.
            for (unsigned r = 0; r < kReaders; ++r)
                if (readers >> r & 1) log_run(r, vec[i].start, vec[i].end - vec[i].start);
        }
        if (a.walk_end <= pos) break;
        pos = a.walk_end;
    }
    if (shared) {
        collecting_.fetch_sub(1, std::memory_order_acq_rel);
        report_log(who, addr, len, fn, arg);
    }
    return 0;
}

int UffdTracker::collect_made(uintptr_t addr, size_t len, RunFn fn, void *arg) {
    if (backing_ < 0) return collect(addr, len, fn, arg);
    struct Made {
        const UffdTracker *tracker;
        RunFn fn;
        void *arg;
    } made{this, fn, arg};
    return collect(
        addr, len,
        [](void *p, uintptr_t start, size_t n) {
            auto *m = static_cast<Made *>(p);
            m->tracker->report_data(start, n, m->fn, m->arg);
        },
        &made);
}

// Calls fn for the parts of [start, start+len) the backing file holds
// data for; for all of it where the file will not say.
void UffdTracker::report_data(uintptr_t start, size_t len, RunFn fn, void *arg) const {
    struct Report {
        uintptr_t start;
        RunFn fn;
        void *arg;
    } report{start, fn, arg};
    (void)for_each_data_run(
        backing_, backing_view_ + (start - base_), start - base_, len,
        [](void *p, uint64_t b, uint64_t e) {
            auto *r = static_cast<Report *>(p);
            r->fn(r->arg, r->start + b, e - b);
        },
        &report);
}

}  // namespace adsm::os
