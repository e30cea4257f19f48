#include "os/data_runs.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "os/raw_syscall.h"

namespace adsm::os {
namespace {

// Passes runs on whole: neighbours found apart (pages in memory, pages
// swapped out) are joined, and everything is clipped to the range.
class Joiner {
public:
    Joiner(uint64_t len, DataRunFn fn, void *arg) : len_(len), fn_(fn), arg_(arg) {}
    // Runs come in order of their begin; they may overlap the last one.
    void add(uint64_t b, uint64_t e) {
        e = std::min(e, len_);
        if (b >= e) return;
        if (open_ && b <= e_) {
            e_ = std::max(e_, e);
            return;
        }
        flush();
        b_ = b, e_ = e, open_ = true;
    }
    void flush() {
        if (open_) fn_(arg_, b_, e_);
        open_ = false;
    }

private:
    uint64_t len_;
    DataRunFn fn_;
    void *arg_;
    uint64_t b_ = 0, e_ = 0;
    bool open_ = false;
};

// The pages of [b, e) (relative to off) that mincore saw as not in memory:
// holes, or pages swapped out, which are data.  SEEK_DATA passes over holes
// without visiting them page by page and stops at the first page that
// holds data; only swapped-out pages cost a call each.  False where the
// kernel will not say; *none_after once the file holds no data from b on.
bool absent_pages(int fd, uint64_t off, uint64_t b, uint64_t e, Joiner &out, bool *none_after) {
    for (uint64_t at = b; at < e && !*none_after;) {
        long data = raw_syscall(SYS_lseek, fd, static_cast<off_t>(off + at), SEEK_DATA);
        if (data < 0 && errno == ENXIO) {
            *none_after = true;
            break;
        }
        if (data < 0 || static_cast<uint64_t>(data) < off + at) return false;
        const uint64_t page = (static_cast<uint64_t>(data) - off) & ~(kPageSize - 1);
        if (page >= e) break;
        out.add(page, page + kPageSize);
        at = page + kPageSize;
    }
    return true;
}

}  // namespace

bool for_each_data_run(int fd, const void *view, uint64_t off, uint64_t len, DataRunFn fn, void *arg) {
    const int saved = errno;
    Joiner out(len, fn, arg);
    const auto *base = static_cast<const uint8_t *>(view);
    constexpr uint64_t kNone = UINT64_MAX;
    uint64_t absent = kNone;  // where the pages not in memory began
    bool none_after = false;
    // Up to `told` the kernel said, but for the pages from `absent` on; the
    // rest counts as data.
    uint64_t told = 0;
    bool all_told = true;
    unsigned char in_memory[512];
    for (uint64_t at = 0; at < len && all_told;) {
        const uint64_t pages = std::min<uint64_t>((len - at + kPageSize - 1) / kPageSize, sizeof in_memory);
        if (raw_syscall(SYS_mincore, base + at, pages * kPageSize, in_memory) != 0) {
            all_told = false;
            break;
        }
        for (uint64_t i = 0; i < pages; ++i) {
            const uint64_t page = at + i * kPageSize;
            if (!(in_memory[i] & 1)) {
                if (absent == kNone) absent = page;
                continue;
            }
            if (absent != kNone && !absent_pages(fd, off, absent, page, out, &none_after)) {
                all_told = false;
                break;
            }
            absent = kNone;
            out.add(page, page + kPageSize);
        }
        if (all_told) told = at += pages * kPageSize;
    }
    if (all_told && absent != kNone && !absent_pages(fd, off, absent, told, out, &none_after)) all_told = false;
    if (!all_told) out.add(absent != kNone ? absent : told, len);
    out.flush();
    errno = saved;
    return all_told;
}

bool data_runs(int fd, const void *view, uint64_t off, uint64_t len, Runs *out) {
    Runs runs;
    if (!for_each_data_run(
            fd, view, off, len,
            [](void *p, uint64_t b, uint64_t e) { static_cast<Runs *>(p)->emplace_back(b, e); }, &runs))
        return false;
    *out = std::move(runs);
    return true;
}

}  // namespace adsm::os
