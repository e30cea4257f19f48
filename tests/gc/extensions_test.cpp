// The collector's extensions for runtimes written for other collectors
// (interpose/bdwgc serves bdwgc's API with them): layouts with scan
// functions, ordered finalization, finalizers on demand, collections held
// off, the collection's steps, weak links that move, and the heap's limit.
#include <adsm.h>
#include <adsm.hpp>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "api/runtime.h"
#include "gc/collector.h"
#include "gc/layouts.h"
#include "gc/mark.h"
#include "gpu/doubles/fake_module.hpp"

namespace {

using adsm::gc::Callback;
using adsm::gc::Collector;
using adsm::gc::FinalizerOrder;

Collector *the_collector() {
    adsm::Runtime *rt = nullptr;
    adsm::gc::Collector *c = nullptr;
    if (adsm::runtime(&rt) != adsmSuccess || adsm::collector(*rt, &c) != adsmSuccess) return nullptr;
    return c;
}

void collect() { ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail(); }

__attribute__((noinline)) void clobber_stack() {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

// Objects hidden from every scan (complemented), so that only what a test
// means to keep them does.
uintptr_t hide(const void *p) { return ~reinterpret_cast<uintptr_t>(p); }
template <class T>
T *unhide(uintptr_t h) {
    return reinterpret_cast<T *>(~h);
}

// Which objects died: each finalizer sets its flag.
std::atomic<int> g_died[8];
void died(void *, void *flag) { static_cast<std::atomic<int> *>(flag)->fetch_add(1); }

void *finalizable(int flag, FinalizerOrder order = FinalizerOrder::none, size_t bytes = 48) {
    void *p = adsmGcAlloc(bytes);
    EXPECT_NE(p, nullptr);
    EXPECT_EQ(the_collector()->set_finalizer(p, Callback{died, &g_died[flag], order, false}, nullptr), adsmSuccess);
    return p;
}

void reset_flags() {
    for (auto &f : g_died) f = 0;
}

// ---- layouts

// Word 1 of an object of this layout is a pointer; word 0 is not.
std::atomic<int> g_scans{0};
std::atomic<bool> g_view_matches{true};
void second_word_only(adsm::gc::Marker &m, const uintptr_t *view, size_t bytes, uintptr_t obj, uintptr_t arg) {
    g_scans.fetch_add(1);
    if (arg != 77 || bytes < 2 * sizeof(uintptr_t) || view[2] != obj) g_view_matches = false;
    m.consider(view[1]);
}

unsigned second_word_layout() {
    static unsigned id = adsm::gc::register_layout(second_word_only, 77);
    return id;
}

// Objects of the layout, each holding two finalizable objects; the roots are
// in the data segment.  A conservative collector may keep an object or two
// that a register still holds: the counts allow for it.
constexpr int kLaidOut = 16;
uintptr_t *g_laid_out_roots[kLaidOut];

__attribute__((noinline)) void make_laid_out(size_t bytes) {
    for (uintptr_t *&root : g_laid_out_roots) {
        auto *o = static_cast<uintptr_t *>(the_collector()->alloc_laid_out(bytes, second_word_layout()));
        ASSERT_NE(o, nullptr);
        o[0] = reinterpret_cast<uintptr_t>(finalizable(0));
        o[1] = reinterpret_cast<uintptr_t>(finalizable(1));
        o[2] = reinterpret_cast<uintptr_t>(o);  // the scan function checks its arguments with it
        root = o;
    }
}

__attribute__((noinline)) void check_described(size_t bytes) {
    Collector::ObjectInfo info;
    ASSERT_TRUE(the_collector()->describe(g_laid_out_roots[0] + 1, &info));
    EXPECT_EQ(info.base, g_laid_out_roots[0]);
    EXPECT_EQ(info.layout, second_word_layout());
    EXPECT_TRUE(info.pointers);
    EXPECT_GE(info.size, bytes);
}

void check_layout_decides(size_t bytes) {
    reset_flags();
    g_scans = 0;
    make_laid_out(bytes);
    clobber_stack();
    collect();
    collect();
    EXPECT_GE(g_scans.load(), kLaidOut);
    EXPECT_TRUE(g_view_matches.load());
    EXPECT_GE(g_died[0].load(), kLaidOut - 2) << "word 0 is no pointer: its objects must die";
    EXPECT_EQ(g_died[1].load(), 0) << "word 1 is the layout's pointer: its objects must live";
    check_described(bytes);
    for (uintptr_t *&root : g_laid_out_roots) root = nullptr;
    clobber_stack();
    collect();
    collect();
    EXPECT_GE(g_died[1].load(), kLaidOut - 2) << "with their holders gone, word 1's objects die too";
}

}  // namespace

TEST(GcExtensionsTest, LayoutDecidesWhatASmallObjectKeeps) { check_layout_decides(48); }
TEST(GcExtensionsTest, LayoutDecidesWhatALargeObjectKeeps) { check_layout_decides(10000); }
TEST(GcExtensionsTest, LayoutDecidesWhatAHugeObjectKeeps) { check_layout_decides((1 << 20) + 16); }

TEST(GcExtensionsTest, LaidOutObjectsComeZeroed) {
    Collector *c = the_collector();
    for (size_t bytes : {32ul, 2048ul, 8192ul}) {
        for (int round = 0; round < 3; ++round) {
            std::vector<uintptr_t> hidden;
            for (int i = 0; i < 200; ++i) {
                auto *p = static_cast<uint8_t *>(c->alloc_laid_out(bytes, second_word_layout()));
                ASSERT_NE(p, nullptr);
                for (size_t k = 0; k < bytes; ++k) ASSERT_EQ(p[k], 0) << bytes << " at " << k;
                memset(p, 0xa5, bytes);
                hidden.push_back(hide(p));
            }
            clobber_stack();
            collect();
        }
    }
    EXPECT_EQ(c->alloc_laid_out(16, 0), nullptr);
    EXPECT_EQ(c->alloc_laid_out(16, adsm::gc::kMaxLayouts - 1), nullptr);
}

// ---- finalization order

namespace {

// a -> b, both finalizable in `order`, neither reachable.
__attribute__((noinline)) void make_chain(FinalizerOrder order) {
    auto *a = static_cast<void **>(finalizable(0, order));
    void *b = finalizable(1, order);
    a[0] = b;
}

__attribute__((noinline)) void make_self_cycle(FinalizerOrder order) {
    auto *a = static_cast<void **>(finalizable(0, order));
    a[1] = a;
}
}  // namespace

TEST(GcExtensionsTest, OrderedFinalizersRunHolderFirst) {
    reset_flags();
    make_chain(FinalizerOrder::ordered);
    clobber_stack();
    collect();
    EXPECT_EQ(g_died[0].load(), 1);
    EXPECT_EQ(g_died[1].load(), 0) << "b is reachable from a, whose finalizer has not run yet";
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(g_died[1].load(), 1);
}

TEST(GcExtensionsTest, UnorderedFinalizersRunTogether) {
    reset_flags();
    make_chain(FinalizerOrder::none);
    clobber_stack();
    collect();
    EXPECT_EQ(g_died[0].load(), 1);
    EXPECT_EQ(g_died[1].load(), 1);
}

TEST(GcExtensionsTest, SelfCycleKeepsOrderedObjectsUnlessIgnored) {
    reset_flags();
    make_self_cycle(FinalizerOrder::ordered);
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(g_died[0].load(), 0);
    reset_flags();
    make_self_cycle(FinalizerOrder::ignore_self);
    clobber_stack();
    collect();
    EXPECT_EQ(g_died[0].load(), 1);
}

namespace {
// n (unordered) -> u ("unreachable"): u waits for n to be gone.
__attribute__((noinline)) void make_unreachable_pair() {
    auto *n = static_cast<void **>(finalizable(0, FinalizerOrder::none));
    n[0] = finalizable(1, FinalizerOrder::unreachable);
}
}  // namespace

TEST(GcExtensionsTest, UnreachableFinalizerWaitsForUnorderedHolders) {
    reset_flags();
    make_unreachable_pair();
    clobber_stack();
    collect();
    EXPECT_EQ(g_died[0].load(), 1);
    EXPECT_EQ(g_died[1].load(), 0);
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(g_died[1].load(), 1);
}

namespace {
constexpr uint64_t kIntact = 0x1234123412341234ull;
std::atomic<int> g_data_intact{0};
void check_data(void *, void *data) {
    if (static_cast<uint64_t *>(data)[0] == kIntact) g_data_intact.fetch_add(1);
}
__attribute__((noinline)) void make_with_kept_data() {
    auto *data = static_cast<uint64_t *>(adsmGcAlloc(64));
    data[0] = kIntact;
    void *obj = adsmGcAlloc(32);
    ASSERT_EQ(the_collector()->set_finalizer(obj, Callback{check_data, data, FinalizerOrder::ordered, true}, nullptr),
              adsmSuccess);
}
}  // namespace

TEST(GcExtensionsTest, KeptDataLivesUntilTheFinalizerRuns) {
    g_data_intact = 0;
    make_with_kept_data();
    clobber_stack();
    for (int i = 0; i < 50000; ++i) adsmGcAlloc(64);  // garbage that would reuse the data
    collect();
    collect();
    EXPECT_EQ(g_data_intact.load(), 1);
}

TEST(GcExtensionsTest, ReplacingAFinalizerReturnsTheOldOne) {
    Collector *c = the_collector();
    void *p = adsmGcAlloc(32);
    Callback old;
    ASSERT_EQ(c->set_finalizer(p, Callback{died, &g_died[3], FinalizerOrder::ordered, true}, &old), adsmSuccess);
    EXPECT_EQ(old.fn, nullptr);
    ASSERT_EQ(c->set_finalizer(p, Callback{}, &old), adsmSuccess);
    EXPECT_EQ(old.fn, died);
    EXPECT_EQ(old.data, &g_died[3]);
    EXPECT_EQ(old.order, FinalizerOrder::ordered);
    EXPECT_EQ(c->set_finalizer(p, Callback{}, &old), adsmSuccess);
    EXPECT_EQ(old.fn, nullptr);
    EXPECT_EQ(c->set_finalizer(static_cast<char *>(p) + 8, Callback{died, nullptr}, &old), adsmErrorInvalidPointer);
}

// ---- finalizers on demand

namespace {
std::atomic<int> g_notified{0};
void notified() { g_notified.fetch_add(1); }
__attribute__((noinline)) void make_checked(int n) {
    for (int i = 0; i < n; ++i) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
        p[0] = kIntact;
        // As the bdwgc layer registers them: subject to finalization on demand.
        ASSERT_EQ(the_collector()->set_finalizer(p, Callback{check_data, p, FinalizerOrder::none, false, true}, nullptr),
                  adsmSuccess);
    }
}
std::atomic<int> g_api_ran{0};
void api_finalizer(void *obj, void *data) {
    if (static_cast<uint64_t *>(obj)[0] == kIntact && data == &g_api_ran) g_api_ran.fetch_add(1);
}
__attribute__((noinline)) void make_api_finalized(int n) {
    for (int i = 0; i < n; ++i) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(64));
        p[0] = kIntact;
        ASSERT_EQ(adsmGcRegisterFinalizer(p, api_finalizer, &g_api_ran), adsmSuccess);
    }
}
}  // namespace

TEST(GcExtensionsTest, FinalizersOnDemandWaitForInvoke) {
    Collector *c = the_collector();
    g_notified = 0;
    g_data_intact = 0;
    c->set_finalize_on_demand(true, notified);
    make_checked(100);
    clobber_stack();
    collect();
    EXPECT_EQ(g_notified.load(), 1);
    EXPECT_EQ(g_data_intact.load(), 0);
    EXPECT_TRUE(c->finalizers_due());
    // Waiting objects outlive more collections and reuse of the heap.
    for (int i = 0; i < 50000; ++i) adsmGcAlloc(64);
    collect();
    // An object a stale stack word kept through the first collection may be
    // found due now (a second notice), but none of the waiting ones ran.
    EXPECT_LE(g_notified.load(), 2);
    EXPECT_EQ(g_data_intact.load(), 0);
    size_t ran = c->invoke_finalizers();
    EXPECT_GE(ran, 90u);
    EXPECT_EQ(g_data_intact.load(), static_cast<int>(ran));
    EXPECT_FALSE(c->finalizers_due());
    EXPECT_EQ(c->invoke_finalizers(), 0u);
    c->set_finalize_on_demand(false, nullptr);
}

// A bdwgc program that asks for finalization on demand (guile does) holds
// back its own finalizers only: those registered through the runtime's API
// run after the collection, as they always do.
TEST(GcExtensionsTest, OnDemandHoldsBackOnlyBdwgcFinalizers) {
    Collector *c = the_collector();
    g_notified = 0;
    g_data_intact = 0;
    g_api_ran = 0;
    c->set_finalize_on_demand(true, notified);
    make_checked(50);
    make_api_finalized(50);
    clobber_stack();
    collect();
    EXPECT_GE(g_api_ran.load(), 45);
    EXPECT_EQ(g_data_intact.load(), 0);
    EXPECT_EQ(g_notified.load(), 1);
    EXPECT_TRUE(c->finalizers_due());
    // Turning it off lets the waiting ones run at the next chance, unasked.
    c->set_finalize_on_demand(false, nullptr);
    collect();
    EXPECT_GE(g_data_intact.load(), 45);
    EXPECT_FALSE(c->finalizers_due());
}

// ---- collections held off, and their steps

TEST(GcExtensionsTest, DisabledCollectorDoesNotCollect) {
    Collector *c = the_collector();
    Collector::Usage before, after;
    c->usage(&before);
    c->disable();
    c->disable();
    EXPECT_TRUE(c->disabled());
    collect();
    c->enable();
    collect();
    c->usage(&after);
    EXPECT_EQ(after.collections, before.collections);
    c->enable();
    EXPECT_FALSE(c->disabled());
    collect();
    c->usage(&after);
    EXPECT_EQ(after.collections, before.collections + 1);
}

namespace {
std::vector<Collector::Event> *g_events;
void record(Collector::Event e, void *arg) {
    EXPECT_EQ(arg, &g_events);
    g_events->push_back(e);
}
}  // namespace

TEST(GcExtensionsTest, EventsMarkEveryStepInOrder) {
    using E = Collector::Event;
    std::vector<E> events;
    events.reserve(64);  // the hook must not allocate while the world is stopped
    g_events = &events;
    the_collector()->set_event_hook(record, &g_events);
    collect();
    the_collector()->set_event_hook(nullptr, nullptr);
    std::vector<E> expected = {E::start,     E::stop_world,    E::world_stopped, E::mark_start,      E::mark_end,
                               E::sweep_start, E::sweep_end, E::restart_world, E::world_restarted, E::end};
    EXPECT_EQ(events, expected);
}

TEST(GcExtensionsTest, UsageCountsAllocationSinceTheCollection) {
    Collector *c = the_collector();
    collect();
    // No automatic collection meanwhile (with a small trigger, one would
    // come due within what this allocates).
    c->disable();
    Collector::Usage u;
    c->usage(&u);
    uint64_t since = u.allocated_since_collection;
    for (int i = 0; i < 100; ++i) ASSERT_NE(adsmGcAlloc(4096), nullptr);  // a page each
    c->usage(&u);
    EXPECT_EQ(u.allocated_since_collection, since + 100 * 4096);
    for (int i = 0; i < 1000; ++i) ASSERT_NE(adsmGcAlloc(100), nullptr);
    c->usage(&u);
    EXPECT_GE(u.allocated_since_collection, since + 100 * 4096 + 1000 * 100);
    EXPECT_GT(u.heap_bytes, 0u);
    EXPECT_GE(u.allocated_bytes, u.allocated_since_collection);
    c->enable();
    collect();
    c->usage(&u);
    EXPECT_EQ(u.allocated_since_collection, 0u);
}

TEST(GcExtensionsTest, HeapLimitAndExpansion) {
    Collector *c = the_collector();
    Collector::Usage u;
    c->usage(&u);
    c->set_max_heap(u.heap_bytes + (8 << 20));
    EXPECT_FALSE(c->expand(64 << 20));
    EXPECT_TRUE(c->expand(4 << 20));
    EXPECT_EQ(adsmGcAlloc(64 << 20), nullptr);
    EXPECT_EQ(adsmGetLastError(), adsmErrorMemoryAllocation);
    c->set_max_heap(0);
    void *big = adsmGcAlloc(64 << 20);
    EXPECT_NE(big, nullptr);
    EXPECT_TRUE(c->in_heap(static_cast<char *>(big) + 100));
    static int not_heap;
    EXPECT_FALSE(c->in_heap(&not_heap));
    EXPECT_EQ(adsmGcFree(big), adsmSuccess);
}

// ---- weak links

namespace {
__attribute__((noinline)) void register_links(void **links) {
    Collector *c = the_collector();
    void *obj = adsmGcAlloc(32);
    bool replaced = true;
    ASSERT_EQ(c->add_weak(&links[0], obj, &replaced), adsmSuccess);
    EXPECT_FALSE(replaced);
    ASSERT_EQ(c->add_weak(&links[0], obj, &replaced), adsmSuccess);
    EXPECT_TRUE(replaced);
    EXPECT_EQ(c->move_weak(&links[0], &links[0]), Collector::LinkMove::moved);
    EXPECT_EQ(c->move_weak(&links[0], &links[1]), Collector::LinkMove::moved);
    EXPECT_EQ(c->move_weak(&links[0], &links[1]), Collector::LinkMove::not_found);
    ASSERT_EQ(c->add_weak(&links[2], obj, &replaced), adsmSuccess);
    EXPECT_EQ(c->move_weak(&links[1], &links[2]), Collector::LinkMove::taken);
    EXPECT_EQ(adsmGcUnregisterWeak(&links[2]), adsmSuccess);
    links[1] = obj;
}
}  // namespace

TEST(GcExtensionsTest, WeakLinksMoveAndReportDuplicates) {
    auto **links = static_cast<void **>(calloc(3, sizeof(void *)));  // unscanned
    register_links(links);
    ASSERT_NE(links[1], nullptr);
    clobber_stack();
    collect();
    collect();
    EXPECT_EQ(links[1], nullptr) << "the moved link is cleared when its object dies";
    EXPECT_EQ(adsmGcUnregisterWeak(&links[1]), adsmErrorInvalidValue) << "and forgotten";
    free(links);
}

TEST(GcExtensionsTest, WithLockRunsUnderTheHeapLock) {
    auto fn = [](void *arg) -> void * { return static_cast<char *>(arg) + 1; };
    char x[2];
    EXPECT_EQ(the_collector()->with_lock(fn, x), x + 1);
}

// ---- device copies and the runtime's own writes

namespace {
constexpr size_t kHolderBytes = 4 << 20;  // a chunk of its own, whose blocks a whole write covers
void touch_kernel(const adsm::thread_index &, uint64_t *obj) { obj[1] = 1; }
uintptr_t g_hidden_target;  // complemented: no scan sees it
uint64_t *g_holder;         // in the heap; a kernel wrote it last
uint64_t *g_source;         // malloc'd: not scanned
bool g_wrote;
void write_before_the_stop(Collector::Event e, void *) {
    if (e != Collector::Event::stop_world || g_wrote) return;
    g_wrote = true;
    g_source[0] = ~g_hidden_target;
    g_source[1] = 1;
    // Whole blocks whose current copy is on the device: written there.
    EXPECT_EQ(adsmMemcpy(g_holder, g_source, kHolderBytes), adsmSuccess) << adsmGetLastErrorDetail();
    g_source[0] = 0;
}
__attribute__((noinline)) void make_target() {
    auto *t = static_cast<uint64_t *>(adsmGcAlloc(64));
    ASSERT_NE(t, nullptr);
    for (int i = 0; i < 8; ++i) t[i] = kIntact;
    g_hidden_target = hide(t);
}
}  // namespace

// The collector reads the device's copies before it stops the world.  A
// write the runtime makes for the program in between (adsmMemcpy here,
// interposed I/O alike) may land in a device copy after it was read, where
// this collection does not look: it must free nothing, and the next one
// finds the pointer.  (On lazy, rolling and delta the holder is current on
// the device after the kernel; elsewhere the write lands on the host, where
// marking reads it.)
TEST(GcExtensionsTest, AWriteAfterTheDeviceCopyWasReadLosesNothing) {
    static auto k = adsm_test::device_kernel<touch_kernel>("gc.ext.touch_kernel");
    Collector *c = the_collector();
    auto *root = static_cast<uint64_t **>(malloc(sizeof(uint64_t *)));  // a registered root
    g_holder = *root = static_cast<uint64_t *>(adsmGcAlloc(kHolderBytes));
    ASSERT_NE(g_holder, nullptr);
    ASSERT_EQ(adsmGcAddRoots(root, sizeof *root), adsmSuccess);
    g_source = static_cast<uint64_t *>(calloc(1, kHolderBytes));
    k(1, 1, g_holder);
    adsm::sync();
    make_target();
    clobber_stack();
    Collector::Usage before, after;
    c->usage(&before);
    g_wrote = false;
    c->set_event_hook(write_before_the_stop, nullptr);
    collect();
    c->set_event_hook(nullptr, nullptr);
    c->usage(&after);
    ASSERT_TRUE(g_wrote);
    for (int i = 0; i < 50000; ++i) adsmGcAlloc(64);  // would reuse the target, were it freed
    collect();
    EXPECT_EQ(g_holder[0], ~g_hidden_target);
    auto *target = reinterpret_cast<const uint64_t *>(~g_hidden_target);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(target[i], kIntact) << "word " << i << " of the target was reused";
    EXPECT_LE(after.abandoned, before.abandoned + 1);
    ASSERT_EQ(adsmGcRemoveRoots(root, sizeof *root), adsmSuccess);
    free(root);
    free(g_source);
}

// A collected object another thread's context allocated: a launch in this
// one would not move it (its calls alone do), so the kernel would read the
// device's old copy of what the CPU wrote.  Refused, with the reason, on a
// device with a copy of its own; on an integrated one there is one copy.
TEST(GcExtensionsTest, AKernelGivenAnotherContextsObjectIsRefusedWhereItsCopyWouldBeStale) {
    static auto k = adsm_test::device_kernel<touch_kernel>("gc.ext.touch_kernel");
    uint64_t *theirs = nullptr;
    std::thread([&] { theirs = static_cast<uint64_t *>(adsmGcAlloc(64)); }).join();
    ASSERT_NE(theirs, nullptr);
    auto *root = static_cast<uint64_t **>(malloc(sizeof(uint64_t *)));
    *root = theirs;
    ASSERT_EQ(adsmGcAddRoots(root, sizeof *root), adsmSuccess);
    theirs[1] = 5;
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    void *args[] = {&theirs};
    const adsmError_t e = adsmCall(k.handle(), adsmDim3{1, 1, 1}, adsmDim3{1, 1, 1}, args);
    if (info.integrated) {
        EXPECT_EQ(e, adsmSuccess) << adsmGetLastErrorDetail();
        EXPECT_EQ(adsmSync(), adsmSuccess);
        EXPECT_EQ(theirs[1], 1u);
    } else {
        EXPECT_EQ(e, adsmErrorInvalidValue);
        EXPECT_NE(std::string(adsmGetLastErrorDetail()).find("allocated in another context"), std::string::npos)
            << adsmGetLastErrorDetail();
        EXPECT_EQ(adsmSync(), adsmSuccess);
        EXPECT_EQ(theirs[1], 5u) << "nothing ran";
    }
    // Its own object goes to the kernel as ever.
    auto *mine = static_cast<uint64_t *>(adsmGcAlloc(64));
    ASSERT_NE(mine, nullptr);
    mine[1] = 5;
    k(1, 1, mine);
    adsm::sync();
    EXPECT_EQ(mine[1], 1u);
    ASSERT_EQ(adsmGcRemoveRoots(root, sizeof *root), adsmSuccess);
    free(root);
}

namespace {
// Stores a pointer once told to, through a file (a device's kernels may
// run in another process).  Both pointers hidden: a launch with a heap
// pointer among its arguments waits for the collection, which holds the
// heap's lock, and keeps what it points to.
std::string store_now_path(long host_pid) {
    const char *dir = getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/adsm-gc-store-now." + std::to_string(host_pid);
}
void store_when_told(const adsm::thread_index &, uintptr_t hidden_obj, uintptr_t hidden_v, long host_pid) {
    const std::string told = store_now_path(host_pid);
    for (int i = 0; i < 10000 && access(told.c_str(), F_OK) != 0; ++i)  // ten seconds at most
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    reinterpret_cast<uint64_t *>(~hidden_obj)[0] = ~hidden_v;
}
auto &store_kernel() {
    static auto k = adsm_test::device_kernel<store_when_told>("gc.ext.store_when_told");
    return k;
}
void launch_store() {
    store_kernel()(1, 1, ~reinterpret_cast<uintptr_t>(g_holder), g_hidden_target, static_cast<long>(getpid()));
}
bool g_launch_in_hook;
void kernel_before_the_stop(Collector::Event e, void *) {
    if (e != Collector::Event::stop_world || g_wrote) return;
    g_wrote = true;
    std::ofstream(store_now_path(getpid())).put('1');
    if (g_launch_in_hook) launch_store();
    adsm::sync();
}

// A kernel that writes a pointer into a block the host held when the
// collector read the device's copies, and is synced before the world stops
// (launched before the collection and running while the copies are read,
// or launched after them): the pointer is only on the device, where the
// world stopped cannot read it (the driver's threads are stopped too).
void kernel_between_the_copies_and_the_stop(bool launch_in_hook) {
    Collector *c = the_collector();
    auto *root = static_cast<uint64_t **>(malloc(sizeof(uint64_t *)));
    g_holder = *root = static_cast<uint64_t *>(adsmGcAlloc(kHolderBytes));
    ASSERT_NE(g_holder, nullptr);
    ASSERT_EQ(adsmGcAddRoots(root, sizeof *root), adsmSuccess);
    for (size_t i = 0; i < kHolderBytes / 8; i += 512) g_holder[i] = 0;  // the host's copy is current
    make_target();
    clobber_stack();
    g_wrote = false;
    unlink(store_now_path(getpid()).c_str());
    g_launch_in_hook = launch_in_hook;
    if (!launch_in_hook) launch_store();
    Collector::Usage before, after;
    c->usage(&before);
    c->set_event_hook(kernel_before_the_stop, nullptr);
    collect();
    c->set_event_hook(nullptr, nullptr);
    c->usage(&after);
    unlink(store_now_path(getpid()).c_str());
    ASSERT_TRUE(g_wrote);
    // That collection could not read what the kernel wrote: it freed
    // nothing.  (Device and host share one copy on an integrated device.)
    adsmDeviceInfo info;
    ASSERT_EQ(adsmGetDeviceInfo(&info), adsmSuccess);
    EXPECT_EQ(after.abandoned, before.abandoned + (info.integrated ? 0 : 1));
    for (int i = 0; i < 50000; ++i) adsmGcAlloc(64);  // would reuse the target, were it freed
    collect();
    EXPECT_EQ(g_holder[0], ~g_hidden_target);
    auto *target = reinterpret_cast<const uint64_t *>(~g_hidden_target);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(target[i], kIntact) << "word " << i << " of the target was reused";
    ASSERT_EQ(adsmGcRemoveRoots(root, sizeof *root), adsmSuccess);
    free(root);
}
}  // namespace

TEST(GcExtensionsTest, AKernelRunningWhileTheDeviceCopiesAreReadLosesNothing) {
    kernel_between_the_copies_and_the_stop(false);
}

TEST(GcExtensionsTest, AKernelLaunchedAfterTheDeviceCopiesWereReadLosesNothing) {
    kernel_between_the_copies_and_the_stop(true);
}

namespace {
void nothing_kernel(const adsm::thread_index &, int) {}
auto &nothing() {
    static auto k = adsm_test::device_kernel<nothing_kernel>("gc.ext.nothing_kernel");
    return k;
}
std::atomic<bool> g_launched;
bool g_launched_in_time;
void launch_beside_the_collection(Collector::Event e, void *) {
    if (e != Collector::Event::stop_world) return;
    // From another thread, its own context: this one holds the heap's lock.
    std::thread([] {
        nothing()(1, 1, 7);
        adsm::sync();
        g_launched = true;
    }).detach();
    for (int i = 0; i < 5000 && !g_launched; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_launched_in_time = g_launched;
}
}  // namespace

// A launch that names no collected object does not wait for a collection
// (which holds the heap's lock throughout), though another context has a
// kernel heap open: it waited for every collection while that heap stayed
// open, for good if its context never synced.
TEST(GcExtensionsTest, ALaunchNamingNoCollectedObjectDoesNotWaitForACollection) {
    adsmGcKernelHeap *open_heap = nullptr;
    std::promise<void> made, done;
    std::thread owner([&] {
        EXPECT_EQ(adsmGcKernelHeapCreate(4096, nullptr, &open_heap), adsmSuccess) << adsmGetLastErrorDetail();
        made.set_value();
        done.get_future().wait();
        nothing()(1, 1, 0);  // a call and its sync close the heap
        adsm::sync();
    });
    made.get_future().wait();
    ASSERT_NE(open_heap, nullptr);
    (void)nothing();  // (its module loaded before the collection)
    Collector *c = the_collector();
    g_launched = false;
    g_launched_in_time = false;
    c->set_event_hook(launch_beside_the_collection, nullptr);
    collect();
    c->set_event_hook(nullptr, nullptr);
    EXPECT_TRUE(g_launched_in_time) << "the launch waited for the collection";
    while (!g_launched) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    done.set_value();
    owner.join();
    adsmGcKernelHeapInfo info;
    EXPECT_EQ(adsmGcKernelHeapGetInfo(open_heap, &info), adsmSuccess);
    EXPECT_EQ(info.closed, 1);
}

namespace {
// A copy of the test library at path (a mkstemps template ending in .so),
// which dlopen maps afresh and dlclose unmaps.
void copy_test_lib(char *path) {
    int out = mkstemps(path, 3);
    ASSERT_GE(out, 0);
    int in = open(ADSM_GC_TEST_LIB, O_RDONLY);
    ASSERT_GE(in, 0);
    char buf[65536];
    for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;) ASSERT_EQ(write(out, buf, n), n);
    close(in);
    close(out);
}

void *g_closing_lib;
uintptr_t g_closing_lo, g_closing_hi;  // the pages of its data and bss
void *g_guard = MAP_FAILED;
bool g_closed;
void close_before_the_stop(Collector::Event e, void *) {
    if (e != Collector::Event::stop_world || g_closed) return;
    g_closed = true;
    EXPECT_EQ(dlclose(g_closing_lib), 0) << dlerror();
    // Kept unreadable: the next mapping made anywhere could otherwise take
    // the hole and hide a read of it.
    g_guard = mmap(reinterpret_cast<void *>(g_closing_lo), g_closing_hi - g_closing_lo, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}
}  // namespace

// The data segments are listed before the world stops (listing takes the
// loader's lock, which a stopped thread may hold); a library dlclose()d in
// between is gone by the time they are read.  It is not read: no fault,
// and the collection goes on.
TEST(GcExtensionsTest, ALibraryClosedBeforeTheWorldStopsIsNotRead) {
    // A copy, loaded by this test alone, so that dlclose unmaps it.
    char path[] = "/tmp/adsm-gc-test-lib-XXXXXX.so";
    ASSERT_NO_FATAL_FAILURE(copy_test_lib(path));
    g_closing_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(g_closing_lib, nullptr) << dlerror();
    auto data = reinterpret_cast<int *(*)()>(dlsym(g_closing_lib, "gc_test_lib_data"));
    auto bss = reinterpret_cast<int *(*)()>(dlsym(g_closing_lib, "gc_test_lib_bss"));
    ASSERT_TRUE(data && bss);
    ASSERT_EQ(*data(), 42);
    const uintptr_t page = 4096;
    uintptr_t a = reinterpret_cast<uintptr_t>(data()), b = reinterpret_cast<uintptr_t>(bss());
    g_closing_lo = std::min(a, b) & ~(page - 1);
    g_closing_hi = (std::max(a, b) + sizeof(int) + page - 1) & ~(page - 1);
    g_closed = false;
    the_collector()->set_event_hook(close_before_the_stop, nullptr);
    collect();
    the_collector()->set_event_hook(nullptr, nullptr);
    EXPECT_TRUE(g_closed);
    EXPECT_NE(g_guard, MAP_FAILED) << "the library's pages were not free after dlclose";
    if (g_guard != MAP_FAILED) munmap(g_guard, g_closing_hi - g_closing_lo);
    EXPECT_EQ(dlopen(path, RTLD_NOW | RTLD_NOLOAD), nullptr) << "the copy stayed loaded: nothing was unmapped";
    unlink(path);
    collect();
}

namespace {
const char *g_opening_path;
void *g_opened_lib;
constexpr uint64_t kAdoptMask = 0x5a5a5a5a5a5a5a5aull;
constexpr uint64_t kAdopted = 0x0ddba11c0ffee000ull;
void open_before_the_stop(Collector::Event e, void *) {
    if (e != Collector::Event::stop_world || g_opened_lib) return;
    g_opened_lib = dlopen(g_opening_path, RTLD_NOW | RTLD_LOCAL);
}
// An object no root holds, named to the library by its masked address.
__attribute__((noinline)) void hand_over_an_object() {
    auto *o = static_cast<uint64_t *>(adsmGcAlloc(32 * sizeof(uint64_t)));
    ASSERT_NE(o, nullptr);
    for (int i = 0; i < 32; ++i) o[i] = kAdopted + i;
    char masked[32];
    snprintf(masked, sizeof masked, "%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(o) ^ kAdoptMask));
    setenv("ADSM_GC_TEST_LIB_ADOPT", masked, 1);
}
}  // namespace

// The same window the other way: a library dlopen()ed after the data
// segments were listed, whose constructor stores the only pointer to an
// object in its data, which no listed root covers.  The collection notices
// the loader's list changed and frees nothing; the next one lists it.
TEST(GcExtensionsTest, ALibraryLoadedBeforeTheWorldStopsKeepsWhatItsConstructorStored) {
    char path[] = "/tmp/adsm-gc-test-lib-XXXXXX.so";
    ASSERT_NO_FATAL_FAILURE(copy_test_lib(path));
    hand_over_an_object();
    clobber_stack();
    g_opening_path = path;
    g_opened_lib = nullptr;
    the_collector()->set_event_hook(open_before_the_stop, nullptr);
    collect();
    the_collector()->set_event_hook(nullptr, nullptr);
    unsetenv("ADSM_GC_TEST_LIB_ADOPT");
    ASSERT_NE(g_opened_lib, nullptr) << dlerror();
    auto adopted = reinterpret_cast<void **(*)()>(dlsym(g_opened_lib, "gc_test_lib_adopted"));
    ASSERT_NE(adopted, nullptr);
    for (int i = 0; i < 50000; ++i) adsmGcAlloc(32 * sizeof(uint64_t));  // would reuse it, were it freed
    collect();
    const auto *o = static_cast<const uint64_t *>(*adopted());
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(adsmGcSize(o), 32 * sizeof(uint64_t)) << "the object the library holds was freed";
    for (int i = 0; i < 32; ++i) EXPECT_EQ(o[i], kAdopted + i) << "word " << i << " was reused";
    *adopted() = nullptr;
    dlclose(g_opened_lib);
    unlink(path);
}
