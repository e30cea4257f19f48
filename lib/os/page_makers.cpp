#include "os/page_makers.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "os/deferred_signals.h"
#include "os/vm.h"

namespace adsm::os {

namespace {

// The pieces, handed out in order to whichever thread asks next.
struct Pieces {
    const PageRun *runs;
    size_t n;
    size_t piece;
    std::atomic<size_t> next{0};  // byte offset over all runs together

    void work() {
        for (;;) {
            const size_t at = next.fetch_add(piece, std::memory_order_relaxed), end = at + piece;
            // The parts of the runs that [at, end) covers.
            size_t skipped = 0, i = 0;
            while (i < n && at >= skipped + runs[i].len) skipped += runs[i++].len;
            if (i == n) return;
            for (; i < n && skipped < end; skipped += runs[i++].len) {
                size_t from = at > skipped ? at - skipped : 0;
                size_t to = end - skipped < runs[i].len ? end - skipped : runs[i].len;
                // Only saves the first touch its cost: pages it could not
                // make are made where they are first used.
                (void)populate(static_cast<char *>(runs[i].addr) + from, to - from, true);
            }
        }
    }
};

}  // namespace

void make_pages(const PageRun *runs, size_t n, unsigned threads, size_t piece) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += runs[i].len;
    if (total == 0) return;
    Pieces pieces{runs, n, piece ? piece : total};
    size_t helpers = threads > 1 && total >= 2 * pieces.piece ? threads - 1 : 0;
    if (helpers > total / pieces.piece - 1) helpers = total / pieces.piece - 1;
    std::vector<std::thread> started;
    try {
        started.reserve(helpers);
        for (size_t i = 0; i < helpers; ++i)
            started.emplace_back([&pieces] {
                // The program's asynchronous signals are for its own threads.
                sigset_t async = async_signals();
                pthread_sigmask(SIG_BLOCK, &async, nullptr);
                pieces.work();
            });
    } catch (const std::exception &) {
        // Fewer helpers: the caller and those started make it all.
    }
    pieces.work();
    for (std::thread &t : started) t.join();
}

}  // namespace adsm::os
