// Several threads allocate at once: each builds binary trees, checks and
// drops them, while a tree all of them read stays alive.  Collections stop
// every thread, so the pause and the stopping itself are paid by all.
//   mttrees [--threads T] [--depth D] [--trees N] [--shared-depth D]
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "collector.h"

namespace {

struct Node {
    Node *left;
    Node *right;
    long value;
};

int g_threads = 2, g_depth = 14, g_trees = 100, g_shared_depth = 16;
Node *g_shared = nullptr;  // a root in the data segment, for both collectors
std::atomic<int> g_failures{0};

long tree_size(int depth) { return (2l << depth) - 1; }

Node *make_tree(int depth, long value) {
    auto *n = static_cast<Node *>(bench::gc_alloc(sizeof(Node)));
    n->value = value;
    if (depth > 0) {
        n->left = make_tree(depth - 1, 2 * value);
        n->right = make_tree(depth - 1, 2 * value + 1);
    }
    return n;
}

// Node count, or -1 when a node does not hold what it was built with.
long check(const Node *n, long value) {
    if (!n) return 0;
    if (n->value != value) return -1;
    long l = check(n->left, 2 * value), r = check(n->right, 2 * value + 1);
    return l < 0 || r < 0 ? -1 : 1 + l + r;
}

// Says where a tree that failed its check went wrong: the first node that
// does not hold its value, or the first child missing.
bool report(const char *what, const Node *n, long value, int depth) {
    if (!n || n->value != value) {
        fprintf(stderr, "mttrees: %s: node %ld (%d levels above the leaves) at %p holds %ld\n", what, value, depth,
                static_cast<const void *>(n), n ? n->value : 0);
        return true;
    }
    return depth > 0 && (report(what, n->left, 2 * value, depth - 1) || report(what, n->right, 2 * value + 1, depth - 1));
}

void *worker(void *) {
    for (int k = 0; k < g_trees; ++k) {
        Node *t = make_tree(g_depth, 1);
        if (check(t, 1) != tree_size(g_depth)) {
            report("a thread's tree is damaged", t, 1, g_depth);
            g_failures.fetch_add(1);
        }
        // A look into the shared tree: a path down, different each time.
        const Node *s = g_shared;
        for (int b = 0; s && b < g_shared_depth; ++b) s = (k >> (b % 8)) & 1 ? s->right : s->left;
        if (!s) {
            fprintf(stderr, "mttrees: a path down the shared tree ends early\n");
            g_failures.fetch_add(1);
        }
    }
    return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
    for (int k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--threads")) g_threads = bench::arg_int("mttrees", argc, argv, k);
        else if (!strcmp(argv[k], "--depth")) g_depth = bench::arg_int("mttrees", argc, argv, k);
        else if (!strcmp(argv[k], "--trees")) g_trees = bench::arg_int("mttrees", argc, argv, k);
        else if (!strcmp(argv[k], "--shared-depth")) g_shared_depth = bench::arg_int("mttrees", argc, argv, k);
        else {
            fprintf(stderr, "usage: %s [--threads T] [--depth D] [--trees N] [--shared-depth D]\n", argv[0]);
            return 2;
        }
    }
    if (g_threads < 1 || g_threads > 256 || g_depth < 1 || g_depth > 24 || g_trees < 1 || g_shared_depth < 1 ||
        g_shared_depth > 24)
        bench::die("mttrees: threads 1..256, depths 1..24, trees at least 1");
    bench::gc_init();
    uint64_t t0 = bench::now_ns();
    g_shared = make_tree(g_shared_depth, 1);

    std::vector<pthread_t> ts(static_cast<size_t>(g_threads));
    for (pthread_t &t : ts)
        if (pthread_create(&t, nullptr, worker, nullptr) != 0) bench::die("mttrees: pthread_create failed");
    for (pthread_t &t : ts) pthread_join(t, nullptr);

    if (check(g_shared, 1) != tree_size(g_shared_depth) && report("the shared tree is damaged", g_shared, 1, g_shared_depth))
        return 1;
    if (g_failures.load()) return 1;
    uint64_t t1 = bench::now_ns();

    bench::GcStats s = bench::gc_stats();
    printf("RESULT mttrees %s elapsed_ms=%.3f threads=%d", bench::kCollector, double(t1 - t0) / 1e6, g_threads);
    bench::print_stats(s);
    printf(" check=ok\n");
    return 0;
}
