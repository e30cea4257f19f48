// Minor collections: old objects are kept without being traced, so every
// way a pointer to a young object can reach an old one must be seen: a CPU
// store, the runtime writing for the program (adsmMemcpy), and a kernel.
// And the point of them: a large heap nobody changed is not rescanned.
// (ADSM_GC_GENERATIONAL=off runs check the same with full collections.)
#include <adsm.h>
#include <adsm.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gpu/doubles/fake_module.hpp"

namespace {

constexpr uint64_t kCheck = 0x9e3779b97f4a7c15ull;

struct Cell {
    uint64_t id;
    uint64_t check;
    Cell *next;
    Cell *other;
};

Cell *cell(uint64_t id) {
    auto *c = static_cast<Cell *>(adsmGcAlloc(sizeof(Cell)));
    if (!c) return nullptr;
    c->id = id;
    c->check = id * kCheck;
    return c;
}

bool intact(const Cell *c, uint64_t id) { return c && c->id == id && c->check == id * kCheck; }

// A list of n cells (ids first, first+1, ...), built in a frame of its own.
__attribute__((noinline)) Cell *list(int n, uint64_t first) {
    Cell *head = nullptr;
    for (int i = n - 1; i >= 0; --i) {
        Cell *c = cell(first + static_cast<uint64_t>(i));
        c->next = head;
        head = c;
    }
    return head;
}

long length(const Cell *c, uint64_t first) {
    long n = 0;
    for (; c; c = c->next, ++n)
        if (!intact(c, first + static_cast<uint64_t>(n))) return -1;
    return n;
}

// Garbage that reuses whatever a collection freed: a young object the
// collector wrongly let go is overwritten here.
void churn(size_t bytes) {
    for (size_t done = 0; done < bytes; done += 32) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(32));
        ASSERT_NE(p, nullptr);
        for (int i = 0; i < 4; ++i) p[i] = 0xdeadbeefdeadbeefull;
    }
}

__attribute__((noinline)) void clobber_stack() {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

adsmGcStats stats() {
    adsmGcStats s;
    EXPECT_EQ(adsmGcGetStats(&s), adsmSuccess);
    return s;
}

void full() { ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail(); }

bool generational_off() {
    const char *v = getenv("ADSM_GC_GENERATIONAL");
    return v && !strcmp(v, "off");
}

// A minor collection, checked to be one; with ADSM_GC_GENERATIONAL=off, a
// full one, checked to be that.
void minor() {
    uint64_t before = stats().minor_collections;
    ASSERT_EQ(adsmGcCollectMinor(), adsmSuccess) << adsmGetLastErrorDetail();
    if (generational_off()) {
        ASSERT_EQ(stats().minor_collections, before) << "a minor collection ran with ADSM_GC_GENERATIONAL=off";
        ASSERT_FALSE(stats().generational);
    } else {
        ASSERT_EQ(stats().minor_collections, before + 1) << "a full collection ran instead";
    }
}

// Both modes run every test: with full collections only, what survives a
// minor collection must survive a full one all the more.
#define START()                                                                            \
    do {                                                                                   \
        ASSERT_EQ(adsmGcCollect(), adsmSuccess);                                           \
        if (!generational_off()) {                                                         \
            ASSERT_TRUE(stats().generational) << "this kernel offers write tracking (6.7+)"; \
        }                                                                                  \
    } while (0)

Cell **g_old = nullptr;  // the root of the old structure each test builds

// Old cells, then a young one linked from an old one by `store`, with no
// other reference; collections must keep it through minor and full ones.
template <class Store>
void young_child_of_old(Store &&store) {
    g_old = static_cast<Cell **>(malloc(sizeof(Cell *)));
    *g_old = list(2000, 1);
    ASSERT_EQ(adsmGcAddRoots(g_old, sizeof(Cell *)), adsmSuccess);
    full();  // the list is old now
    {
        Cell *young = list(50, 100000);
        Cell *target = *g_old;
        for (int i = 0; i < 1500; ++i) target = target->next;  // deep in the list, on an old page
        store(target, young);
    }
    clobber_stack();
    for (int round = 0; round < 3; ++round) {
        minor();
        churn(1 << 20);
    }
    Cell *target = *g_old;
    for (int i = 0; i < 1500; ++i) target = target->next;
    EXPECT_EQ(length(target->other, 100000), 50) << "a young object only an old one reached was freed";
    full();
    churn(1 << 20);
    EXPECT_EQ(length(target->other, 100000), 50);
    EXPECT_EQ(length(*g_old, 1), 2000);
    ASSERT_EQ(adsmGcRemoveRoots(g_old, sizeof(Cell *)), adsmSuccess);
    free(g_old);
}

void link_kernel(const adsm::thread_index &, Cell *from, Cell *to) { from->other = to; }

std::atomic<int> g_finalized{0};
void count(void *, void *) { g_finalized.fetch_add(1); }

__attribute__((noinline)) void finalizable_garbage(int n) {
    for (int i = 0; i < n; ++i) {
        void *p = adsmGcAlloc(48);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(adsmGcRegisterFinalizer(p, count, nullptr), adsmSuccess);
    }
}

__attribute__((noinline)) Cell *finalizable_list(int n) {
    Cell *head = list(n, 1);
    for (Cell *c = head; c; c = c->next) EXPECT_EQ(adsmGcRegisterFinalizer(c, count, nullptr), adsmSuccess);
    return head;
}

}  // namespace

TEST(GcGenerationalTest, AYoungObjectStoredByTheCpuIntoAnOldOneSurvives) {
    START();
    young_child_of_old([](Cell *old, Cell *young) { old->other = young; });
}

TEST(GcGenerationalTest, AYoungObjectTheRuntimeCopiedIntoAnOldOneSurvives) {
    START();
    // adsmMemcpy writes through the runtime's own view, which the kernel's
    // write tracking does not see.
    young_child_of_old([](Cell *old, Cell *young) {
        ASSERT_EQ(adsmMemcpy(&old->other, &young, sizeof young), adsmSuccess) << adsmGetLastErrorDetail();
    });
}

TEST(GcGenerationalTest, AYoungObjectAKernelLinkedIntoAnOldOneSurvives) {
    START();
    young_child_of_old([](Cell *old, Cell *young) {
        static auto k = adsm_test::device_kernel<link_kernel>("gc.generational.link_kernel");
        k(1, 1, old, young);
        adsm::sync();
    });
}

TEST(GcGenerationalTest, AYoungObjectLinkedByAKernelStillRunningSurvives) {
    START();
    // The minor collection runs before the sync: the kernel's write may land
    // on the device after the collection looked.
    young_child_of_old([](Cell *old, Cell *young) {
        static auto k = adsm_test::device_kernel<link_kernel>("gc.generational.link_kernel");
        k(1, 1, old, young);
        minor();
        adsm::sync();
    });
}

TEST(GcGenerationalTest, MinorCollectionsFreeYoungGarbageAndLeaveOldGarbageToFullOnes) {
    START();
    g_finalized = 0;
    finalizable_garbage(2000);
    clobber_stack();
    minor();
    minor();
    EXPECT_GE(g_finalized.load(), 1900) << "young garbage outlived minor collections";

    g_old = static_cast<Cell **>(malloc(sizeof(Cell *)));
    *g_old = finalizable_list(1000);
    ASSERT_EQ(adsmGcAddRoots(g_old, sizeof(Cell *)), adsmSuccess);
    full();  // old now
    g_finalized = 0;
    *g_old = nullptr;
    clobber_stack();
    minor();
    minor();
    if (generational_off()) {
        EXPECT_GE(g_finalized.load(), 950) << "old garbage outlived full collections";
    } else {
        EXPECT_EQ(g_finalized.load(), 0) << "a minor collection traced old objects";
        full();
        full();
        EXPECT_GE(g_finalized.load(), 950);
    }
    ASSERT_EQ(adsmGcRemoveRoots(g_old, sizeof(Cell *)), adsmSuccess);
    free(g_old);
}

TEST(GcGenerationalTest, AnUnchangedHeapIsNotRescanned) {
    START();
    g_old = static_cast<Cell **>(malloc(sizeof(Cell *)));
    *g_old = list(200000, 1);  // about 6 MiB of old cells
    ASSERT_EQ(adsmGcAddRoots(g_old, sizeof(Cell *)), adsmSuccess);
    full();
    minor();  // pages that became old since the last collection settle
    Cell *young = cell(999999999);
    (*g_old)->next->other = young;  // one written page
    young = nullptr;
    clobber_stack();
    minor();
    adsmGcStats s = stats();
    EXPECT_LE(s.written_pages, 8u) << "a minor collection rescanned pages nobody wrote";
    EXPECT_TRUE(intact((*g_old)->next->other, 999999999));
    EXPECT_EQ(length(*g_old, 1), 200000);
    ASSERT_EQ(adsmGcRemoveRoots(g_old, sizeof(Cell *)), adsmSuccess);
    free(g_old);
}

TEST(GcGenerationalTest, StatisticsTellMinorFromFull) {
    START();
    adsmGcStats a = stats();
    minor();
    full();
    adsmGcStats b = stats();
    EXPECT_EQ(b.collections, a.collections + 2);
    EXPECT_EQ(b.minor_collections, a.minor_collections + (generational_off() ? 0 : 1));
    EXPECT_GE(b.minor_pause_ns, a.minor_pause_ns);
    EXPECT_GT(b.max_full_pause_ns, 0u);
    EXPECT_GE(b.max_pause_ns, b.max_minor_pause_ns);
}
