// The kernel-side allocator (adsm_gc_kernel.h) hammered by many threads on
// ordinary memory, and the runtime's reading of what it left
// (gc/kernel_heap_layout.h): every allocation that succeeded is found once,
// whole, at its size; none that failed is; buffers that overflowed are
// taken back at their last good top; and eden adds up.
#include <adsm_gc_kernel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gc/kernel_heap_layout.h"

using adsm::gc::KernelHeapLayout;
using adsm::gc::KernelHeapReport;

namespace {

struct Obj {
    uint64_t offset, bytes;
    bool operator<(const Obj &o) const { return offset < o.offset; }
    bool operator==(const Obj &o) const { return offset == o.offset && bytes == o.bytes; }
};

// A heap laid out in malloc'd memory, as the runtime lays one out in shared memory.
struct TestHeap {
    KernelHeapLayout l;
    uint8_t *mem = nullptr;
    TestHeap(size_t budget, size_t tlab, unsigned tlabs) {
        adsmGcKernelHeapOptions o{tlab, tlabs};
        EXPECT_EQ(adsm::gc::plan_kernel_heap(budget, &o, &l), adsmSuccess);
        mem = static_cast<uint8_t *>(aligned_alloc(4096, l.total_bytes));
        memset(mem, 0xa5, l.total_bytes);  // stale bytes, as reused pages hold
        adsm::gc::format_kernel_heap(l, base(), mem);
        memset(mem + l.bitmap_off, 0, l.bitmap_bytes);
    }
    ~TestHeap() { free(mem); }
    uintptr_t base() const { return reinterpret_cast<uintptr_t>(mem); }
    adsmGcKernelHeap *heap() const { return reinterpret_cast<adsmGcKernelHeap *>(mem); }
    std::vector<Obj> parse(KernelHeapReport *r) const {
        std::vector<Obj> out;
        adsm::gc::parse_kernel_heap(l, base(), mem, r, [](void *v, uint64_t off, uint64_t n) {
            static_cast<std::vector<Obj> *>(v)->push_back(Obj{off, n});
        }, &out);
        return out;
    }
};

uint64_t round16(uint64_t n) { return n ? (n + 15) & ~uint64_t(15) : 16; }

struct Made {
    std::vector<Obj> objs;
    uint64_t nulls = 0, null_bytes = 0;
};

// `threads` threads, each its own block, `per_thread` allocations of random sizes.
std::vector<Made> hammer(TestHeap &t, unsigned threads, unsigned per_thread, unsigned max_size) {
    std::vector<Made> made(threads);
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < threads; ++i)
        ts.emplace_back([&, i] {
            std::mt19937 rng(i + 1);
            for (unsigned k = 0; k < per_thread; ++k) {
                size_t size = rng() % max_size;  // 0 included: a granule, as malloc(0) gives an address
                auto *p = static_cast<uint64_t *>(adsmGcKernelAllocInBlock(t.heap(), i, size));
                if (!p) {
                    made[i].nulls++;
                    made[i].null_bytes += size;
                    continue;
                }
                uint64_t n = round16(size);
                for (uint64_t w = 0; w < n / 8; ++w) ASSERT_EQ(p[w], 0u) << "not zeroed";
                for (uint64_t w = 0; w < n / 8; ++w) p[w] = (uint64_t(i) << 32 | k) ^ w;
                made[i].objs.push_back(Obj{reinterpret_cast<uintptr_t>(p) - (t.base() + t.l.eden_off), n});
                if (k % 64 == 0) std::this_thread::yield();  // interleave more on few cores
            }
        });
    for (auto &th : ts) th.join();
    return made;
}

void expect_intact(const TestHeap &t, const std::vector<Made> &made) {
    for (size_t i = 0; i < made.size(); ++i)
        for (const Obj &o : made[i].objs) {
            auto *p = reinterpret_cast<const uint64_t *>(t.base() + t.l.eden_off + o.offset);
            ASSERT_EQ(p[0] >> 32, i) << "object at +" << o.offset << " was overwritten by another thread's";
            for (uint64_t w = 1; w < o.bytes / 8; ++w)
                ASSERT_EQ(p[w], p[0] ^ w) << "object at +" << o.offset << " was overwritten at word " << w;
        }
}

}  // namespace

TEST(GcKernelHeapLayout, PlansAndRefusesBadBudgets) {
    KernelHeapLayout l;
    ASSERT_EQ(adsm::gc::plan_kernel_heap(1 << 20, nullptr, &l), adsmSuccess);
    EXPECT_EQ(l.eden_bytes, 1u << 20);
    EXPECT_EQ(l.tlab_bytes, 4096u);  // 1 MiB / 256
    EXPECT_EQ(l.tlabs, 64u);
    EXPECT_EQ(l.records, 64u + 256u);
    EXPECT_EQ(l.eden_off % 4096, 0u);
    EXPECT_GE(l.eden_off, l.meta_bytes());
    EXPECT_EQ(l.bitmap_bytes, (1u << 20) / 16 / 4);  // 2 bits per granule
    ASSERT_EQ(adsm::gc::plan_kernel_heap(100, nullptr, &l), adsmSuccess);
    EXPECT_EQ(l.eden_bytes, 112u);
    EXPECT_EQ(l.tlab_bytes, 112u);  // never larger than eden
    EXPECT_EQ(l.tlabs, 1u);

    EXPECT_EQ(adsm::gc::plan_kernel_heap(0, nullptr, &l), adsmErrorInvalidValue);
    EXPECT_EQ(adsm::gc::plan_kernel_heap(SIZE_MAX, nullptr, &l), adsmErrorSizeOverflow);
    adsmGcKernelHeapOptions big_tlab{8192, 0};
    EXPECT_EQ(adsm::gc::plan_kernel_heap(4096, &big_tlab, &l), adsmErrorInvalidValue);
    adsmGcKernelHeapOptions many{0, 1u << 20};
    EXPECT_EQ(adsm::gc::plan_kernel_heap(4096, &many, &l), adsmErrorInvalidValue);
}

TEST(GcKernelHeapLayout, EveryAllocationIsFoundOnceAndWhole) {
    // Eight blocks on two buffers of 256 bytes: buffers overflow all the
    // time, often with several threads past the end at once.
    TestHeap t(8 << 20, 256, 2);
    auto made = hammer(t, 8, 4000, 300);
    KernelHeapReport r;
    std::vector<Obj> found = t.parse(&r);

    std::vector<Obj> want;
    uint64_t nulls = 0;
    for (auto &m : made) {
        want.insert(want.end(), m.objs.begin(), m.objs.end());
        nulls += m.nulls;
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(nulls, 0u) << "eden was large enough for every allocation";
    EXPECT_EQ(r.dropped, 0u);
    ASSERT_EQ(found.size(), want.size());
    EXPECT_TRUE(found == want) << "the objects read back differ from those handed out";
    for (size_t i = 1; i < found.size(); ++i)
        ASSERT_LE(found[i - 1].offset + found[i - 1].bytes, found[i].offset) << "overlapping objects";
    expect_intact(t, made);

    uint64_t bytes = 0;
    for (const Obj &o : want) bytes += o.bytes;
    EXPECT_EQ(r.objects, want.size());
    EXPECT_EQ(r.bytes, bytes);
    EXPECT_GT(r.overflows, 100u);
    EXPECT_GT(r.tlabs, r.overflows);  // some buffers were still open at the end
    EXPECT_GT(r.eden_objects, 0u);    // objects over 256 bytes, and threads that did not wait for a refill
    // Eden is objects, unused ends of buffers, and the part never handed out.
    EXPECT_EQ(r.bytes + r.unused_bytes, t.l.eden_bytes);
}

TEST(GcKernelHeapLayout, ExhaustedEdenReturnsNullAndCountsIt) {
    TestHeap t(64 << 10, 512, 4);
    auto made = hammer(t, 6, 2000, 100);
    KernelHeapReport r;
    std::vector<Obj> found = t.parse(&r);
    uint64_t ok = 0, nulls = 0, null_bytes = 0;
    for (auto &m : made) {
        ok += m.objs.size();
        nulls += m.nulls;
        null_bytes += m.null_bytes;
    }
    EXPECT_GT(nulls, 0u);
    EXPECT_EQ(r.failed, nulls);
    EXPECT_EQ(r.failed_bytes, null_bytes);
    EXPECT_EQ(r.too_large, 0u);
    EXPECT_EQ(found.size(), ok);
    EXPECT_EQ(r.dropped, 0u);
    EXPECT_EQ(r.bytes + r.unused_bytes, t.l.eden_bytes);
    // Full means full: left over are the open buffers' ends, ends of
    // overflowed buffers shorter than the largest object (112 bytes), and
    // less than that of eden.
    EXPECT_LT(r.unused_bytes, 4 * 512 + (r.tlabs + 1) * 112);
    expect_intact(t, made);

    EXPECT_EQ(adsmGcKernelAllocInBlock(t.heap(), 0, (64 << 10) + 1), nullptr);
    t.parse(&r);
    EXPECT_EQ(r.too_large, 1u);
}

TEST(GcKernelHeapLayout, ClosedHeapRefusesAndCounts) {
    TestHeap t(4096, 0, 0);
    EXPECT_NE(adsmGcKernelAllocInBlock(t.heap(), 0, 32), nullptr);
    t.heap()->state = ADSM_GC_KERNEL_HEAP_CLOSED;
    EXPECT_EQ(adsmGcKernelAllocInBlock(t.heap(), 0, 32), nullptr);
    EXPECT_EQ(adsmGcKernelAllocInBlock(t.heap(), 1, 32), nullptr);
    KernelHeapReport r;
    EXPECT_EQ(t.parse(&r).size(), 1u);
    EXPECT_EQ(r.late, 2u);
    EXPECT_EQ(r.failed, 0u);
}

TEST(GcKernelHeapLayout, HalfRecordedObjectsAreLeftOut) {
    TestHeap t(4096, 1024, 1);
    void *a = adsmGcKernelAllocInBlock(t.heap(), 0, 64);
    void *b = adsmGcKernelAllocInBlock(t.heap(), 0, 64);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    // A kernel that stopped between the two halves of recording a third object...
    auto *bitmap = reinterpret_cast<uint64_t *>(t.mem + t.l.bitmap_off);
    uint64_t third = (reinterpret_cast<uintptr_t>(b) + 64 - t.base() - t.l.eden_off) / 16;
    bitmap[third / 32] |= uint64_t(1) << (2 * (third % 32));
    // ...and a bit set past the buffer's top, where nothing was handed out.
    uint64_t beyond = third + 40;
    bitmap[beyond / 32] |= uint64_t(3) << (2 * (beyond % 32));
    KernelHeapReport r;
    std::vector<Obj> found = t.parse(&r);
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0].bytes, 64u);
    EXPECT_EQ(found[1].bytes, 64u);
    EXPECT_EQ(r.dropped, 2u);
}
