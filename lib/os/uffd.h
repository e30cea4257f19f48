// Fault-free write tracking with userfaultfd: the window's user view is
// registered for write-protection in async mode, so a write to a protected
// page is resolved by the kernel without any signal and leaves the page
// marked "written"; PAGEMAP_SCAN reports written pages and protects them
// again in one call.  Writes through the runtime's alias view are not seen,
// which is what fills need.  Needs Linux 6.7 or later.
//
// Several readers can share the written bits (the protocol, and the
// collector's generational mode).  Reading them arms the pages again, so
// once a second reader joins, what one reader finds is also noted in a log
// of each other reader's, and each reader gets its own log's pages as well
// as the kernel's.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace adsm::os {

class UffdTracker {
public:
    enum Reader : unsigned { kProtocol = 0, kCollector = 1, kReaders = 2 };

    // Whether this kernel offers what the tracker needs (probed once).
    static bool available(const char **why);

    UffdTracker() = default;
    UffdTracker(const UffdTracker &) = delete;
    UffdTracker &operator=(const UffdTracker &) = delete;
    // (A start that fails gives back every descriptor and mapping it took.)
    ~UffdTracker();

    // Each call returns 0 or the errno that stopped it; init also names the
    // step that failed.

    // Registers the window [base, base+size) for write tracking.  `backing`
    // is the file the window maps (offset addr - base), and backing_view a
    // mapping of all of it, for collect_made.
    int init(uintptr_t base, size_t size, const char **failed_step, int backing = -1,
             const void *backing_view = nullptr);

    // Forgets earlier writes to [addr, addr+len) for the protocol: every
    // page counts as clean.  (Other readers still find them written.)
    int arm(uintptr_t addr, size_t len);
    // Forgets for the protocol what other readers logged of [addr,
    // addr+len), protecting nothing (arm() does this too): for memory whose
    // pages do not exist yet, left unprotected, which collect_made reads.
    void forget(uintptr_t addr, size_t len) { forget_run(kProtocol, addr, len); }

    // Calls fn(arg, start, len) for each run of pages written in [addr,
    // addr+len) since `who` last collected them, and arms them again.
    // Async-signal-safe.  Page-aligned ranges only, once readers share.
    using RunFn = void (*)(void *arg, uintptr_t start, size_t len);
    int collect(uintptr_t addr, size_t len, RunFn fn, void *arg, Reader who = kProtocol);
    // As collect, for the protocol, over memory not armed since its pages
    // were given back: the kernel counts an unprotected page that does not
    // exist as written, and only the pages the backing file holds (swapped
    // out ones too) can have been.  Without a backing file, as collect.
    int collect_made(uintptr_t addr, size_t len, RunFn fn, void *arg);

    // `who` reads the written bits from now on, beside the protocol.  What
    // the protocol found before is not in its log: it must ask only about
    // memory made since it joined (the collector's heap), or count what it
    // first asks about as written.  0 or an errno.
    int add_reader(Reader who);
    // Pages written by means the kernel does not see (the runtime's own
    // writes through its alias view): every reader but the protocol, which
    // learns of those from the blocks it forces whole, finds them at its
    // next collect.  Async-signal-safe.
    void note_unseen(uintptr_t addr, size_t len);
    // Whether some thread is in a collect whose pages may be in no log yet:
    // a reader that stopped the world then cannot trust what it finds.
    bool collecting() const { return collecting_.load(std::memory_order_acquire) != 0; }
    // Whether the tracker works in this process: a fork child has no
    // registration, and its pagemap file is still the parent's.
    bool usable() const;
    // In a fork child: lets go of the parent's host mirror file, which the
    // child must not keep alive.
    void detach_after_fork();

private:
    void log_run(unsigned reader, uintptr_t start, size_t len);
    void forget_run(unsigned reader, uintptr_t start, size_t len);
    void report_log(unsigned reader, uintptr_t addr, size_t len, RunFn fn, void *arg);
    void report_data(uintptr_t start, size_t len, RunFn fn, void *arg) const;

    int uffd_ = -1;
    int pagemap_ = -1;
    int backing_ = -1;  // its own open file: seeking moves no one else's offset
    const uint8_t *backing_view_ = nullptr;
    pid_t pid_ = 0;
    uintptr_t base_ = 0;
    size_t size_ = 0;
    // One bit per page of the window for each reader, once there are two.
    std::atomic<std::atomic<uint64_t> *> logs_[kReaders] = {};
    std::atomic<unsigned> readers_{1u << kProtocol};
    std::atomic<int> collecting_{0};
};

}  // namespace adsm::os
