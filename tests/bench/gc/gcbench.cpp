// GCBench (after Ellis, Kovac and Boehm): a long-lived tree and a long-lived
// array of doubles stay alive while many short-lived trees of growing depth
// are built top-down (allocate, then fill in the children) and bottom-up
// (children first).  Each depth allocates about as much as the others.
//   gcbench [--long-lived D] [--max-depth D]
#include <cstring>
#include <string>

#include "collector.h"

namespace {

struct Node {
    Node *left;
    Node *right;
    int i, j;
};

int g_long_lived_depth = 16;
int g_max_depth = 16;
constexpr int kMinDepth = 4;
constexpr int kArraySize = 500000;

long tree_size(int depth) { return (2l << depth) - 1; }

Node *new_node(Node *l, Node *r) {
    auto *n = static_cast<Node *>(bench::gc_alloc(sizeof(Node)));
    n->left = l;
    n->right = r;
    return n;
}

// Top-down: the node exists before its children.
void populate(int depth, Node *n) {
    if (depth <= 0) return;
    n->left = new_node(nullptr, nullptr);
    n->right = new_node(nullptr, nullptr);
    populate(depth - 1, n->left);
    populate(depth - 1, n->right);
}

// Bottom-up: the children exist before the node.
Node *make_tree(int depth) {
    if (depth <= 0) return new_node(nullptr, nullptr);
    Node *l = make_tree(depth - 1);
    return new_node(l, make_tree(depth - 1));
}

long count(const Node *n) { return n ? 1 + count(n->left) + count(n->right) : 0; }

// Builds and drops trees of one depth; their node counts are checked so
// that neither collector can get away with freeing a live node.
__attribute__((noinline)) void time_construction(int depth) {
    long iters = 2 * tree_size(g_long_lived_depth) / tree_size(depth);
    for (long k = 0; k < iters; ++k) {
        Node *t = new_node(nullptr, nullptr);
        populate(depth, t);
        if (k == 0 && count(t) != tree_size(depth)) bench::die("gcbench: a top-down tree lost nodes");
    }
    for (long k = 0; k < iters; ++k) {
        Node *t = make_tree(depth);
        if (k == 0 && count(t) != tree_size(depth)) bench::die("gcbench: a bottom-up tree lost nodes");
    }
}

}  // namespace

int main(int argc, char **argv) {
    for (int k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--long-lived")) g_long_lived_depth = bench::arg_int("gcbench", argc, argv, k);
        else if (!strcmp(argv[k], "--max-depth")) g_max_depth = bench::arg_int("gcbench", argc, argv, k);
        else {
            fprintf(stderr, "usage: %s [--long-lived DEPTH] [--max-depth DEPTH]\n", argv[0]);
            return 2;
        }
    }
    if (g_long_lived_depth < 1 || g_long_lived_depth > 24 || g_max_depth < kMinDepth || g_max_depth > 24)
        bench::die("gcbench: depths must lie in 1..24 and 4..24");
    bench::gc_init();
    uint64_t t0 = bench::now_ns();

    Node *long_lived = new_node(nullptr, nullptr);
    populate(g_long_lived_depth, long_lived);
    auto *array = static_cast<double *>(bench::gc_alloc_atomic(kArraySize * sizeof(double)));
    for (int i = 0; i < kArraySize; ++i) array[i] = 1.0 / i;

    for (int d = kMinDepth; d <= g_max_depth; d += 2) time_construction(d);

    // The long-lived structures must have survived every collection.
    if (count(long_lived) != tree_size(g_long_lived_depth)) bench::die("gcbench: the long-lived tree lost nodes");
    for (int i = 1; i < kArraySize; ++i)
        if (array[i] != 1.0 / i) bench::die("gcbench: the long-lived array changed");
    uint64_t t1 = bench::now_ns();

    bench::GcStats s = bench::gc_stats();
    printf("RESULT gcbench %s elapsed_ms=%.3f", bench::kCollector, double(t1 - t0) / 1e6);
    bench::print_stats(s);
    printf(" check=ok\n");
    return 0;
}
