// Full collections that mark while the program runs (ADSM_GC_CONCURRENT):
// pointers the program moves behind the markers' backs must be found when
// the collection finishes.  CTest runs these with every automatic
// collection full (ADSM_GC_FULL_EVERY=1) and a small trigger, so that each
// is concurrent (tests/CMakeLists.txt).
#include <adsm.h>
#include <adsm.hpp>
#include <adsm_gc_kernel.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "api/runtime.h"
#include "gc/collector.h"
#include "gpu/doubles/fake_module.hpp"

namespace {

using adsm::gc::Collector;

constexpr uint64_t kCheck = 0x9e3779b97f4a7c15ull;
constexpr int kLists = 32;
constexpr int kLength = 8192;  // long enough that markers take a while down each
constexpr int kAnchors = 8;
constexpr int kSlots = 64;

struct Cell {
    uint64_t id;
    uint64_t check;
    Cell *next;
    uint64_t pad;
};

struct Anchor {
    Cell *slot[kSlots];
};

// The roots: list heads, and anchors whose slots receive what is cut off.
// In this order: a marker pops the last object the roots reached first,
// so it scans the anchors, then each list to its end.
struct Roots {
    Cell *heads[kLists];
    Anchor *anchors[kAnchors];
} g_roots;
Cell *(&g_heads)[kLists] = g_roots.heads;
Anchor *(&g_anchors)[kAnchors] = g_roots.anchors;
int g_used = 0;                        // anchor slots filled so far
std::atomic<int> g_moves{0};           // hooks that moved pointers
std::atomic<uint64_t> g_seed{1};

Collector *the_collector() {
    adsm::Runtime *rt = nullptr;
    Collector *c = nullptr;
    if (adsm::runtime(&rt) != adsmSuccess || adsm::collector(*rt, &c) != adsmSuccess) return nullptr;
    return c;
}

// Where each list is cut next, complemented: as roots, the cells would be
// scanned first, what follows them marked before the cut.
uintptr_t g_cut_at[kLists];

// Picks g_cut_at: a cell of each list (of four or more) in its second half.
void choose_cuts(std::minstd_rand &rng) {
    for (int i = 0; i < kLists; ++i) {
        int n = 0;
        for (Cell *c = g_heads[i]; c; c = c->next) ++n;
        g_cut_at[i] = ~uintptr_t(0);
        if (n < 4) continue;
        Cell *cut = g_heads[i];
        for (int k = 1 + static_cast<int>(rng() % static_cast<unsigned>(n / 2)) + n / 2 - 1; k > 1; --k) cut = cut->next;
        g_cut_at[i] = ~reinterpret_cast<uintptr_t>(cut);
    }
}

// While the markers run (the heap's lock held, nothing allocated):
// the rest of every list past its cut moves into an anchor, which the
// markers have scanned first (the roots reach it at once, last), and the
// list is cut where the markers have most likely not been yet.  Then the
// next cuts are chosen, the markers well on their way.
void move_behind_markers(Collector::Event e, void *) {
    if (e != Collector::Event::marking_concurrently) return;
    // The markers wake up and take the anchors first (the last roots
    // pushed); a list takes them milliseconds.
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    for (int i = 0; i < kLists && g_used < kAnchors * kSlots; ++i) {
        auto *cut = reinterpret_cast<Cell *>(~g_cut_at[i]);
        if (!cut || !cut->next) continue;
        g_anchors[g_used / kSlots]->slot[g_used % kSlots] = cut->next;
        ++g_used;
        cut->next = nullptr;
    }
    std::minstd_rand rng(static_cast<unsigned>(g_seed.fetch_add(1)));
    choose_cuts(rng);
    g_moves.fetch_add(1);
}

// Every cell, once, intact: the count and the sum of ids.  A cell the
// collector freed ends its chain (its memory may be gone: not read).
void expect_every_cell(uint64_t cells) {
    uint64_t seen = 0, ids = 0, damaged = 0, freed = 0;
    Collector *col = the_collector();
    auto walk = [&](const Cell *c) {
        for (; c; c = c->next, ++seen) {
            Collector::ObjectInfo info;
            if (!col->describe(c, &info) || info.base != c) {
                ++freed;
                return;
            }
            if (c->check != c->id * kCheck) ++damaged;
            ids += c->id;
        }
    };
    for (Cell *h : g_heads) walk(h);
    for (Anchor *a : g_anchors)
        for (Cell *c : a->slot) walk(c);
    EXPECT_EQ(freed, 0u) << "chains lead to cells the collector freed";
    EXPECT_EQ(damaged, 0u) << "cells were freed and reused";
    EXPECT_EQ(seen, cells);
    EXPECT_EQ(ids, cells * (cells - 1) / 2);
}

// A collected cell with this id in front of `next`; nullptr if none.
Cell *new_cell(uint64_t id, Cell *next) {
    auto *cell = static_cast<Cell *>(adsmGcAlloc(sizeof(Cell)));
    if (!cell) return nullptr;
    cell->id = id;
    cell->check = id * kCheck;
    cell->next = next;
    return cell;
}

// Garbage of the cells' size, which reuses what a collection freed of them.
void churn(size_t bytes) {
    for (size_t done = 0; done < bytes; done += sizeof(Cell)) {
        auto *p = static_cast<uint64_t *>(adsmGcAlloc(sizeof(Cell)));
        ASSERT_NE(p, nullptr);
        for (size_t i = 0; i < sizeof(Cell) / 8; ++i) p[i] = 0xdeadbeefdeadbeefull;
    }
}

}  // namespace

namespace {
// Events as they come (the hook must not allocate while the world is stopped).
std::atomic<int> g_event_count{0};
Collector::Event g_event_log[4096];
void log_event(Collector::Event e, void *) {
    int i = g_event_count.fetch_add(1);
    if (i < 4096) g_event_log[i] = e;
}
}  // namespace

// A concurrent start stops the world as a collection does, and says so with
// the same events (bdwgc programs time their pauses by them); a collection's
// own start and end stay the finishing collection's.
TEST(GcConcurrentTest, AConcurrentStartReportsItsPause) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail();
    g_event_count = 0;
    c->set_event_hook(log_event, nullptr);
    auto started = [] {
        for (int i = 0; i < std::min(g_event_count.load(), 4096); ++i)
            if (g_event_log[i] == Collector::Event::marking_concurrently) return i;
        return -1;
    };
    for (int round = 0; round < 400 && started() < 0; ++round) churn(1 << 20);
    c->set_event_hook(nullptr, nullptr);
    int at = started();
    ASSERT_GE(at, 4) << "no collection marked while the program ran";
    using E = Collector::Event;
    std::vector<E> pause(g_event_log + at - 4, g_event_log + at);
    EXPECT_EQ(pause, (std::vector<E>{E::stop_world, E::world_stopped, E::restart_world, E::world_restarted}));
}

TEST(GcConcurrentTest, PointersMovedWhileMarkersRunLoseNothing) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail();
    adsmGcStats st;
    ASSERT_EQ(adsmGcGetStats(&st), adsmSuccess);
    ASSERT_TRUE(st.generational) << "this kernel offers write tracking (6.7+), which concurrent marking needs";
    uint64_t id = 0;
    for (Anchor *&a : g_anchors) {
        a = static_cast<Anchor *>(adsmGcAlloc(sizeof(Anchor)));
        ASSERT_NE(a, nullptr);
    }
    for (Cell *&head : g_heads) {
        head = nullptr;
        for (int k = 0; k < kLength; ++k, ++id) {
            head = new_cell(id, head);
            ASSERT_NE(head, nullptr);
        }
    }
    std::minstd_rand rng(3);
    choose_cuts(rng);
    Collector::Usage before, after;
    c->usage(&before);
    c->set_event_hook(move_behind_markers, nullptr);
    // Each concurrent collection moves pointers once; the next one due finishes it.
    for (int round = 0; round < 200 && g_moves.load() < 6; ++round) churn(1 << 20);
    c->set_event_hook(nullptr, nullptr);
    churn(8 << 20);
    c->usage(&after);
    EXPECT_GE(g_moves.load(), 6) << "too few collections marked while the program ran";
    EXPECT_GE(after.concurrent - before.concurrent, 6u);
    EXPECT_EQ(after.abandoned, before.abandoned);
    EXPECT_GT(g_used, kLists);
    expect_every_cell(id);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess);
    churn(4 << 20);
    expect_every_cell(id);
}

// Threads allocate, link and drop lists while collections start and finish
// around them; each checks its own lists.
TEST(GcConcurrentTest, ThreadsChangingTheirListsLoseNothing) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    Collector::Usage before, after;
    c->usage(&before);
    std::atomic<int> failures{0};
    auto worker = [&](int me) {
        std::minstd_rand rng(static_cast<unsigned>(me + 7));
        Cell *lists[8] = {};
        uint64_t first[8] = {}, length[8] = {};
        for (int step = 0; step < 3000; ++step) {
            int i = static_cast<int>(rng() % 8);
            if (rng() % 4 == 0 || !lists[i]) {
                // A new list, dropping the old one: garbage for the collector.
                first[i] = (uint64_t(me) << 40) | (uint64_t(step) << 16);
                length[i] = 1 + rng() % 200;
                Cell *head = nullptr;
                for (uint64_t k = length[i]; k-- > 0;) {
                    head = new_cell(first[i] + k, head);
                    if (!head) {
                        failures.fetch_add(1);
                        return;
                    }
                }
                lists[i] = head;
            } else {
                // Moves list j's tail onto list i's end: old cells now point
                // where others pointed before.
                int j = static_cast<int>(rng() % 8);
                if (j == i || !lists[j]) continue;
                Cell *end = lists[i];
                uint64_t n = 1;
                for (; end->next; end = end->next) ++n;
                if (n != length[i] || end->id != first[i] + length[i] - 1) {
                    failures.fetch_add(1);
                    return;
                }
                // Renumbering keeps the check: the moved cells become i's.
                end->next = lists[j];
                for (Cell *m = lists[j]; m; m = m->next) {
                    if (m->check != m->id * kCheck) failures.fetch_add(1);
                    m->id = first[i] + n++;
                    m->check = m->id * kCheck;
                }
                length[i] = n;
                lists[j] = nullptr;
            }
        }
        for (int i = 0; i < 8; ++i) {
            uint64_t n = 0;
            for (Cell *m = lists[i]; m; m = m->next, ++n)
                if (m->id != first[i] + n || m->check != m->id * kCheck) {
                    failures.fetch_add(1);
                    break;
                }
            if (lists[i] && n != length[i]) failures.fetch_add(1);
        }
    };
    // Again while no collection started marking meanwhile (a machine busy
    // with other work may not get to one in the first round).
    for (int round = 0; round < 20; ++round) {
        std::vector<std::thread> ts;
        for (int t = 0; t < 3; ++t) ts.emplace_back(worker, t + 3 * round);
        for (auto &t : ts) t.join();
        c->usage(&after);
        if (failures.load() || after.concurrent > before.concurrent) break;
    }
    EXPECT_EQ(failures.load(), 0);
    EXPECT_GT(after.concurrent, before.concurrent) << "no collection marked while the program ran";
}

// Threads that allocate faster than the markers trace help them, the world
// running, rather than leave what the markers have not reached to the
// finishing pause.  (CTest runs this alone, with collections due after a
// tenth of the live heap is allocated: long chains, which a marker follows
// one cell at a time, and four threads making garbage outrun it.)
TEST(GcAssistTest, ThreadsThatOutrunTheMarkersHelpThem) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail();
    g_used = 0;
    for (Anchor *&a : g_anchors) {
        a = static_cast<Anchor *>(adsmGcAlloc(sizeof(Anchor)));
        ASSERT_NE(a, nullptr);
    }
    uint64_t id = 0;
    for (Cell *&head : g_heads) {
        head = nullptr;
        for (int k = 0; k < kLength; ++k, ++id) {
            head = new_cell(id, head);
            ASSERT_NE(head, nullptr);
        }
    }
    Collector::Usage before, now;
    c->usage(&before);
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t)
        ts.emplace_back([&] {
            while (!stop.load()) churn(256 << 10);
        });
    // Until a collection has finished after a thread helped.
    uint64_t helped_at = 0;
    for (int round = 0; round < 4000; ++round) {
        churn(256 << 10);
        c->usage(&now);
        if (!helped_at && now.assists > before.assists) helped_at = now.collections;
        if (helped_at && now.collections > helped_at) break;
    }
    stop = true;
    for (auto &t : ts) t.join();
    c->usage(&now);
    EXPECT_GT(now.assists, before.assists) << "no thread helped the markers";
    EXPECT_GT(now.assisted_bytes, before.assisted_bytes);
    EXPECT_GT(now.collections, helped_at) << "no collection finished after a thread helped";
    EXPECT_EQ(now.abandoned, before.abandoned);
    expect_every_cell(id);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess);
    expect_every_cell(id);
}

namespace {

// Kernel i < n links `len` cells with ids first + i*len .. (the last first)
// from a kernel heap, into heads[i].
void kernel_lists(const adsm::thread_index &t, adsmGcKernelHeap *h, Cell **heads, unsigned n, unsigned len,
                  uint64_t first) {
    unsigned i = static_cast<unsigned>(adsm::global_x(t));
    if (i >= n) return;
    Cell *head = nullptr;
    for (unsigned k = 0; k < len; ++k) {
        auto *c = static_cast<Cell *>(adsmGcKernelAlloc(h, &t, sizeof(Cell)));
        if (!c) break;
        c->id = first + uint64_t(i) * len + k;
        c->check = c->id * kCheck;
        c->next = head;
        head = c;
    }
    heads[i] = head;
}

Cell **g_kernel_heads[4];  // roots: the lists of the last rounds

}  // namespace

// Kernels allocate lists from kernel heaps while collections mark with the
// world running: the heaps are adopted, swept and emptied around them.
TEST(GcConcurrentTest, KernelHeapsWhileMarkersRunLoseNothing) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    auto k = adsm_test::device_kernel<kernel_lists>("gc.concurrent.kernel_lists");
    const unsigned n = 256, len = 64;
    Collector::Usage before, after;
    c->usage(&before);
    for (unsigned round = 0; round < 24; ++round) {
        // Round r's lists replace those of round r-4: garbage once adopted.
        auto *heads = static_cast<Cell **>(adsmGcAlloc(n * sizeof(Cell *)));
        ASSERT_NE(heads, nullptr);
        {
            adsm::gc_kernel_heap heap(2 << 20);
            k(n / 64, 64, heap.get(), heads, n, len, uint64_t(round) << 32);
            churn(1 << 20);  // collections while the kernel runs, or before its sync
            adsm::sync();
            heap.check();
        }
        g_kernel_heads[round % 4] = heads;
        churn(1 << 20);
        for (unsigned r = 0; r < 4 && r <= round; ++r) {
            unsigned which = round - r;
            Cell **h = g_kernel_heads[which % 4];
            for (unsigned i = 0; i < n; ++i) {
                uint64_t want = (uint64_t(which) << 32) + uint64_t(i) * len + len;
                unsigned count = 0;
                for (Cell *x = h[i]; x; x = x->next, ++count) {
                    Collector::ObjectInfo info;
                    ASSERT_TRUE(c->describe(x, &info) && info.base == x) << "a kernel's cell was freed";
                    --want;
                    ASSERT_EQ(x->id, want);
                    ASSERT_EQ(x->check, want * kCheck);
                }
                ASSERT_EQ(count, len) << "list " << i << " of round " << which;
            }
        }
    }
    c->usage(&after);
    EXPECT_GT(after.concurrent, before.concurrent) << "no collection marked while the program ran";
    EXPECT_EQ(after.abandoned, before.abandoned);
}

namespace {

void *g_victim = nullptr;  // a root until the markers start
std::atomic<bool> g_started{false};
std::atomic<int> g_victim_finalized{0};

void drop_victim(Collector::Event e, void *) {
    if (e != Collector::Event::marking_concurrently || g_started.load()) return;
    g_victim = nullptr;  // the markers found it from the roots: marked, floating
    g_started = true;
}

__attribute__((noinline)) void make_victim() {
    g_victim = adsmGcAlloc(48);
    ASSERT_NE(g_victim, nullptr);
    ASSERT_EQ(adsmGcRegisterFinalizer(g_victim, [](void *, void *) { g_victim_finalized.fetch_add(1); }, nullptr),
              adsmSuccess);
}

__attribute__((noinline)) void clobber_stack() {
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

}  // namespace

// adsmGcCollect while markers run is a full collection all the same: what
// died after they started is freed, not kept as their marks say.
TEST(GcConcurrentTest, ACollectionAskedForWhileMarkersRunFreesWhatDiedMeanwhile) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(adsmGcCollect(), adsmSuccess);
    make_victim();
    clobber_stack();
    g_started = false;
    c->set_event_hook(drop_victim, nullptr);
    for (size_t n = 0; n < (64u << 20) && !g_started.load(); n += 64) ASSERT_NE(adsmGcAlloc(64), nullptr);
    c->set_event_hook(nullptr, nullptr);
    ASSERT_TRUE(g_started.load()) << "no collection marked while the program ran";
    clobber_stack();
    ASSERT_EQ(adsmGcCollect(), adsmSuccess);
    EXPECT_EQ(g_victim_finalized.load(), 1) << "the collection kept an object that died after the markers started";
}

namespace {
std::atomic<bool> g_marking_started{false};
void note_marking(Collector::Event e, void *) {
    if (e == Collector::Event::marking_concurrently) g_marking_started = true;
}
}  // namespace

// A fork while markers run: the child has none of the parent's threads,
// markers included; it reads the objects and is refused the heap, as any
// fork child is, and the parent's collection finishes as if nothing
// happened.
TEST(GcConcurrentTest, AForkWhileMarkersRunLeavesBothSidesWorking) {
    Collector *c = the_collector();
    ASSERT_NE(c, nullptr);
    Cell *head = nullptr;
    for (uint64_t id = 0; id < 20000; ++id) {
        head = new_cell(id, head);
        ASSERT_NE(head, nullptr);
    }
    g_heads[0] = head;
    g_marking_started = false;
    c->set_event_hook(note_marking, nullptr);
    for (size_t n = 0; n < (64u << 20) && !g_marking_started.load(); n += sizeof(Cell))
        ASSERT_NE(adsmGcAlloc(sizeof(Cell)), nullptr);
    c->set_event_hook(nullptr, nullptr);
    ASSERT_TRUE(g_marking_started.load()) << "no collection marked while the program ran";
    auto intact = [] {
        uint64_t n = 0;
        for (const Cell *x = g_heads[0]; x; x = x->next, ++n)
            if (x->id != 19999 - n || x->check != x->id * kCheck) return false;
        return n == 20000;
    };
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        bool ok = intact();
        ok = ok && adsmGcAlloc(16) == nullptr && adsmGetLastError() == adsmErrorNotSupported;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    churn(4 << 20);  // the collection that finishes it, and more
    EXPECT_TRUE(intact());
    g_heads[0] = nullptr;
}
