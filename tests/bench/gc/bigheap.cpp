// A large heap that hardly changes, and a program that keeps allocating
// short-lived objects beside it: what minor collections are for.  A full
// collection traces the whole long-lived structure every time; a minor one
// only what was allocated, and the few pages written, since the last one.
// Each step replaces one entry of the long-lived table with a fresh object,
// so old objects keep pointing to young ones.
//   bigheap [--mb M] [--steps N] [--garbage-kb K]
#include <cstring>

#include "collector.h"

namespace {

struct Node {
    Node *next;
    long value;
    Node *extra;
    long pad;
};

int g_mb = 64, g_steps = 9000, g_garbage_kb = 64;
Node **g_table = nullptr;  // a root in the data segment, for both collectors
long g_entries = 0;

Node *make(long value) {
    auto *n = static_cast<Node *>(bench::gc_alloc(sizeof(Node)));
    n->value = value;
    return n;
}

}  // namespace

int main(int argc, char **argv) {
    for (int k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--mb")) g_mb = bench::arg_int("bigheap", argc, argv, k);
        else if (!strcmp(argv[k], "--steps")) g_steps = bench::arg_int("bigheap", argc, argv, k);
        else if (!strcmp(argv[k], "--garbage-kb")) g_garbage_kb = bench::arg_int("bigheap", argc, argv, k);
        else {
            fprintf(stderr, "usage: %s [--mb M] [--steps N] [--garbage-kb K]\n", argv[0]);
            return 2;
        }
    }
    if (g_mb < 1 || g_mb > 4096 || g_steps < 1 || g_garbage_kb < 1) bench::die("bigheap: mb 1..4096, steps and garbage-kb at least 1");
    bench::gc_init();
    // The long-lived part: a table of short lists, about g_mb MiB of nodes.
    g_entries = (long(g_mb) << 20) / (4 * long(sizeof(Node)));
    g_table = static_cast<Node **>(bench::gc_alloc(size_t(g_entries) * sizeof(Node *)));
    for (long i = 0; i < g_entries; ++i) {
        Node *head = nullptr;
        for (int j = 0; j < 3; ++j) {
            Node *n = make(i * 4 + j);
            n->next = head;
            head = n;
        }
        g_table[i] = head;
    }
    bench::gc_collect();
    bench::GcStats before = bench::gc_stats();
    // Pauses of the steps' collections only, not of building the table.
#ifdef USE_ADSM
    uint64_t max_pause = 0, seen = before.collections;
#else
    bench::detail::max_pause = bench::detail::max_collection = 0;
#endif

    uint64_t t0 = bench::now_ns();
    unsigned long long x = 88172645463325252ull;
    long garbage_nodes = (long(g_garbage_kb) << 10) / long(sizeof(Node));
    for (int s = 0; s < g_steps; ++s) {
        // Short-lived lists, dropped at once.
        Node *tmp = nullptr;
        for (long i = 0; i < garbage_nodes; ++i) {
            Node *n = make(i);
            n->next = tmp;
            tmp = n;
        }
        // One old entry now points to a young object (the last of them).
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        long e = static_cast<long>(x % static_cast<unsigned long long>(g_entries));
        Node *fresh = make(e * 4 + 3);
        fresh->next = g_table[e];
        g_table[e] = fresh;
#ifdef USE_ADSM
        adsmGcStats st;
        adsmGcGetStats(&st);
        if (st.collections != seen && st.last_pause_ns > max_pause) max_pause = st.last_pause_ns;
        seen = st.collections;
#endif
    }
    uint64_t t1 = bench::now_ns();

    // Every entry must still hold its list, the fresh nodes included.
    for (long i = 0; i < g_entries; ++i) {
        long n = 0;
        for (Node *p = g_table[i]; p; p = p->next, ++n) {
            long want = p->value / 4;
            if (want != i) {
                fprintf(stderr, "bigheap: entry %ld holds a node of entry %ld: freed while reachable\n", i, want);
                return 1;
            }
        }
        if (n < 3) {
            fprintf(stderr, "bigheap: entry %ld lost nodes\n", i);
            return 1;
        }
    }
    bench::GcStats s = bench::gc_stats();
    // The steps' collections only (not building the table, nor its collection).
    s.collections -= before.collections;
    s.total_pause_ns -= before.total_pause_ns;
#ifdef USE_ADSM
    s.max_pause_ns = max_pause;
#endif
    printf("RESULT bigheap %s elapsed_ms=%.3f table_mb=%d steps=%d mean_pause_ms=%.3f", bench::kCollector,
           double(t1 - t0) / 1e6, g_mb, g_steps,
           s.collections ? double(s.total_pause_ns) / 1e6 / double(s.collections) : 0.0);
    bench::print_stats(s);
    printf(" check=ok\n");
    return 0;
}
