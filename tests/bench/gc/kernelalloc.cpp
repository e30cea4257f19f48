// Allocations per second inside a kernel, against the same allocations on
// the host: every thread of a grid builds a list of small collected objects
// (the objects stay alive), once in a kernel from a kernel heap
// (adsm_gc_kernel.h) and once in a host loop with the collector's allocator
// (adsmGcAlloc, or bdwgc's GC_malloc for the reference build).
//   kernelalloc [--objects N] [--size BYTES] [--threads T] [--rounds R]
// The kernel's time runs from the launch to the end of the sync; adopt_ms
// is what the first question after the sync costs (the collector adopting
// the heap's objects).  The host loop runs on one thread; the kernel on
// every worker of the device (ADSM_SIM_WORKERS, one per CPU by default).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collector.h"

#ifdef USE_ADSM
#include <adsm.hpp>
#include <adsm_gc_kernel.h>
#endif

namespace {

struct Node {
    Node *next;
    long value;
};

long g_objects = 1 << 22, g_size = 32, g_threads = 4096;
int g_rounds = 3;
constexpr unsigned kBlock = 128;
Node **g_heads = nullptr;  // a root while a round's lists are checked

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Every list whole: `per` nodes, values per-1 down to 0.
bool lists_ok(Node **heads, long threads, long per) {
    for (long i = 0; i < threads; ++i) {
        long want = per - 1;
        for (const Node *n = heads[i]; n; n = n->next, --want)
            if (n->value != want) return false;
        if (want != -1) return false;
    }
    return true;
}

// The host's loop: the same lists, one thread after another.
__attribute__((noinline)) double host_round(long per) {
    g_heads = static_cast<Node **>(bench::gc_alloc(size_t(g_threads) * sizeof(Node *)));
    uint64_t t0 = bench::now_ns();
    for (long i = 0; i < g_threads; ++i) {
        Node *head = nullptr;
        for (long k = 0; k < per; ++k) {
            auto *n = static_cast<Node *>(bench::gc_alloc(size_t(g_size)));
            n->next = head;
            n->value = k;
            head = n;
        }
        g_heads[i] = head;
    }
    uint64_t t1 = bench::now_ns();
    if (!lists_ok(g_heads, g_threads, per)) bench::die("kernelalloc: a host-built list is damaged");
    g_heads = nullptr;
    return double(t1 - t0) / 1e6;
}

#ifdef USE_ADSM
void alloc_lists(const adsm::thread_index &t, adsmGcKernelHeap *h, Node **heads, long threads, long per, long size) {
    long i = static_cast<long>(adsm::global_x(t));
    if (i >= threads) return;
    Node *head = nullptr;
    for (long k = 0; k < per; ++k) {
        auto *n = static_cast<Node *>(adsmGcKernelAlloc(h, &t, static_cast<size_t>(size)));
        if (!n) break;  // counted by the heap: adsmGcKernelHeapCheck fails below
        n->next = head;
        n->value = k;
        head = n;
    }
    heads[i] = head;
}

struct KernelRound {
    double kernel_ms, adopt_ms;
    adsmGcKernelHeapInfo info;
};

__attribute__((noinline)) KernelRound kernel_round(const adsm::kernel<alloc_lists> &k, long per) {
    KernelRound r{};
    g_heads = static_cast<Node **>(bench::gc_alloc(size_t(g_threads) * sizeof(Node *)));
    size_t object = (size_t(g_size) + 15) & ~size_t(15);
    long blocks = (g_threads + kBlock - 1) / kBlock;
    // Room for every object, and for each block's last buffer (64 KiB at most) left part-used.
    adsm::gc_kernel_heap heap(size_t(g_objects) * object + size_t(blocks) * (64 << 10) + (1 << 20));
    uint64_t t0 = bench::now_ns();
    k(adsm::dim3(static_cast<unsigned>(blocks)), kBlock, heap.get(), g_heads, g_threads, per, g_size);
    adsm::sync();
    uint64_t t1 = bench::now_ns();
    r.info = heap.info();
    uint64_t t2 = bench::now_ns();
    heap.check();
    if (r.info.objects != uint64_t(g_threads * per)) bench::die("kernelalloc: the heap holds another number of objects");
    if (!lists_ok(g_heads, g_threads, per)) bench::die("kernelalloc: a kernel-built list is damaged");
    g_heads = nullptr;
    r.kernel_ms = double(t1 - t0) / 1e6;
    r.adopt_ms = double(t2 - t1) / 1e6;
    return r;
}
#endif

}  // namespace

int main(int argc, char **argv) {
    for (int k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "--objects")) g_objects = bench::arg_int("kernelalloc", argc, argv, k);
        else if (!strcmp(argv[k], "--size")) g_size = bench::arg_int("kernelalloc", argc, argv, k);
        else if (!strcmp(argv[k], "--threads")) g_threads = bench::arg_int("kernelalloc", argc, argv, k);
        else if (!strcmp(argv[k], "--rounds")) g_rounds = bench::arg_int("kernelalloc", argc, argv, k);
        else {
            fprintf(stderr, "usage: %s [--objects N] [--size BYTES] [--threads T] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    if (g_size < long(sizeof(Node)) || g_size > 4096 || g_threads < 1 || g_objects < g_threads || g_rounds < 1)
        bench::die("kernelalloc: size 16..4096, threads at least 1, objects at least threads, rounds at least 1");
    const long per = g_objects / g_threads;
    g_objects = per * g_threads;
    bench::gc_init();
    try {
        std::vector<double> host_ms;
        bench::GcStats h0 = bench::gc_stats();
        for (int r = 0; r < g_rounds; ++r) host_ms.push_back(host_round(per));
        bench::GcStats h1 = bench::gc_stats();
        // The host loop collects as its live lists grow; a kernel never does.
        double host_gcs = double(h1.collections - h0.collections) / g_rounds;
        double host_pause = double(h1.total_pause_ns - h0.total_pause_ns) / 1e6 / g_rounds;
        double host = median(host_ms);
        double host_rate = double(g_objects) / (host / 1e3);
#ifdef USE_ADSM
        adsm::kernel<alloc_lists> k("kernelalloc.alloc_lists");
        std::vector<double> kernel_ms, adopt_ms;
        KernelRound last{};
        for (int r = 0; r < g_rounds; ++r) {
            last = kernel_round(k, per);
            kernel_ms.push_back(last.kernel_ms);
            adopt_ms.push_back(last.adopt_ms);
        }
        double kernel = median(kernel_ms), kernel_rate = double(g_objects) / (kernel / 1e3);
        adsmDeviceInfo dev;
        adsm::check(adsmGetDeviceInfo(&dev));
        bench::GcStats s = bench::gc_stats();
        printf("RESULT kernelalloc %s device=%s protocol=%s objects=%ld size=%ld threads=%ld kernel_ms=%.3f "
               "kernel_allocs_per_s=%.0f adopt_ms=%.3f host_ms=%.3f host_allocs_per_s=%.0f host_gcs=%.1f "
               "host_pause_ms=%.3f kernel_vs_host=%.2f overflows=%llu tlabs=%llu",
               bench::kCollector, dev.name, dev.protocol, g_objects, g_size, g_threads, kernel, kernel_rate,
               median(adopt_ms), host, host_rate, host_gcs, host_pause, kernel_rate / host_rate,
               static_cast<unsigned long long>(last.info.overflows), static_cast<unsigned long long>(last.info.tlabs));
#else
        bench::GcStats s = bench::gc_stats();
        printf("RESULT kernelalloc %s objects=%ld size=%ld threads=%ld host_ms=%.3f host_allocs_per_s=%.0f host_gcs=%.1f "
               "host_pause_ms=%.3f",
               bench::kCollector, g_objects, g_size, g_threads, host, host_rate, host_gcs, host_pause);
#endif
        bench::print_stats(s);
        printf(" check=ok\n");
#ifdef USE_ADSM
    } catch (const adsm::error &e) {
        bench::die(e.what());
#endif
    } catch (...) {
        bench::die("kernelalloc: an unexpected exception");
    }
    return 0;
}
