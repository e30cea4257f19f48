// The case adsm's collector was designed for: a kernel walks a tree in
// collected memory while the CPU allocates and wants to collect.  adsm
// collects at once (what the kernel may reach is kept without waiting for
// it); a collector that must see the device's memory settled first syncs,
// then collects, and so waits for the kernel.  Both are timed from "want to
// collect" to "collection done".
//   kernelwalk [--depth D] [--kernel-ms MS] [--garbage-mb MB] [--rounds N]
#include <adsm.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "collector.h"

namespace {

struct Node {
    Node *left;
    Node *right;
    long value;
};

int g_depth = 18, g_kernel_ms = 300, g_garbage_mb = 4, g_rounds = 3;
Node *g_root = nullptr;

Node *make_tree(int depth, long value) {
    auto *n = static_cast<Node *>(bench::gc_alloc(sizeof(Node)));
    n->value = value;
    if (depth > 0) {
        n->left = make_tree(depth - 1, 2 * value);
        n->right = make_tree(depth - 1, 2 * value + 1);
    }
    return n;
}

long sum(const Node *n) { return n ? n->value + sum(n->left) + sum(n->right) : 0; }

// Sums the tree again and again for `ms`: out[0] the sum, out[1] the
// passes, out[2] the passes whose sum differed from the first's.
void walk_kernel(const adsm::thread_index &, const Node *root, long *out, int ms) {
    uint64_t end = bench::now_ns() + uint64_t(ms) * 1000000;
    long first = 0, passes = 0, bad = 0;
    do {
        long s = sum(root);
        if (passes++ == 0) first = s;
        else if (s != first) ++bad;
    } while (bench::now_ns() < end);
    out[0] = first;
    out[1] = passes;
    out[2] = bad;
}

// Garbage of small objects, as a program makes while the kernel runs.  Kept
// under the collector's trigger so that only the timed collection runs.
__attribute__((noinline)) void make_garbage(int mb) {
    for (long done = 0; done < (long(mb) << 20); done += 64) {
        auto *p = static_cast<long *>(bench::gc_alloc(64));
        p[0] = done;
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char **argv) {
    for (int k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--depth")) g_depth = bench::arg_int("kernelwalk", argc, argv, k);
        else if (!strcmp(argv[k], "--kernel-ms")) g_kernel_ms = bench::arg_int("kernelwalk", argc, argv, k);
        else if (!strcmp(argv[k], "--garbage-mb")) g_garbage_mb = bench::arg_int("kernelwalk", argc, argv, k);
        else if (!strcmp(argv[k], "--rounds")) g_rounds = bench::arg_int("kernelwalk", argc, argv, k);
        else {
            fprintf(stderr, "usage: %s [--depth D] [--kernel-ms MS] [--garbage-mb MB] [--rounds N]\n", argv[0]);
            return 2;
        }
    }
    if (g_depth < 1 || g_depth > 24 || g_kernel_ms < 1 || g_garbage_mb < 0 || g_rounds < 1)
        bench::die("kernelwalk: depth 1..24, kernel-ms and rounds at least 1, garbage-mb at least 0");
    try {
        adsm::kernel<walk_kernel> walk("kernelwalk.walk");
        adsm::shared_array<long> out(3);
        g_root = make_tree(g_depth, 1);
        const long expected = sum(g_root);

        // [0]: collect at once; [1]: sync, then collect.
        std::vector<double> wait_ms[2], kernel_ms;
        bool overlapped = true;  // every unsynced collection ended before its kernel
        for (int mode = 0; mode < 2; ++mode)
            for (int r = 0; r < g_rounds; ++r) {
                out[0] = out[1] = out[2] = 0;
                uint64_t launched = bench::now_ns();
                walk(1, 1, static_cast<const Node *>(g_root), out.data(), g_kernel_ms);
                make_garbage(g_garbage_mb);
                uint64_t want = bench::now_ns();
                if (mode == 1) adsm::sync();
                bench::gc_collect();
                uint64_t done = bench::now_ns();
                adsm::sync();
                uint64_t synced = bench::now_ns();
                wait_ms[mode].push_back(double(done - want) / 1e6);
                if (mode == 0) {
                    kernel_ms.push_back(double(synced - launched) / 1e6);
                    overlapped &= synced - done > 1000000;  // the kernel still had a millisecond to run
                }
                if (out[0] != expected || out[2] != 0 || out[1] < 1) {
                    fprintf(stderr, "kernelwalk: mode %d round %d: the kernel summed %ld (%ld passes, %ld differing), want %ld\n",
                            mode, r, out[0], out[1], out[2], expected);
                    return 1;
                }
            }

        bench::GcStats s = bench::gc_stats();
        double nosync = median(wait_ms[0]), sync = median(wait_ms[1]);
        // walk_ms: how long each kernel walks; kernel_ms: launch to sync
        // when collecting at once (longer if the collections slowed it).
        printf("RESULT kernelwalk %s nosync_ms=%.3f sync_ms=%.3f ratio=%.1f walk_ms=%d kernel_ms=%.1f depth=%d rounds=%d "
               "overlapped=%s",
               bench::kCollector, nosync, sync, nosync > 0 ? sync / nosync : 0.0, g_kernel_ms, median(kernel_ms), g_depth,
               g_rounds, overlapped ? "yes" : "no");
        bench::print_stats(s);
        printf(" check=ok\n");
    } catch (const adsm::error &e) {
        bench::die(e.what());
    }
    return 0;
}
