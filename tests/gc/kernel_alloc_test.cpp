// Allocation inside kernels (adsm_gc_kernel.h), on the device and protocol
// the environment selects: kernels build lists and trees of collected
// objects; after the sync those are ordinary objects, kept while anything
// reaches them (the host, other kernel objects, memory kernels wrote) and
// collected when nothing does.
#include <adsm.h>
#include <adsm.hpp>
#include <adsm_gc_kernel.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gpu/doubles/fake_module.hpp"

namespace {

constexpr uint64_t kCheck = 0x9e3779b97f4a7c15ull;

struct KNode {
    uint64_t id;
    uint64_t check;  // id * kCheck: a reused or clobbered node shows
    KNode *next;
    KNode *other;
};

void collect() { ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail(); }

__attribute__((noinline)) void clobber_stack() {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

// Garbage that reuses whatever the collector freed.
__attribute__((noinline)) void churn(size_t bytes) {
    for (size_t done = 0; done < bytes; done += 64) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
        ASSERT_NE(p, nullptr);
        for (int i = 0; i < 8; ++i) p[i] = 0xdeadbeefdeadbeefull;
    }
}

KNode *kernel_node(adsmGcKernelHeap *h, const adsm::thread_index &t, uint64_t id) {
    auto *x = static_cast<KNode *>(adsmGcKernelAlloc(h, &t, sizeof(KNode)));
    if (!x) return nullptr;
    x->id = id;
    x->check = id * kCheck;
    return x;
}

// Thread i < n links `len` nodes, ids i*len .. i*len+len-1 with the last
// first, and leaves the list in heads[i].
void build_lists(const adsm::thread_index &t, adsmGcKernelHeap *h, KNode **heads, unsigned n, unsigned len) {
    unsigned i = static_cast<unsigned>(adsm::global_x(t));
    if (i >= n) return;
    KNode *head = nullptr;
    for (unsigned k = 0; k < len; ++k) {
        KNode *x = kernel_node(h, t, uint64_t(i) * len + k);
        if (!x) break;
        x->next = head;
        head = x;
    }
    heads[i] = head;
}

// The length of list i if every node is intact and in order, else -1.
__attribute__((noinline)) long list_length(const KNode *n, uint64_t i, unsigned len) {
    long count = 0;
    for (uint64_t want = uint64_t(i) * len + len - 1; n; n = n->next, --want, ++count)
        if (n->id != want || n->check != want * kCheck) return -1;
    return count;
}

KNode **g_heads = nullptr;  // roots in the data segment
void **g_hold = nullptr;

// Every node of every list, checked, for the sorted walk below.
__attribute__((noinline)) std::vector<uintptr_t> all_nodes(KNode **heads, unsigned n) {
    std::vector<uintptr_t> v;
    for (unsigned i = 0; i < n; ++i)
        for (KNode *x = heads[i]; x; x = x->next) v.push_back(reinterpret_cast<uintptr_t>(x));
    return v;
}

// Hidden from the conservative scan (the vector's buffer is malloc'd anyway).
std::vector<void *> *g_links = nullptr;

__attribute__((noinline)) void watch(void *obj) {
    auto **link = static_cast<void **>(malloc(sizeof(void *)));
    *link = obj;
    ASSERT_EQ(adsmGcRegisterWeak(link, obj), adsmSuccess) << adsmGetLastErrorDetail();
    g_links->push_back(link);
}

// Links in g_links[from, to) that the collector cleared.
int cleared(size_t from, size_t to) {
    int n = 0;
    for (size_t i = from; i < to; ++i) n += *static_cast<void **>((*g_links)[i]) == nullptr;
    return n;
}

void forget_links() {
    for (void *l : *g_links) {
        if (*static_cast<void **>(l)) adsmGcUnregisterWeak(static_cast<void **>(l));
        free(l);
    }
    g_links->clear();
}

}  // namespace

TEST(GcKernelAllocTest, ListsBuiltInKernelsBecomeOrdinaryObjects) {
    auto k = adsm_test::device_kernel<build_lists>("gc.kalloc.build_lists");
    const unsigned n = 512, len = 20;
    g_heads = static_cast<KNode **>(adsmGcAlloc(n * sizeof(KNode *)));
    ASSERT_NE(g_heads, nullptr);
    {
        adsm::gc_kernel_heap heap(1 << 20);
        EXPECT_EQ(adsmGcKernelHeapCheck(heap.get()), adsmErrorBusy);  // nothing ran yet
        EXPECT_EQ(heap.info().closed, 0);
        k(n / 64, 64, heap.get(), g_heads, n, len);
        adsm::sync();
        heap.check();
        adsmGcKernelHeapInfo info = heap.info();
        EXPECT_EQ(info.closed, 1);
        EXPECT_EQ(info.objects, n * len);
        EXPECT_EQ(info.bytes, uint64_t(n) * len * sizeof(KNode));
        EXPECT_EQ(info.bytes + info.unused_bytes, info.budget);
        EXPECT_EQ(info.failed, 0u);
        EXPECT_EQ(info.late, 0u);
        EXPECT_GE(info.tlabs, 1u);
        EXPECT_EQ(adsmGcBase(heap.get()), static_cast<void *>(heap.get()));  // the descriptor is an object now
    }
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(list_length(g_heads[i], i, len), long(len)) << "list " << i;
    std::vector<uintptr_t> nodes = all_nodes(g_heads, n);
    std::sort(nodes.begin(), nodes.end());
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (i) {
            ASSERT_GE(nodes[i] - nodes[i - 1], sizeof(KNode)) << "objects overlap";
        }
        auto *p = reinterpret_cast<char *>(nodes[i]);
        ASSERT_EQ(adsmGcBase(p + sizeof(KNode) - 1), p);
        ASSERT_EQ(adsmGcSize(p), sizeof(KNode));
    }

    // Collections keep them while the host reaches them...
    churn(4 << 20);
    clobber_stack();
    collect();
    collect();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(list_length(g_heads[i], i, len), long(len)) << "list " << i;

    // ...and free them once it does not.
    std::vector<void *> links;
    g_links = &links;
    for (unsigned i = 0; i < n; ++i) {
        for (KNode *x = g_heads[i]; x; x = x->next) watch(x);
    }
    size_t kept_links = 0;
    for (unsigned i = 0; i < n; ++i) kept_links += i % 2 ? 0 : len;
    // Drop the odd lists: their links come after the even ones' in the order below.
    std::vector<void *> reordered;
    for (size_t pass = 0; pass < 2; ++pass)
        for (unsigned i = 0, at = 0; i < n; ++i, at += len)
            if ((i % 2) == pass) reordered.insert(reordered.end(), links.begin() + at, links.begin() + at + len);
    links.swap(reordered);
    for (unsigned i = 1; i < n; i += 2) g_heads[i] = nullptr;
    nodes.clear();
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(cleared(0, kept_links), 0) << "reachable kernel objects were freed";
    EXPECT_GE(cleared(kept_links, links.size()), int(links.size() - kept_links) * 9 / 10)
        << "unreachable kernel objects were kept";
    for (unsigned i = 0; i < n; i += 2) ASSERT_EQ(list_length(g_heads[i], i, len), long(len)) << "list " << i;
    forget_links();
    g_heads = nullptr;
}

namespace {
struct Holder {
    KNode *slot[16];
};

// Thread i: a kernel node that points to the host's inputs[i] and to a
// second kernel node, stored into the host's holder.
void link_to_host(const adsm::thread_index &t, adsmGcKernelHeap *h, Holder *holder, KNode **inputs) {
    unsigned i = t.threadIdx.x;
    KNode *a = kernel_node(h, t, 1000 + i), *b = kernel_node(h, t, 2000 + i);
    if (!a || !b) return;
    a->next = b;
    a->other = inputs[i];
    holder->slot[i] = a;
}

__attribute__((noinline)) KNode **make_inputs() {
    auto **in = static_cast<KNode **>(adsmGcAlloc(16 * sizeof(KNode *)));
    for (unsigned i = 0; i < 16; ++i) {
        in[i] = static_cast<KNode *>(adsmGcAlloc(sizeof(KNode)));
        in[i]->id = 3000 + i;
        in[i]->check = in[i]->id * kCheck;
    }
    return in;
}
}  // namespace

TEST(GcKernelAllocTest, ObjectsReachableOnlyThroughWhatKernelsWroteSurvive) {
    auto k = adsm_test::device_kernel<link_to_host>("gc.kalloc.link_to_host");
    auto *holder = static_cast<Holder *>(adsmGcAlloc(sizeof(Holder)));
    ASSERT_NE(holder, nullptr);
    g_hold = reinterpret_cast<void **>(holder);
    {
        KNode **inputs = make_inputs();
        adsm::gc_kernel_heap heap(64 << 10);
        k(1, 16, heap.get(), holder, inputs);
        adsm::sync();
        heap.check();
        // The host objects are now reachable only from kernel objects, and
        // those only from the pointers the kernel wrote into the holder.
        for (unsigned i = 0; i < 16; ++i) inputs[i] = nullptr;
    }
    clobber_stack();
    for (int round = 0; round < 3; ++round) {
        churn(2 << 20);
        collect();
    }
    for (unsigned i = 0; i < 16; ++i) {
        KNode *a = holder->slot[i];
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(a->id, 1000u + i);
        EXPECT_EQ(a->check, a->id * kCheck);
        ASSERT_NE(a->next, nullptr);
        EXPECT_EQ(a->next->check, (2000u + i) * kCheck) << "a kernel object reachable from a kernel object was freed";
        ASSERT_NE(a->other, nullptr);
        EXPECT_EQ(a->other->check, (3000u + i) * kCheck) << "a host object reachable from a kernel object was freed";
    }
    g_hold = nullptr;
}

namespace {
// The file whose making lets the kernels below go on (host_pid: the test's;
// in TMPDIR, as the device process sees it too).
std::string gate_path(int host_pid) {
    const char *dir = getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/adsm-gc-gate-" + std::to_string(host_pid);
}

// Thread 0 of each block: `len` nodes; then it waits (20 s at most) until
// the host makes the gate, and says in opened[block] whether it did (1) or
// the wait ran out (2); then `len` more.
void gated_lists(const adsm::thread_index &t, adsmGcKernelHeap *h, KNode **heads, unsigned len, int host_pid,
                 int *opened) {
    if (t.threadIdx.x != 0) return;
    unsigned i = t.blockIdx.x;
    KNode *head = nullptr;
    const std::string gate = gate_path(host_pid);
    for (unsigned k = 0; k < 2 * len; ++k) {
        if (k == len) {
            for (int ms = 0; ms < 20000 && access(gate.c_str(), F_OK) != 0; ++ms)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            opened[i] = access(gate.c_str(), F_OK) == 0 ? 1 : 2;
        }
        KNode *x = kernel_node(h, t, uint64_t(i) * 2 * len + k);
        if (!x) return;
        x->next = head;
        head = x;
    }
    heads[i] = head;
}
}  // namespace

// Collections run while the kernels wait, half-way through their
// allocations, for the host to let them go on after those collections.
TEST(GcKernelAllocTest, CollectionsWhileTheKernelAllocatesKeepEverything) {
    auto k = adsm_test::device_kernel<gated_lists>("gc.kalloc.gated_lists");
    const unsigned blocks = 2, len = 500;
    g_heads = static_cast<KNode **>(adsmGcAlloc(blocks * sizeof(KNode *)));
    auto *opened = static_cast<int *>(adsmGcAllocAtomic(blocks * sizeof(int)));
    ASSERT_NE(opened, nullptr);
    const std::string gate = gate_path(getpid());
    unlink(gate.c_str());
    {
        adsm::gc_kernel_heap heap(1 << 20);
        k(blocks, 1, heap.get(), g_heads, len, static_cast<int>(getpid()), opened);
        for (int i = 0; i < 3; ++i) {
            churn(1 << 20);
            collect();
            adsmGcStats s;
            adsmGcGetStats(&s);
            EXPECT_GT(s.kept_for_kernels, 0u);
        }
        int fd = open(gate.c_str(), O_CREAT | O_WRONLY, 0600);
        ASSERT_GE(fd, 0) << strerror(errno);
        close(fd);
        adsm::sync();
        unlink(gate.c_str());
        for (unsigned i = 0; i < blocks; ++i) EXPECT_EQ(opened[i], 1) << "the collections waited for the kernel";
        heap.check();
        EXPECT_EQ(heap.info().objects, blocks * 2 * len);
    }
    for (unsigned i = 0; i < blocks; ++i) ASSERT_EQ(list_length(g_heads[i], i, 2 * len), long(2 * len));
    clobber_stack();
    collect();
    for (unsigned i = 0; i < blocks; ++i) ASSERT_EQ(list_length(g_heads[i], i, 2 * len), long(2 * len));
    g_heads = nullptr;
}

namespace {
size_t object_size(uint64_t tid, unsigned k) { return 16 + ((tid * 7 + k * 13) % 12) * 16; }

// Each thread `per` objects of 16 to 192 bytes, every word a pattern of its own.
void fill_objects(const adsm::thread_index &t, adsmGcKernelHeap *h, uint64_t **objs, unsigned per) {
    uint64_t tid = adsm::global_x(t);
    for (unsigned k = 0; k < per; ++k) {
        size_t size = object_size(tid, k);
        auto *p = static_cast<uint64_t *>(adsmGcKernelAlloc(h, &t, size));
        objs[tid * per + k] = p;
        if (!p) continue;
        for (size_t w = 0; w < size / 8; ++w) p[w] = tid << 32 | uint64_t(k) << 16 | w;
    }
}
}  // namespace

TEST(GcKernelAllocTest, OverflowingSharedBuffersLoseAndTearNothing) {
    // Every block on two buffers of 512 bytes: with several workers they
    // overflow at once, and the last good top of each must hold.
    auto k = adsm_test::device_kernel<fill_objects>("gc.kalloc.fill_objects");
    const unsigned blocks = 16, threads = 256, per = 4, total = blocks * threads * per;
    auto **objs = static_cast<uint64_t **>(adsmGcAlloc(total * sizeof(uint64_t *)));
    ASSERT_NE(objs, nullptr);
    g_hold = reinterpret_cast<void **>(objs);
    uint64_t want_bytes = 0;
    for (uint64_t tid = 0; tid < blocks * threads; ++tid)
        for (unsigned j = 0; j < per; ++j) want_bytes += object_size(tid, j);
    {
        adsm::gc_kernel_heap heap(8 << 20, 512, 2);
        k(blocks, threads, heap.get(), objs, per);
        adsm::sync();
        heap.check();
        adsmGcKernelHeapInfo info = heap.info();
        EXPECT_EQ(info.objects, total);
        EXPECT_EQ(info.bytes, want_bytes);
        EXPECT_EQ(info.bytes + info.unused_bytes, info.budget);
        EXPECT_GT(info.overflows, want_bytes / 512 / 2);
        EXPECT_GT(info.tlabs, info.overflows);
    }
    std::vector<std::pair<uintptr_t, size_t>> spans;
    for (uint64_t tid = 0; tid < blocks * threads; ++tid)
        for (unsigned j = 0; j < per; ++j) {
            uint64_t *p = objs[tid * per + j];
            size_t size = object_size(tid, j);
            ASSERT_NE(p, nullptr);
            ASSERT_EQ(adsmGcSize(p), size);
            ASSERT_EQ(adsmGcBase(reinterpret_cast<char *>(p) + size - 1), p);
            for (size_t w = 0; w < size / 8; ++w)
                ASSERT_EQ(p[w], tid << 32 | uint64_t(j) << 16 | w) << "a torn object: thread " << tid << " word " << w;
            spans.emplace_back(reinterpret_cast<uintptr_t>(p), size);
        }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
        ASSERT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "two allocations share memory";
    g_hold = nullptr;
}

namespace {
// Each thread `per` nodes into a list, counting the NULLs; thread 0 also
// asks for more than the whole budget.
void greedy_lists(const adsm::thread_index &t, adsmGcKernelHeap *h, KNode **heads, unsigned *nulls, unsigned per,
                  size_t huge) {
    unsigned i = static_cast<unsigned>(adsm::global_x(t));
    KNode *head = nullptr;
    unsigned missed = 0;
    for (unsigned k = 0; k < per; ++k) {
        KNode *x = kernel_node(h, t, uint64_t(i) * per + k);
        if (!x) {
            ++missed;
            continue;
        }
        x->next = head;
        head = x;
    }
    if (i == 0 && adsmGcKernelAlloc(h, &t, huge)) missed += 1000000;  // must not happen
    heads[i] = head;
    nulls[i] = missed;
}

long count_nodes(const KNode *n) {
    long c = 0;
    for (; n; n = n->next, ++c)
        if (n->check != n->id * kCheck) return -1;
    return c;
}
}  // namespace

TEST(GcKernelAllocTest, ExhaustedHeapReturnsNullAndSaysSo) {
    auto k = adsm_test::device_kernel<greedy_lists>("gc.kalloc.greedy_lists");
    const unsigned blocks = 4, threads = 64, per = 16, n = blocks * threads;
    const size_t budget = 64 << 10, huge = size_t(1) << 30;
    g_heads = static_cast<KNode **>(adsmGcAlloc(n * sizeof(KNode *)));
    adsm::shared_array<unsigned> nulls(n);
    adsm::gc_kernel_heap heap(budget);
    k(blocks, threads, heap.get(), g_heads, nulls.data(), per, huge);
    adsm::sync();
    uint64_t missed = 0;
    long found = 0;
    for (unsigned i = 0; i < n; ++i) {
        missed += nulls[i];
        long c = count_nodes(g_heads[i]);
        ASSERT_GE(c, 0) << "list " << i << " is damaged";
        ASSERT_EQ(uint64_t(c) + nulls[i], per) << "list " << i;
        found += c;
    }
    ASSERT_LT(missed, uint64_t(n) * per) << "nothing was allocated";
    EXPECT_GT(missed, 0u) << "the budget was not exhausted";
    EXPECT_EQ(adsmGcKernelHeapCheck(heap.get()), adsmErrorMemoryAllocation);
    std::string detail = adsmGetLastErrorDetail();
    EXPECT_NE(detail.find(std::to_string(missed + 1) + " allocations in its kernels returned NULL"), std::string::npos)
        << detail;
    EXPECT_NE(detail.find("larger than the whole budget"), std::string::npos) << detail;
    adsmGcKernelHeapInfo info = heap.info();
    EXPECT_EQ(info.failed, missed + 1);
    EXPECT_EQ(info.too_large, 1u);
    EXPECT_EQ(info.failed_bytes, missed * sizeof(KNode) + huge);
    EXPECT_EQ(info.objects, uint64_t(found));
    EXPECT_EQ(info.bytes + info.unused_bytes, budget);
    EXPECT_GT(info.bytes, budget / 2) << "NULL came back long before the heap was full";
    try {
        heap.check();
        ADD_FAILURE() << "gc_kernel_heap::check did not throw";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorMemoryAllocation);
    }
    g_heads = nullptr;
}

namespace {
void one_node(const adsm::thread_index &t, adsmGcKernelHeap *h, KNode **out) { *out = kernel_node(h, t, 7); }

// The heap reached through memory instead of an argument.
struct Indirect {
    adsmGcKernelHeap *heap;
    KNode *got;
};
void indirect_node(const adsm::thread_index &t, Indirect *in) { in->got = kernel_node(in->heap, t, 8); }
}  // namespace

TEST(GcKernelAllocTest, BadInputGetsAClearError) {
    adsmGcKernelHeap *h = nullptr;
    EXPECT_EQ(adsmGcKernelHeapCreate(0, nullptr, &h), adsmErrorInvalidValue);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(adsmGcKernelHeapCreate(SIZE_MAX, nullptr, &h), adsmErrorSizeOverflow);
    EXPECT_EQ(adsmGcKernelHeapCreate(size_t(1) << 45, nullptr, &h), adsmErrorMemoryAllocation);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("more than the shared window holds"), std::string::npos)
        << adsmGetLastErrorDetail();
    adsmGcKernelHeapOptions big{8192, 0}, many{0, 1u << 20};
    EXPECT_EQ(adsmGcKernelHeapCreate(4096, &big, &h), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("larger than the budget"), std::string::npos);
    EXPECT_EQ(adsmGcKernelHeapCreate(4096, &many, &h), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGcKernelHeapCreate(4096, nullptr, nullptr), adsmErrorInvalidValue);
    adsmGcKernelHeapInfo info;
    int local = 0;
    EXPECT_EQ(adsmGcKernelHeapGetInfo(reinterpret_cast<adsmGcKernelHeap *>(&local), &info), adsmErrorInvalidPointer);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("is not a kernel heap"), std::string::npos);
    EXPECT_EQ(adsmGcKernelHeapCheck(nullptr), adsmErrorInvalidPointer);
    void *obj = adsmGcAlloc(64);
    EXPECT_EQ(adsmGcKernelHeapCheck(static_cast<adsmGcKernelHeap *>(obj)), adsmErrorInvalidPointer);

    auto once = adsm_test::device_kernel<one_node>("gc.kalloc.one_node");
    auto indirect = adsm_test::device_kernel<indirect_node>("gc.kalloc.indirect_node");
    adsm::gc_kernel_heap heap(4096);
    EXPECT_EQ(adsmGcKernelHeapGetInfo(heap.get(), nullptr), adsmErrorInvalidValue);
    auto **out = static_cast<KNode **>(adsmGcAlloc(sizeof(KNode *)));
    once(1, 1, heap.get(), out);
    adsm::sync();
    ASSERT_NE(*out, nullptr);
    EXPECT_EQ((*out)->check, 7 * kCheck);
    EXPECT_EQ(heap.info().unused_bytes, 4096u - sizeof(KNode));

    // After its sync the heap serves no kernel: passing it is refused...
    try {
        once(1, 1, heap.get(), out);
        ADD_FAILURE() << "a launch with a closed kernel heap went ahead";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorInvalidValue);
        EXPECT_NE(std::string(e.what()).find("was closed by its context's sync"), std::string::npos) << e.what();
    }
    // ...and a kernel that finds it in memory gets NULL, which is counted.
    auto *in = static_cast<Indirect *>(adsmGcAlloc(sizeof(Indirect)));
    in->heap = heap.get();
    in->got = *out;
    indirect(1, 1, in);
    adsm::sync();
    EXPECT_EQ(in->got, nullptr);
    EXPECT_EQ(heap.info().late, 1u);
    EXPECT_EQ(adsmGcKernelHeapCheck(heap.get()), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("after it closed"), std::string::npos);

    // A kernel's object, adopted, can be freed explicitly, once.
    KNode *node = *out;
    *out = nullptr;
    ASSERT_EQ(adsmGcFree(node), adsmSuccess) << adsmGetLastErrorDetail();
    EXPECT_EQ(adsmGcBase(node), nullptr);
    EXPECT_EQ(adsmGcFree(node), adsmErrorInvalidPointer);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("freed already"), std::string::npos);

    // A heap belongs to the context that made it.  (Its thread uses it and
    // syncs once this is checked: a heap left open would make every later
    // launch wait for collections, the hooks of the tests that follow among
    // them.)
    adsmGcKernelHeap *foreign = nullptr;
    std::promise<void> made, checked;
    std::thread other([&] {
        EXPECT_EQ(adsmGcKernelHeapCreate(4096, nullptr, &foreign), adsmSuccess);
        made.set_value();
        checked.get_future().wait();
        // (Its own slot: a collected object of another context is refused.)
        auto **mine = static_cast<KNode **>(adsmGcAlloc(sizeof(KNode *)));
        if (foreign && mine) once(1, 1, foreign, mine);
        adsm::sync();
    });
    made.get_future().wait();
    if (foreign) {
        adsmKernel_t raw = once.handle();
        void *args[] = {&foreign, &out};
        EXPECT_EQ(adsmCall(raw, adsmDim3{1, 1, 1}, adsmDim3{1, 1, 1}, args), adsmErrorInvalidValue);
        EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("belongs to another context"), std::string::npos)
            << adsmGetLastErrorDetail();
    }
    checked.set_value();
    other.join();
    ASSERT_NE(foreign, nullptr);
    EXPECT_EQ(adsmGcKernelHeapGetInfo(foreign, &info), adsmSuccess);
    EXPECT_EQ(info.closed, 1) << "its context synced";
    EXPECT_EQ(info.objects, 1u);
}

namespace {
KNode **g_left = nullptr;  // a root for what the ended thread's kernel made
}  // namespace

// A thread that ends without syncing leaves its kernel heap to nobody: its
// end syncs its context instead, and the heap closes as at a sync (open for
// good, it was kept whole, and every launch of the context would wait for
// collections).  Its object is then an ordinary one.
TEST(GcKernelAllocTest, AHeapWhoseThreadEndedWithoutSyncingCloses) {
    auto once = adsm_test::device_kernel<one_node>("gc.kalloc.one_node");
    adsmGcKernelHeap *h = nullptr;
    std::thread([&] {
        // (In the thread's context, whose call releases it to the kernel.)
        g_left = static_cast<KNode **>(adsmGcAlloc(sizeof(KNode *)));
        ASSERT_NE(g_left, nullptr);
        ASSERT_EQ(adsmGcKernelHeapCreate(4096, nullptr, &h), adsmSuccess) << adsmGetLastErrorDetail();
        once(1, 1, h, g_left);
    }).join();
    ASSERT_NE(h, nullptr);
    ASSERT_NE(g_left, nullptr);
    adsmGcKernelHeapInfo info;
    ASSERT_EQ(adsmGcKernelHeapGetInfo(h, &info), adsmSuccess) << adsmGetLastErrorDetail();
    EXPECT_EQ(info.closed, 1) << "the heap of a thread that ended without adsmSync stayed open";
    EXPECT_EQ(info.objects, 1u);
    clobber_stack();
    collect();
    churn(1 << 20);
    ASSERT_NE(*g_left, nullptr);
    EXPECT_EQ((*g_left)->check, 7 * kCheck);
    g_left = nullptr;
}

namespace {
adsmGcKernelHeap *g_closed = nullptr;  // keeps a closed heap's descriptor alive

// Leaves `value` in the stack below the caller, where a launch's argument
// blob will lie.
__attribute__((noinline)) void paint_stack(uintptr_t value) {
    volatile uintptr_t paint[8192];
    for (size_t i = 0; i < sizeof paint / sizeof paint[0]; ++i) paint[i] = value;
}
}  // namespace

// The bytes between a launch's arguments are not arguments: whatever an
// earlier call left in the stack there (here, a closed heap's address) must
// not get the launch refused.
TEST(GcKernelAllocTest, StaleBytesBetweenArgumentsAreNotAClosedHeap) {
    auto once = adsm_test::device_kernel<one_node>("gc.kalloc.one_node");
    auto **out = static_cast<KNode **>(adsmGcAlloc(sizeof(KNode *)));
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(adsmGcKernelHeapCreate(4096, nullptr, &g_closed), adsmSuccess) << adsmGetLastErrorDetail();
    once(1, 1, g_closed, out);
    adsm::sync();
    ASSERT_EQ(adsmGcKernelHeapCheck(g_closed), adsmSuccess) << adsmGetLastErrorDetail();

    adsmGcKernelHeap *fresh = nullptr;
    ASSERT_EQ(adsmGcKernelHeapCreate(4096, nullptr, &fresh), adsmSuccess) << adsmGetLastErrorDetail();
    *out = nullptr;
    void *args[] = {&fresh, &out};
    paint_stack(reinterpret_cast<uintptr_t>(g_closed));
    ASSERT_EQ(adsmCall(once.handle(), adsmDim3{1, 1, 1}, adsmDim3{1, 1, 1}, args), adsmSuccess)
        << adsmGetLastErrorDetail();
    adsm::sync();
    ASSERT_EQ(adsmGcKernelHeapCheck(fresh), adsmSuccess) << adsmGetLastErrorDetail();
    ASSERT_NE(*out, nullptr);
    EXPECT_EQ((*out)->check, 7 * kCheck);
    g_closed = nullptr;
}

namespace {
KNode *tree(adsmGcKernelHeap *h, const adsm::thread_index &t, int depth, uint64_t *next) {
    KNode *n = kernel_node(h, t, (*next)++);
    if (n && depth > 0) {
        n->next = tree(h, t, depth - 1, next);
        n->other = tree(h, t, depth - 1, next);
    }
    return n;
}

void build_trees(const adsm::thread_index &t, adsmGcKernelHeap *h, KNode **roots, int depth) {
    uint64_t i = adsm::global_x(t), next = i << 32;
    roots[i] = tree(h, t, depth, &next);
}

long tree_size(const KNode *n) {
    if (!n) return 0;
    if (n->check != n->id * kCheck) return -1;
    long l = tree_size(n->next), r = tree_size(n->other);
    return l < 0 || r < 0 ? -1 : 1 + l + r;
}

__attribute__((noinline)) void grow_trees(KNode **roots, unsigned n, int depth, size_t budget) {
    auto k = adsm_test::device_kernel<build_trees>("gc.kalloc.build_trees");
    adsm::gc_kernel_heap heap(budget);
    k(n / 8, 8, heap.get(), roots, depth);
    adsm::sync();
    heap.check();
}
}  // namespace

TEST(GcKernelAllocTest, HeapsLargerThanAChunkGoBackWhenTheirObjectsDie) {
    const unsigned n = 32;
    const int depth = 9;  // 1023 nodes a tree
    const size_t budget = 4 << 20;
    g_heads = static_cast<KNode **>(adsmGcAlloc(n * sizeof(KNode *)));
    grow_trees(g_heads, n, depth, budget);
    clobber_stack();
    churn(1 << 20);
    collect();
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(tree_size(g_heads[i]), (1 << (depth + 1)) - 1) << "tree " << i;
    adsmGcStats before;
    adsmGcGetStats(&before);
    for (unsigned i = 0; i < n; ++i) g_heads[i] = nullptr;
    clobber_stack();
    collect();
    collect();
    adsmGcStats after;
    adsmGcGetStats(&after);
    // (What the collections did, for a failure to be read: whether the
    // trees died, and how much stayed marked.)
    EXPECT_LE(after.heap_bytes + budget, before.heap_bytes)
        << "the heap's chunk was not given back: " << after.objects_freed - before.objects_freed << " objects freed by "
        << after.collections - before.collections << " collections, live " << before.live_bytes << " -> "
        << after.live_bytes << " bytes, heap " << before.heap_bytes << " -> " << after.heap_bytes << " bytes, "
        << after.kept_for_kernels << " kept for kernels";
    g_heads = nullptr;
}
