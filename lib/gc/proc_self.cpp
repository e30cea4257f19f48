#include "gc/proc_self.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "os/held_fds.h"
#include "os/raw_syscall.h"

extern "C" void *__libc_stack_end;  // glibc's: the main thread's stack at start

namespace adsm::gc {
namespace {

// The C library's open and read may be the preload's (interpose/io.cpp),
// which takes the runtime's locks; these are the kernel's.
int sys_open(const char *path, int flags) {
    return static_cast<int>(os::raw_syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC));
}

long sys_read(int fd, char *buf, size_t n) {
    long r;
    do r = os::raw_syscall(SYS_read, fd, buf, n);
    while (r < 0 && errno == EINTR);
    return r;
}

void sys_close(int fd) { os::raw_syscall(SYS_close, fd); }

// PROCMAP_QUERY's interface (linux/fs.h of 6.11, which older headers lack).
struct ProcmapQuery {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;  // out
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104, "struct procmap_query");
constexpr unsigned long kProcmapQuery = 0xC0686611;  // _IOWR('f', 17, struct procmap_query)
constexpr uint64_t kQueryReadable = 0x01;

// The readable mapping holding a, asked of the maps file fd: 1, 0 when
// there is none, -errno when the question cannot be asked.
int query(int fd, uintptr_t a, Range *out) {
    ProcmapQuery q{};
    q.size = sizeof q;
    q.query_flags = kQueryReadable;  // covering a, not the next one
    q.query_addr = a;
    long r;
    do r = os::raw_syscall(SYS_ioctl, fd, kProcmapQuery, &q);
    while (r != 0 && errno == EINTR);
    if (r != 0) return errno == ENOENT ? 0 : -errno;
    *out = Range{q.vma_start, q.vma_end};
    return 1;
}

// Whether this kernel answers (asked once, of an address surely mapped).
bool kernel_answers(int fd) {
    static std::atomic<int> known{0};  // 1 yes, -1 no
    int k = known.load(std::memory_order_relaxed);
    if (k) return k > 0;
    static const int probe = 0;
    Range r;
    k = query(fd, reinterpret_cast<uintptr_t>(&probe), &r) == 1 ? 1 : -1;
    known.store(k, std::memory_order_relaxed);
    return k > 0;
}

// A thread id from a directory entry's name; 0 for "." and "..".
pid_t parse_tid(const char *s) {
    pid_t v = 0;
    for (; *s >= '0' && *s <= '9'; ++s) v = v * 10 + (*s - '0');
    return *s ? 0 : v;
}

// Hex digits at *p, advancing past them.
uintptr_t parse_hex(const char **p, const char *end) {
    uintptr_t v = 0;
    for (; *p < end; ++*p) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) break;
        v = v << 4 | static_cast<uintptr_t>(d);
    }
    return v;
}

}  // namespace

int for_each_thread(void (*fn)(void *arg, pid_t tid), void *arg) {
    int fd = sys_open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -errno;
    alignas(struct dirent64) char buf[4096];
    for (;;) {
        long n = os::raw_syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            sys_close(fd);
            return -e;
        }
        if (n == 0) break;
        for (long off = 0; off < n;) {
            const auto *d = reinterpret_cast<const struct dirent64 *>(buf + off);
            off += d->d_reclen;
            if (pid_t tid = parse_tid(d->d_name)) fn(arg, tid);
        }
    }
    sys_close(fd);
    return 0;
}

bool thread_alive(pid_t tid) {
    char path[64] = "/proc/self/task/";
    char digits[16];
    int nd = 0;
    for (unsigned v = static_cast<unsigned>(tid); v || nd == 0; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
    size_t len = strlen(path);
    while (nd) path[len++] = digits[--nd];
    memcpy(path + len, "/stat", 6);
    int fd = sys_open(path, O_RDONLY);
    if (fd < 0) return errno != ENOENT && errno != ESRCH;
    // "tid (comm) S ...": the name may hold ") ", so the state follows the last ')'.
    char buf[256];
    long n = sys_read(fd, buf, sizeof buf);
    sys_close(fd);
    if (n <= 0) return n < 0 ? errno != ESRCH : false;
    const char *close_paren = nullptr;
    for (long i = 0; i < n; ++i)
        if (buf[i] == ')') close_paren = buf + i;
    if (!close_paren || close_paren + 2 >= buf + n) return true;
    char state = close_paren[2];
    return state != 'Z' && state != 'X' && state != 'x';
}

bool Mappings::parse(const char *line, size_t len) {
    // "lo-hi perms offset dev inode   name"
    const char *p = line, *end = line + len;
    uintptr_t lo = parse_hex(&p, end);
    if (p == end || *p++ != '-') return true;
    uintptr_t hi = parse_hex(&p, end);
    if (p == end || *p++ != ' ' || p == end || *p != 'r') return true;
    static constexpr char kStack[] = "[stack]";
    size_t ks = sizeof kStack - 1;
    if (len >= ks && memcmp(end - ks, kStack, ks) == 0) stack_ = Range{lo, hi};
    return maps_.push(lo, hi);
}

Mappings::~Mappings() {
    os::close_held(fd_);
}

int Mappings::read(bool ask_kernel) {
    maps_.clear();
    stack_ = Range{};
    failed_ = false;
    // (Opened afresh each time: a fork child's inherited file is its parent's.)
    os::close_held(fd_);
    fd_ = -1;
    int fd = sys_open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return -errno;
    if (ask_kernel && kernel_answers(fd)) {
        fd_ = os::hold_fd(fd);  // kept between questions: out of the program's reach
        return 0;
    }
    char buf[8192];
    size_t have = 0;
    bool skipping = false;  // the rest of a line longer than buf, its head parsed
    int err = 0;
    for (;;) {
        long n = sys_read(fd, buf + have, sizeof buf - have);
        if (n < 0) {
            err = -errno;
            break;
        }
        if (n == 0) {
            if (have && !skipping && !parse(buf, have)) err = -ENOMEM;
            break;
        }
        have += static_cast<size_t>(n);
        size_t start = 0;
        while (const char *nl = static_cast<const char *>(memchr(buf + start, '\n', have - start))) {
            size_t len = static_cast<size_t>(nl - (buf + start));
            if (!skipping && !parse(buf + start, len)) err = -ENOMEM;
            skipping = false;
            start += len + 1;
        }
        if (err) break;
        memmove(buf, buf + start, have - start);
        have -= start;
        if (have == sizeof buf) {
            if (!skipping && !parse(buf, have)) err = -ENOMEM;
            skipping = true;
            have = 0;
        }
    }
    sys_close(fd);
    return err;
}

bool Mappings::find(uintptr_t a, Range *out) const {
    if (fd_ >= 0) {
        int r = query(fd_, a, out);
        if (r < 0) failed_ = true;
        return r == 1;
    }
    // The last mapping that starts at or below a.
    size_t lo = 0, hi = maps_.size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (maps_[mid].lo <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0 || a >= maps_[lo - 1].hi) return false;
    *out = maps_[lo - 1];
    return true;
}

Range Mappings::main_stack() const {
    if (fd_ < 0) return stack_;
    // The main thread's stack holds the one the C library noted at start.
    Range r;
    return find(reinterpret_cast<uintptr_t>(__libc_stack_end), &r) ? r : Range{};
}

}  // namespace adsm::gc
