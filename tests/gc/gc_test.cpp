// The collector through its C API, on the device and protocol the
// environment selects (ctest runs this once per combination).
#include <adsm.h>
#include <adsm.hpp>
#include <gtest/gtest.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/doubles/fake_module.hpp"

namespace {

struct Node {
    uint64_t id;
    uint64_t check;  // id * a constant: a reused or clobbered node shows
    Node *left;
    Node *right;
};
constexpr uint64_t kCheck = 0x9e3779b97f4a7c15ull;

Node *node(uint64_t id) {
    auto *n = static_cast<Node *>(adsmGcAlloc(sizeof(Node)));
    if (!n) return nullptr;
    n->id = id;
    n->check = id * kCheck;
    return n;
}

Node *tree(int depth, uint64_t *next) {
    Node *n = node((*next)++);
    if (depth > 0) {
        n->left = tree(depth - 1, next);
        n->right = tree(depth - 1, next);
    }
    return n;
}

// Counts the nodes and checks each is intact; -1 when one is not.
long walk(const Node *n) {
    if (!n) return 0;
    if (n->check != n->id * kCheck) return -1;
    long l = walk(n->left), r = walk(n->right);
    return l < 0 || r < 0 ? -1 : 1 + l + r;
}

// Garbage that reuses whatever the collector freed.
void churn(size_t bytes) {
    for (size_t done = 0; done < bytes; done += 64) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
        ASSERT_NE(p, nullptr);
        for (int i = 0; i < 8; ++i) p[i] = 0xdeadbeefdeadbeefull;
    }
}

// Objects a conservative collector may keep anyway (a stale copy in a
// register or a dead stack slot) are few; most of a large batch must go.
std::atomic<int> g_finalized{0};
void count_finalized(void *, void *) { g_finalized.fetch_add(1); }

// Allocation in a frame of its own, so its locals are gone when it returns.
__attribute__((noinline)) void make_finalizable(int n) {
    for (int i = 0; i < n; ++i) {
        void *p = adsmGcAlloc(48);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(adsmGcRegisterFinalizer(p, count_finalized, nullptr), adsmSuccess);
    }
}

__attribute__((noinline)) void clobber_stack() {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

void collect() { ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail(); }

Node *g_root = nullptr;  // a root in the data segment

}  // namespace

TEST(GcTest, ObjectsAreZeroedAlignedAndSized) {
    for (size_t n : {1ul, 8ul, 16ul, 17ul, 100ul, 2048ul, 2049ul, 5000ul, 100000ul, (3ul << 20) + 5}) {
        auto *p = static_cast<uint8_t *>(adsmGcAlloc(n));
        ASSERT_NE(p, nullptr) << n;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << n;
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 0) << n << " at " << i;
        memset(p, 0xab, n);
        EXPECT_GE(adsmGcSize(p), n);
        EXPECT_EQ(adsmGcBase(p + n - 1), p);
        EXPECT_EQ(adsmGcBase(p + n / 2), p);
        EXPECT_EQ(adsmGcFree(p), adsmSuccess);
    }
    EXPECT_EQ(adsmGcBase(&g_root), nullptr);
    EXPECT_EQ(adsmGcSize(&g_root), 0u);
}

TEST(GcTest, ReachableObjectsSurviveCollections) {
    uint64_t next = 1;
    g_root = tree(12, &next);
    auto *held = static_cast<Node **>(malloc(sizeof(Node *)));
    *held = tree(8, &next);
    ASSERT_EQ(adsmGcAddRoots(held, sizeof(Node *)), adsmSuccess);
    for (int round = 0; round < 4; ++round) {
        churn(4 << 20);
        collect();
        ASSERT_EQ(walk(g_root), (1 << 13) - 1) << round;
        ASSERT_EQ(walk(*held), (1 << 9) - 1) << round;
    }
    ASSERT_EQ(adsmGcRemoveRoots(held, sizeof(Node *)), adsmSuccess);
    EXPECT_EQ(adsmGcRemoveRoots(held, sizeof(Node *)), adsmErrorInvalidValue);
    free(held);
    g_root = nullptr;
}

namespace {
// Builds a tree into a slot of a loaded library's thread-local storage, in
// a frame of its own so that no copy stays on the stack.
__attribute__((noinline)) void tree_into(void **slot, int depth, uint64_t first) {
    uint64_t next = first;
    *slot = tree(depth, &next);
}
}  // namespace

// A dlopen()ed library's thread-local storage is allocated by the loader
// at each thread's first use, in the C library's heap: a root all the same,
// in the thread that holds it and in one the collection stops.
TEST(GcTest, ObjectsOnlyALoadedLibrarysThreadLocalsHoldSurvive) {
    void *lib = dlopen(ADSM_GC_TEST_LIB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto lib_tls = reinterpret_cast<void **(*)()>(dlsym(lib, "gc_test_lib_tls"));
    ASSERT_NE(lib_tls, nullptr);
    tree_into(&lib_tls()[0], 10, 1);
    std::atomic<int> step{0};
    std::atomic<long> other_count{0};
    std::thread t([&] {
        tree_into(&lib_tls()[1], 9, 100000);
        clobber_stack();
        step = 1;
        while (step.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        other_count = walk(static_cast<Node *>(lib_tls()[1]));
        lib_tls()[1] = nullptr;
        step = 3;
    });
    while (step.load() != 1) std::this_thread::yield();
    clobber_stack();
    for (int round = 0; round < 3; ++round) {
        churn(4 << 20);
        collect();
        ASSERT_EQ(walk(static_cast<Node *>(lib_tls()[0])), (1 << 11) - 1) << "this thread's, round " << round;
    }
    step = 2;
    while (step.load() != 3) std::this_thread::yield();
    t.join();
    EXPECT_EQ(other_count.load(), (1 << 10) - 1) << "the stopped thread's";
    lib_tls()[0] = nullptr;
}

// A library dlmopen()ed into a namespace of its own: its data is a root
// too, though dl_iterate_phdr lists the caller's namespace alone.
TEST(GcTest, ObjectsOnlyADlmopenedLibrarysDataHoldsSurvive) {
    void *lib = dlmopen(LM_ID_NEWLM, ADSM_GC_TEST_LIB_PLAIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto adopted = reinterpret_cast<void **(*)()>(dlsym(lib, "gc_test_lib_adopted"));
    ASSERT_NE(adopted, nullptr);
    tree_into(adopted(), 10, 1);
    clobber_stack();
    for (int round = 0; round < 3; ++round) {
        churn(4 << 20);
        collect();
        ASSERT_EQ(walk(static_cast<Node *>(*adopted())), (1 << 11) - 1) << "round " << round;
    }
    *adopted() = nullptr;
    dlclose(lib);
}

TEST(GcTest, UnreachableObjectsAreFinalizedAndFreed) {
    g_finalized = 0;
    make_finalizable(2000);
    clobber_stack();
    collect();
    collect();
    EXPECT_GE(g_finalized.load(), 1900);
    adsmGcStats s;
    ASSERT_EQ(adsmGcGetStats(&s), adsmSuccess);
    EXPECT_GE(s.collections, 2u);
    EXPECT_GE(s.finalizers_run, 1900u);
    EXPECT_GT(s.objects_freed, 0u);
    EXPECT_GT(s.heap_bytes, 0u);
}

namespace {
// Finalizers that collect: the first of a batch collects and reuses what it
// freed; the rest of the batch must still find their objects intact.
constexpr uint64_t kAlive = 0x600d600d600d600dull;
std::atomic<int> g_intact{0}, g_batch{0};
void collect_then_check(void *obj, void *) {
    if (g_batch.fetch_add(1) == 0) {
        EXPECT_EQ(adsmGcCollect(), adsmSuccess);
        churn(1 << 20);
    }
    if (static_cast<uint64_t *>(obj)[0] == kAlive) g_intact.fetch_add(1);
}
__attribute__((noinline)) void make_checked_finalizable(int n) {
    for (int i = 0; i < n; ++i) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
        ASSERT_NE(p, nullptr);
        p[0] = kAlive;
        ASSERT_EQ(adsmGcRegisterFinalizer(p, collect_then_check, nullptr), adsmSuccess);
    }
}
}  // namespace

TEST(GcTest, ObjectsAwaitingTheirFinalizerSurviveCollections) {
    g_batch = 0;
    g_intact = 0;
    make_checked_finalizable(500);
    clobber_stack();
    collect();
    collect();
    ASSERT_GE(g_batch.load(), 450);
    EXPECT_EQ(g_intact.load(), g_batch.load());
}

namespace {
__attribute__((noinline)) void *make_weak(void **link) {
    void *p = adsmGcAlloc(32);
    EXPECT_EQ(adsmGcRegisterWeak(link, p), adsmSuccess);
    *link = p;
    return nullptr;
}
__attribute__((noinline)) void make_pinned(void **hidden) {
    auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
    p[0] = 4242;
    EXPECT_EQ(adsmGcPin(p), adsmSuccess);
    EXPECT_EQ(adsmGcPin(p), adsmSuccess);
    EXPECT_EQ(adsmGcRegisterFinalizer(p, count_finalized, nullptr), adsmSuccess);
    // Hidden from the scan: the pins alone keep it.
    *hidden = reinterpret_cast<void *>(~reinterpret_cast<uintptr_t>(p));
}
void *unhide(void *h) { return reinterpret_cast<void *>(~reinterpret_cast<uintptr_t>(h)); }
}  // namespace

TEST(GcTest, WeakLinksAreClearedWhenTheObjectDies) {
    // The link lives where the collector does not look (malloc'd memory).
    auto **link = static_cast<void **>(malloc(sizeof(void *)));
    make_weak(link);
    ASSERT_NE(*link, nullptr);
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(*link, nullptr);
    // A link to a live object stays.
    void *live = adsmGcAlloc(32);
    ASSERT_EQ(adsmGcRegisterWeak(link, live), adsmSuccess);
    *link = live;
    collect();
    EXPECT_EQ(*link, live);
    EXPECT_EQ(adsmGcUnregisterWeak(link), adsmSuccess);
    EXPECT_EQ(adsmGcUnregisterWeak(link), adsmErrorInvalidValue);
    free(link);
}

namespace {
__attribute__((noinline)) uint64_t pinned_value(void *hidden) { return static_cast<uint64_t *>(unhide(hidden))[0]; }
__attribute__((noinline)) adsmError_t unpin_hidden(void *hidden) { return adsmGcUnpin(unhide(hidden)); }
}  // namespace

TEST(GcTest, PinsKeepObjectsWithoutReferences) {
    g_finalized = 0;
    void *hidden = nullptr;
    make_pinned(&hidden);
    clobber_stack();
    churn(2 << 20);
    collect();
    EXPECT_EQ(g_finalized.load(), 0);
    EXPECT_EQ(pinned_value(hidden), 4242u);
    ASSERT_EQ(unpin_hidden(hidden), adsmSuccess);
    clobber_stack();
    collect();
    EXPECT_EQ(g_finalized.load(), 0);  // one pin left
    ASSERT_EQ(unpin_hidden(hidden), adsmSuccess);
    EXPECT_EQ(unpin_hidden(hidden), adsmErrorInvalidValue);  // counted: no third
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(g_finalized.load(), 1);
}

namespace {
std::atomic<int> g_released{0};
void on_release(void *obj, void *data) {
    EXPECT_EQ(static_cast<uint64_t *>(obj)[0], 77u);
    EXPECT_EQ(data, &g_released);
    g_released.fetch_add(1);
}
__attribute__((noinline)) void make_released(void **hidden, bool pinned) {
    auto *p = static_cast<uint64_t *>(adsmGcAlloc(4096));
    p[0] = 77;
    if (pinned) {
        EXPECT_EQ(adsmGcPin(p), adsmSuccess);
    }
    EXPECT_EQ(adsmGcRelease(p, on_release, &g_released), adsmSuccess);
    EXPECT_EQ(adsmGcRelease(p, on_release, &g_released), adsmErrorInvalidValue);
    *hidden = reinterpret_cast<void *>(~reinterpret_cast<uintptr_t>(p));
}
}  // namespace

TEST(GcTest, ReleasedBufferIsCalledBackOnceUnpinnedAndUnreachable) {
    g_released = 0;
    void *hidden;
    make_released(&hidden, true);
    clobber_stack();
    collect();
    EXPECT_EQ(g_released.load(), 0);  // pinned: a device or I/O may hold it
    ASSERT_EQ(adsmGcUnpin(unhide(hidden)), adsmSuccess);
    clobber_stack();
    collect();
    EXPECT_EQ(g_released.load(), 1);
    collect();
    EXPECT_EQ(g_released.load(), 1);
    EXPECT_EQ(adsmGcBase(unhide(hidden)), nullptr);  // freed after its callback
}

namespace {
// A callback that frees its object itself (a double free: the collector
// frees it after the callback), then allocates objects that could take the
// slot that free would have given back.
void *g_refreed;
adsmError_t g_refree_status;
std::string g_refree_detail;
void *g_reuse[256];  // a root: the data segment
constexpr size_t kReleasedBytes = 4096;
void free_in_callback(void *obj, void *) {
    g_refreed = obj;
    g_refree_status = adsmGcFree(obj);
    g_refree_detail = adsmGetLastErrorDetail();
    for (auto &p : g_reuse) p = adsmGcAlloc(kReleasedBytes);
}
__attribute__((noinline)) void make_released_to_free_twice(void **hidden) {
    void *p = adsmGcAlloc(kReleasedBytes);
    EXPECT_EQ(adsmGcRelease(p, free_in_callback, nullptr), adsmSuccess);
    *hidden = reinterpret_cast<void *>(~reinterpret_cast<uintptr_t>(p));
}
}  // namespace

TEST(GcTest, FreeingAReleasedObjectInItsCallbackIsADoubleFreeAndFreesNoOther) {
    void *hidden;
    // Made on a thread that ends: no stale copy of the pointer on a stack
    // that is scanned (this one's frames are laid out differently under
    // AddressSanitizer, where clobber_stack() missed one).
    std::thread([&] { make_released_to_free_twice(&hidden); }).join();
    collect();
    ASSERT_EQ(g_refreed, unhide(hidden));
    EXPECT_EQ(g_refree_status, adsmErrorInvalidPointer);
    EXPECT_NE(g_refree_detail.find("double free"), std::string::npos) << g_refree_detail;
    for (void *p : g_reuse) {
        EXPECT_NE(p, nullptr);
        EXPECT_EQ(adsmGcBase(p), p) << "a live object was freed in the released one's place";
    }
    EXPECT_EQ(adsmGcBase(g_refreed), nullptr);  // freed once, by the collector
    for (auto &p : g_reuse) p = nullptr;
}

TEST(GcTest, BadInputGetsAClearError) {
    int local = 0;
    EXPECT_EQ(adsmGcPin(&local), adsmErrorInvalidPointer);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("not in the collected heap"), std::string::npos)
        << adsmGetLastErrorDetail();
    EXPECT_EQ(adsmGcPin(nullptr), adsmErrorInvalidValue);
    auto *p = static_cast<char *>(adsmGcAlloc(100));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(adsmGcFree(p + 8), adsmErrorInvalidPointer);
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("pass its start"), std::string::npos);
    EXPECT_EQ(adsmFree(p), adsmErrorInvalidPointer);  // not adsmAlloc's
    EXPECT_EQ(p[0], 0);                                 // ...and untouched
    EXPECT_EQ(adsmGcFree(p), adsmSuccess);
    EXPECT_EQ(adsmGcFree(p), adsmErrorInvalidPointer);  // a double free
    EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("freed already"), std::string::npos);
    EXPECT_EQ(adsmGcRegisterFinalizer(p, count_finalized, nullptr), adsmErrorInvalidPointer);
    EXPECT_EQ(adsmGcRegisterWeak(nullptr, p), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGcRelease(p, nullptr, nullptr), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGcGetStats(nullptr), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGcAddRoots(nullptr, 8), adsmErrorInvalidValue);
    EXPECT_EQ(adsmGcAlloc(SIZE_MAX), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation);
}

TEST(GcTest, ThreadsAllocateAndCollectTogether) {
    constexpr int kThreads = 4;
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([t, &bad] {
            uint64_t next = uint64_t(t + 1) << 40;
            for (int round = 0; round < 6; ++round) {
                Node *mine = tree(10, &next);
                churn(1 << 20);
                if (round % 2 == t % 2) adsmGcCollect();
                // Short-lived threads start and end during collections.
                std::thread([&] { churn(256 << 10); }).join();
                if (walk(mine) != (1 << 11) - 1) bad.fetch_add(1);
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

namespace {
long steady_ns() {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

// A kernel that walks the tree it was given (one thread).
void walk_kernel(const adsm::thread_index &, const Node *root, long *out) { *out = walk(root); }

// The same once the test says so (or after 10 s), saying when it ended.
// Kernels on sim run in the device process, which sees none of this
// process's later writes: the word is a file, named after this process.
std::string walk_now_path(long host_pid) {
    const char *dir = getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/adsm-gc-walk-now." + std::to_string(host_pid);
}
void walk_when_told(const adsm::thread_index &, const Node *root, long *out, long host_pid) {
    const std::string told = walk_now_path(host_pid);
    const long give_up = steady_ns() + 10'000'000'000L;  // the monotonic clock is the system's
    while (access(told.c_str(), F_OK) != 0 && steady_ns() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    out[0] = walk(root);
    out[1] = steady_ns();
}
void link_kernel(const adsm::thread_index &, Node *from, Node *to) { from->left = to; }

__attribute__((noinline)) Node *fresh_tree(int depth) {
    uint64_t next = 1000;
    return tree(depth, &next);
}
}  // namespace

TEST(GcTest, KernelHoldsTheOnlyReferenceAcrossCollections) {
    auto k = adsm_test::device_kernel<walk_when_told>("gc.walk_when_told");
    adsm::shared_array<long> out(2);
    out[0] = out[1] = 0;
    const long me = getpid();
    const std::string told = walk_now_path(me);
    unlink(told.c_str());
    {
        Node *t = fresh_tree(12);
        k(1, 1, static_cast<const Node *>(t), out.data(), me);
        t = nullptr;
    }
    clobber_stack();
    for (int i = 0; i < 3; ++i) {
        churn(2 << 20);
        collect();
        adsmGcStats s;
        adsmGcGetStats(&s);
        EXPECT_GT(s.kept_for_kernels, 0u);
    }
    const long collected = steady_ns();
    std::ofstream(told).put('1');
    adsm::sync();
    unlink(told.c_str());
    EXPECT_EQ(out[0], (1 << 13) - 1);
    // The collections went on while the kernel ran: none waited for it
    // (which would have held them till the kernel gave up waiting), and the
    // kernel ended when told, not when it gave up.
    EXPECT_LT(collected, out[1]) << "the collections waited for the kernel";
    EXPECT_LT(out[1] - collected, 5'000'000'000L) << "the kernel did not see the word to end";
}

TEST(GcTest, PointersOnlyTheDeviceHoldsKeepObjects) {
    // After the sync, the pointer the kernel wrote may be current only in the
    // device's copy (lazy, rolling, delta): the collector must find it there.
    auto k = adsm_test::device_kernel<link_kernel>("gc.link_kernel");
    auto *holder = static_cast<Node **>(malloc(sizeof(Node *)));
    *holder = node(1);
    ASSERT_EQ(adsmGcAddRoots(holder, sizeof(Node *)), adsmSuccess);
    {
        Node *target = fresh_tree(6);
        k(1, 1, *holder, target);
        adsm::sync();
        target = nullptr;
    }
    clobber_stack();
    for (int i = 0; i < 3; ++i) {
        churn(2 << 20);
        collect();
    }
    ASSERT_NE((*holder)->left, nullptr);
    EXPECT_EQ(walk((*holder)->left), (1 << 7) - 1);
    ASSERT_EQ(adsmGcRemoveRoots(holder, sizeof(Node *)), adsmSuccess);
    free(holder);
}

TEST(GcTest, AContextMovesToAnotherDeviceWithItsCollectedObjects) {
    int devices = 0;
    ASSERT_EQ(adsmGetDeviceCount(&devices), adsmSuccess);
    if (devices < 2) {  // one device: moving is refused, nothing else to see
        EXPECT_EQ(adsmSetDevice(1), adsmErrorInvalidDevice);
        return;
    }
    auto link = adsm_test::device_kernel<link_kernel>("gc.link_kernel");
    auto walk_k = adsm_test::device_kernel<walk_kernel>("gc.walk_kernel");
    auto *holder = static_cast<Node **>(malloc(sizeof(Node *)));
    *holder = node(1);
    ASSERT_EQ(adsmGcAddRoots(holder, sizeof(Node *)), adsmSuccess);
    {
        // The only pointer to the tree is written by a kernel on device 0:
        // after the sync it may be current there alone.
        Node *target = fresh_tree(6);
        link(1, 1, *holder, target);
        adsm::sync();
        target = nullptr;
    }
    clobber_stack();
    ASSERT_EQ(adsmSetDevice(1), adsmSuccess) << adsmGetLastErrorDetail();
    for (int i = 0; i < 3; ++i) {
        churn(2 << 20);
        collect();
    }
    adsm::shared_array<long> out(1);
    out[0] = 0;
    walk_k(1, 1, static_cast<const Node *>((*holder)->left), out.data());
    adsm::sync();
    EXPECT_EQ(out[0], (1 << 7) - 1) << "the tree on device 1";
    ASSERT_NE((*holder)->left, nullptr);
    EXPECT_EQ(walk((*holder)->left), (1 << 7) - 1);
    ASSERT_EQ(adsmSetDevice(0), adsmSuccess) << adsmGetLastErrorDetail();
    ASSERT_EQ(adsmGcRemoveRoots(holder, sizeof(Node *)), adsmSuccess);
    free(holder);
}

TEST(GcTest, ForkChildKeepsObjectsAndRefusesTheHeap) {
    uint64_t next = 1;
    Node *t = tree(6, &next);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        bool ok = walk(t) == (1 << 7) - 1;
        ok = ok && adsmGcAlloc(16) == nullptr && adsmGetLastError() == adsmErrorNotSupported;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(walk(t), (1 << 7) - 1);
}

// The child's end, once the ending thread's exit handlers (the runtime's
// among them) have all run: a second round of thread-specific destructors
// starts only after every destructor of the first has returned.  (Not a
// join: the sanitizer runtime's own thread teardown comes later, and the
// one in GCC 12's libasan takes allocator locks it does not make safe
// across fork, which another of the parent's threads may have held.)
pthread_key_t g_child_end;
void end_child_after_exit_handlers(void *round) {
    if (round == reinterpret_cast<void *>(1)) pthread_setspecific(g_child_end, reinterpret_cast<void *>(2));
    else _exit(0);  // past the process's exit handlers, which would take
                    // everything the parent's threads held, for a leak
}

// A child forked from a thread that allocates, while another thread
// allocates, ends that thread (its start routine returns) without waiting
// for the heap's lock, which the other thread may have held at the fork.
TEST(GcTest, AForkChildsThreadEndsWhileTheParentAllocates) {
    ASSERT_NE(adsmGcAlloc(32), nullptr);  // the runtime's thread keys first
    static const int key_made = pthread_key_create(&g_child_end, end_child_after_exit_handlers);
    ASSERT_EQ(key_made, 0);
    std::atomic<bool> stop{false};
    std::thread busy([&] {
        while (!stop.load())
            for (int i = 0; i < 64; ++i) adsmGcAlloc(48);
    });
    int hung = 0, failed = 0;
    for (int i = 0; i < 100 && !hung; ++i) {
        pid_t child = -1;
        std::thread forking([&child] {
            ASSERT_NE(adsmGcAlloc(32), nullptr);  // this thread has a cache
            child = fork();
            // In the child this thread ends (its exit handlers run), then
            // the child does.
            if (child == 0) pthread_setspecific(g_child_end, reinterpret_cast<void *>(1));
        });
        forking.join();
        ASSERT_GT(child, 0);
        int st = 0;
        pid_t got = 0;
        for (int ms = 0; ms < 5000 && (got = waitpid(child, &st, WNOHANG)) == 0; ++ms) usleep(1000);
        if (got == 0) {
            hung = 1;
            kill(child, SIGKILL);
            waitpid(child, &st, 0);
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            ++failed;
        }
    }
    stop = true;
    busy.join();
    EXPECT_EQ(hung, 0) << "a child's ending thread waited 5 s for the heap's lock";
    EXPECT_EQ(failed, 0);
}

// The marker threads (named adsm-marker) and their CPUs.
std::vector<cpu_set_t> marker_cpus() {
    std::vector<cpu_set_t> out;
    DIR *d = opendir("/proc/self/task");
    if (!d) return out;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string name;
        std::getline(std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm"), name);
        cpu_set_t cpus;
        if (name == "adsm-marker" && sched_getaffinity(atoi(e->d_name), sizeof cpus, &cpus) == 0) out.push_back(cpus);
    }
    closedir(d);
    return out;
}

// The markers run on the CPUs of the program's threads together: with the
// collecting thread pinned to one CPU (as OpenMP pins its first thread),
// they still get the CPUs another thread may use.  In a process of its own:
// the markers start at the process's first collection.
TEST(GcTest, MarkersRunOnEveryCpuOfTheProgramsThreads) {
    if (getenv("ADSM_TEST_MARKERS_CHILD")) {
        cpu_set_t all, one;
        if (sched_getaffinity(0, sizeof all, &all) != 0) _exit(2);
        int first = 0;
        while (!CPU_ISSET(first, &all)) ++first;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) _exit(3);
        std::atomic<int> helper_state{0};
        std::thread helper([&] {
            helper_state = pthread_setaffinity_np(pthread_self(), sizeof all, &all) == 0 ? 1 : -1;
            while (helper_state == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
        while (helper_state == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        uint64_t next = 1;
        Node *t = tree(8, &next);
        bool ok = helper_state == 1 && t && adsmGcCollect() == adsmSuccess;
        std::vector<cpu_set_t> markers = marker_cpus();
        // Within the program's CPUs, and (steered off the collecting
        // thread's CPU) on another than the pinned thread's one.
        for (cpu_set_t &m : markers) {
            cpu_set_t outside, beside;
            CPU_XOR(&outside, &m, &all);
            CPU_AND(&outside, &outside, &m);
            CPU_XOR(&beside, &m, &one);
            CPU_AND(&beside, &beside, &m);
            bool good = CPU_COUNT(&outside) == 0 && (CPU_COUNT(&all) == 1 || CPU_COUNT(&beside) > 0);
            if (!good)
                fprintf(stderr, "a marker may run on %d CPUs, %d of them outside the program's, %d beside CPU %d\n",
                        CPU_COUNT(&m), CPU_COUNT(&outside), CPU_COUNT(&beside), first);
            ok &= good;
        }
        // (One marker per CPU by default: none besides the collecting thread on one CPU.)
        if (CPU_COUNT(&all) > 1 && markers.empty()) {
            fprintf(stderr, "no marker thread on %d CPUs\n", CPU_COUNT(&all));
            ok = false;
        }
        helper_state = 2;
        helper.join();
        _exit(ok ? 0 : 1);
    }
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        setenv("ADSM_TEST_MARKERS_CHILD", "1", 1);
        unsetenv("ADSM_GC_MARKERS");
        execl("/proc/self/exe", "gc_tests", "--gtest_filter=GcTest.MarkersRunOnEveryCpuOfTheProgramsThreads",
              static_cast<char *>(nullptr));
        _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(GcTest, AllocatorServesStandardContainers) {
    std::vector<Node *, adsm::gc_allocator<Node *>> v;
    uint64_t next = 1;
    for (int i = 0; i < 5000; ++i) v.push_back(tree(2, &next));
    churn(4 << 20);
    collect();
    for (Node *n : v) ASSERT_EQ(walk(n), 7);
    EXPECT_NE(adsmGcBase(v.data()), nullptr);
}
