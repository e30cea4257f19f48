// A randomized mutator against a reference model: a graph of collected
// objects with embedded pointers, changed by CPU threads and by kernels,
// with collections at random points.  After every collection each object the
// model says is reachable must be intact, with exactly the edges the model
// has.  (A conservative collector may keep more than is reachable; it must
// never free or reuse what is.)
#include <adsm.h>
#include <adsm.hpp>
#include <adsm_gc_kernel.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu/doubles/fake_module.hpp"

namespace {

constexpr int kEdges = 3;
constexpr int kRoots = 32;
constexpr uint64_t kCheck = 0x9e3779b97f4a7c15ull;

struct Obj {
    uint64_t id;
    uint64_t check;
    Obj *edge[kEdges];
    uint64_t pad[2];  // objects of two size classes
};

struct Model {
    std::unordered_map<uint64_t, std::array<uint64_t, kEdges>> edges;  // id -> edge ids (0: none)
    uint64_t roots[kRoots] = {};
};

// A kernel applying edge changes: triples (object, edge index, target).
// With `fresh`, the target is an object the kernel allocates, with that id,
// whose first edge goes to `to`.
struct Change {
    Obj *from;
    uint64_t k;
    Obj *to;
    uint64_t fresh;
};
void apply_changes(const adsm::thread_index &t, Change *changes, unsigned n, adsmGcKernelHeap *heap) {
    unsigned i = static_cast<unsigned>(adsm::global_x(t));
    if (i >= n) return;
    Obj *to = changes[i].to;
    if (changes[i].fresh) {
        auto *o = static_cast<Obj *>(adsmGcKernelAlloc(heap, &t, changes[i].fresh % 2 ? sizeof(Obj) : sizeof(Obj) - 16));
        if (!o) return;  // the host finds the edge unchanged and fails the check
        o->id = changes[i].fresh;
        o->check = o->id * kCheck;
        o->edge[0] = to;
        to = o;
    }
    changes[i].from->edge[changes[i].k] = to;
}

class Mutator {
public:
    Mutator(uint64_t seed, uint64_t id_base, bool kernels)
        : rng_(seed), next_id_(id_base), kernels_(kernels), roots_(static_cast<Obj **>(calloc(kRoots, sizeof(Obj *)))) {
        EXPECT_EQ(adsmGcAddRoots(roots_, kRoots * sizeof(Obj *)), adsmSuccess);
    }
    ~Mutator() {
        EXPECT_EQ(adsmGcRemoveRoots(roots_, kRoots * sizeof(Obj *)), adsmSuccess);
        free(roots_);
    }

    void run(int steps, int collect_every) {
        for (int s = 0; s < steps; ++s) {
            unsigned op = rng_() % 100;
            if (op < 30) make_root();
            else if (op < 75) set_edge();
            else if (op < 82) clear_root();
            else if (op < 90 && kernels_) kernel_changes();
            else garbage();
            if (rng_() % collect_every == 0) {
                collect();
                check();
                if (::testing::Test::HasFatalFailure()) return;
            }
        }
        check();
    }

private:
    // Three of four collections minor (full ones where those are off).
    void collect() {
        ASSERT_EQ(rng_() % 4 ? adsmGcCollectMinor() : adsmGcCollect(), adsmSuccess) << adsmGetLastErrorDetail();
    }
    Obj *alloc() {
        auto *o = static_cast<Obj *>(adsmGcAlloc(rng_() % 2 ? sizeof(Obj) : sizeof(Obj) - 16));
        EXPECT_NE(o, nullptr);
        o->id = next_id_++;
        o->check = o->id * kCheck;
        model_.edges[o->id] = {};
        objs_[o->id] = o;
        return o;
    }
    // A random object the model says is reachable (walking from a root).
    Obj *pick() {
        uint64_t r = model_.roots[rng_() % kRoots];
        if (!r) return nullptr;
        int hops = static_cast<int>(rng_() % 6);
        for (int h = 0; h < hops; ++h) {
            uint64_t next = model_.edges[r][rng_() % kEdges];
            if (!next) break;
            r = next;
        }
        return objs_[r];
    }
    void make_root() {
        unsigned r = rng_() % kRoots;
        Obj *o = alloc();
        roots_[r] = o;
        model_.roots[r] = o->id;
    }
    void clear_root() {
        unsigned r = rng_() % kRoots;
        roots_[r] = nullptr;
        model_.roots[r] = 0;
    }
    void set_edge() {
        Obj *from = pick();
        if (!from) return;
        Obj *to = rng_() % 4 ? (rng_() % 2 ? pick() : alloc()) : nullptr;
        unsigned k = rng_() % kEdges;
        if (rng_() % 4) {
            from->edge[k] = to;
        } else {
            // The runtime writes for the program, where the kernel's write
            // tracking does not see it: minor collections must still.
            ASSERT_EQ(adsmMemcpy(&from->edge[k], &to, sizeof to), adsmSuccess) << adsmGetLastErrorDetail();
        }
        model_.edges[from->id][k] = to ? to->id : 0;
    }
    void kernel_changes() {
        static auto k = adsm_test::device_kernel<apply_changes>("gc.mutator.apply_changes");
        unsigned n = 1 + rng_() % 16;
        auto *changes = static_cast<Change *>(adsmGcAlloc(n * sizeof(Change)));  // holds pointers: scanned
        ASSERT_NE(changes, nullptr);
        unsigned used = 0;
        for (unsigned i = 0; i < n; ++i) {
            Obj *from = pick();
            if (!from) continue;
            // Targets a kernel links in may be fresh objects only it points to
            // once the CPU lets go of them, or objects the kernel allocates.
            Obj *to = rng_() % 3 ? alloc() : pick();
            uint64_t fresh = rng_() % 3 == 0 ? next_id_++ : 0;
            changes[used++] = Change{from, rng_() % kEdges, to, fresh};
        }
        // The changes apply in order on the CPU model; on the device two
        // changes of one edge would race, so keep the last of each.
        std::vector<bool> keep(used, true);
        for (unsigned i = 0; i < used; ++i)
            for (unsigned j = i + 1; j < used; ++j)
                if (changes[i].from == changes[j].from && changes[i].k == changes[j].k) keep[i] = false;
        unsigned m = 0;
        for (unsigned i = 0; i < used; ++i)
            if (keep[i]) changes[m++] = changes[i];
        for (unsigned i = 0; i < m; ++i) {
            uint64_t to = changes[i].to ? changes[i].to->id : 0;
            if (changes[i].fresh) {
                model_.edges[changes[i].fresh] = {to, 0, 0};
                to = changes[i].fresh;
            }
            model_.edges[changes[i].from->id][changes[i].k] = to;
        }
        adsmGcKernelHeap *heap = nullptr;
        ASSERT_EQ(adsmGcKernelHeapCreate(16 * sizeof(Obj), nullptr, &heap), adsmSuccess) << adsmGetLastErrorDetail();
        k(1, 32, changes, m, heap);
        if (rng_() % 2) collect();  // while the kernel may run
        adsm::sync();
        ASSERT_EQ(adsmGcKernelHeapCheck(heap), adsmSuccess) << adsmGetLastErrorDetail();
        // The kernel's objects are known by where it linked them.
        for (unsigned i = 0; i < m; ++i) {
            if (!changes[i].fresh) continue;
            Obj *o = changes[i].from->edge[changes[i].k];
            ASSERT_NE(o, nullptr);
            ASSERT_EQ(o->id, changes[i].fresh);
            objs_[o->id] = o;
        }
    }
    void garbage() {
        for (int i = 0, n = static_cast<int>(rng_() % 200); i < n; ++i) adsmGcAlloc(16 + rng_() % 3000);
    }

    void check() {
        std::unordered_map<uint64_t, bool> seen;
        std::vector<uint64_t> todo;
        for (uint64_t r : model_.roots)
            if (r) todo.push_back(r);
        while (!todo.empty()) {
            uint64_t id = todo.back();
            todo.pop_back();
            if (seen[id]) continue;
            seen[id] = true;
            Obj *o = objs_[id];
            ASSERT_EQ(o->id, id) << "a reachable object was reused";
            ASSERT_EQ(o->check, id * kCheck) << "a reachable object was overwritten";
            for (int k = 0; k < kEdges; ++k) {
                uint64_t want = model_.edges[id][k];
                ASSERT_EQ(o->edge[k] ? o->edge[k]->id : 0, want) << "object " << id << " edge " << k;
                if (want) todo.push_back(want);
            }
        }
        // Forget what the model can no longer reach: the collector may reuse it.
        for (auto it = objs_.begin(); it != objs_.end();) {
            if (seen.count(it->first)) {
                ++it;
            } else {
                model_.edges.erase(it->first);
                it = objs_.erase(it);
            }
        }
        for (int r = 0; r < kRoots; ++r) ASSERT_EQ(roots_[r] ? roots_[r]->id : 0, model_.roots[r]);
    }

    std::mt19937_64 rng_;
    uint64_t next_id_;
    bool kernels_;
    Obj **roots_;  // registered roots, in memory the collector does not scan otherwise
    Model model_;
    std::unordered_map<uint64_t, Obj *> objs_;
};

uint64_t seed() {
    const char *s = getenv("ADSM_MODEL_SEED");
    return s ? strtoull(s, nullptr, 10) : 1;
}

// ADSM_TEST_MUTATOR_STEPS: the one thread's steps (4000; each of three
// threads takes half), fewer where every collection is a full one marked
// beside the program under the sanitizers.
int steps() {
    const char *s = getenv("ADSM_TEST_MUTATOR_STEPS");
    return s ? atoi(s) : 4000;
}

}  // namespace

TEST(GcMutatorTest, OneThreadWithKernels) { Mutator(seed(), 1, true).run(steps(), 50); }

TEST(GcMutatorTest, ThreadsWithTheirOwnGraphs) {
    std::vector<std::thread> ts;
    const int n = steps() / 2;
    for (uint64_t t = 0; t < 3; ++t)
        ts.emplace_back([t, n] { Mutator(seed() * 31 + t, (t + 1) << 40, t == 0).run(n, 40); });
    for (auto &t : ts) t.join();
}
