#include "gc/kernel_heap_layout.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace adsm::gc {

namespace {

constexpr uint64_t kGranuleBytes = ADSM_GC_KERNEL_GRANULE;
constexpr uint64_t kMaxTlabs = 65536;
// Far beyond any window, and small enough that no size below overflows.
constexpr uint64_t kMaxBudget = uint64_t(1) << 46;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
uint64_t pow2_floor(uint64_t v) { return v ? uint64_t(1) << (63 - __builtin_clzll(v)) : 0; }
uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

struct Tlab {
    uint64_t start, end, used;  // used: the top the buffer is taken back at
};

}  // namespace

Status plan_kernel_heap(size_t budget, const adsmGcKernelHeapOptions *o, KernelHeapLayout *out) {
    if (budget == 0) return fail(adsmErrorInvalidValue, "adsmGcKernelHeapCreate: a budget of 0 bytes");
    if (budget > kMaxBudget)
        return fail(adsmErrorSizeOverflow, "adsmGcKernelHeapCreate: a budget of %zu bytes is more than any heap holds",
                    budget);
    KernelHeapLayout l;
    l.eden_bytes = round_up(budget, kGranuleBytes);
    size_t want_tlab = o ? o->tlab_bytes : 0;
    if (want_tlab > l.eden_bytes)
        return fail(adsmErrorInvalidValue, "adsmGcKernelHeapCreate: a buffer of %zu bytes is larger than the budget (%zu)",
                    want_tlab, budget);
    l.tlab_bytes = want_tlab ? round_up(want_tlab, kGranuleBytes)
                             : std::min<uint64_t>(clamp(pow2_floor(l.eden_bytes / 256), 1024, 65536), l.eden_bytes);
    unsigned want_tlabs = o ? o->tlabs : 0;
    if (want_tlabs > kMaxTlabs)
        return fail(adsmErrorInvalidValue, "adsmGcKernelHeapCreate: %u buffers at once is more than %llu", want_tlabs,
                    static_cast<unsigned long long>(kMaxTlabs));
    l.tlabs = want_tlabs ? want_tlabs : clamp(pow2_floor(l.eden_bytes / (4 * l.tlab_bytes)), 1, 1024);
    l.records = l.tlabs + l.eden_bytes / l.tlab_bytes;
    l.slots_off = round_up(sizeof(adsmGcKernelHeap), 64);
    l.records_off = round_up(l.slots_off + l.tlabs * sizeof(unsigned long long), 64);
    l.bitmap_off = round_up(l.records_off + l.records * sizeof(adsmGcKernelTlab), 64);
    l.bitmap_bytes = round_up(l.eden_bytes / kGranuleBytes, 32) / 32 * sizeof(unsigned long long);
    l.eden_off = round_up(l.bitmap_off + l.bitmap_bytes, 4096);
    l.total_bytes = round_up(l.eden_off + l.eden_bytes, 4096);
    *out = l;
    return adsmSuccess;
}

void format_kernel_heap(const KernelHeapLayout &l, uintptr_t base, uint8_t *out) {
    memset(out, 0, l.bitmap_off);
    adsmGcKernelHeap h{};
    h.magic = ADSM_GC_KERNEL_HEAP_MAGIC;
    h.state = ADSM_GC_KERNEL_HEAP_OPEN;
    h.eden_start = base + l.eden_off;
    h.eden_end = h.eden_start + l.eden_bytes;
    h.tlab_bytes = l.tlab_bytes;
    h.tlabs = l.tlabs;
    h.records = l.records;
    h.slots_at = base + l.slots_off;
    h.records_at = base + l.records_off;
    h.bitmap_at = base + l.bitmap_off;
    h.eden_top = h.eden_start;
    h.next_record = l.tlabs;  // records below are the slots' sentinels
    memcpy(out, &h, sizeof h);
    // Each slot starts at a sentinel of its own, an empty buffer: the block's
    // first allocation overflows it and so fills the slot.
    for (uint64_t i = 0; i < l.tlabs; ++i) {
        unsigned long long sentinel = base + l.records_off + i * sizeof(adsmGcKernelTlab);
        memcpy(out + l.slots_off + i * sizeof sentinel, &sentinel, sizeof sentinel);
    }
}

void parse_kernel_heap(const KernelHeapLayout &l, uintptr_t base, const uint8_t *meta, KernelHeapReport *rep,
                       void (*emit)(void *, uint64_t, uint64_t), void *arg) {
    *rep = KernelHeapReport{};
    // The geometry is the host's own; only what kernels change is read back,
    // and bounded, so that a kernel that scribbled here cannot lead the
    // collector outside the heap.
    adsmGcKernelHeap h;
    memcpy(&h, meta, sizeof h);
    const uint64_t eden_start = base + l.eden_off, eden_end = eden_start + l.eden_bytes;
    uint64_t eden_top = clamp(h.eden_top, eden_start, eden_end);
    uint64_t used_records = std::min<uint64_t>(h.next_record, l.records);
    rep->failed = h.failed;
    rep->failed_bytes = h.failed_bytes;
    rep->too_large = h.too_large;
    rep->late = h.late;
    rep->eden_objects = h.eden_objects;

    // The buffers, each taken back at its last good top when it overflowed.
    std::vector<Tlab> tlabs;
    tlabs.reserve(used_records > l.tlabs ? used_records - l.tlabs : 0);
    for (uint64_t i = l.tlabs; i < used_records; ++i) {
        adsmGcKernelTlab t;
        memcpy(&t, meta + l.records_off + i * sizeof t, sizeof t);
        if (t.start == 0) continue;  // eden could not fill it
        if (t.start < eden_start || t.end != t.start + l.tlab_bytes || t.end > eden_top) continue;
        uint64_t used;
        if (t.top <= t.end) {
            used = t.top < t.start ? t.start : t.top;
        } else {
            ++rep->overflows;
            // A kernel stopped between its overflow and saving the top: the
            // whole buffer may be in use.
            used = t.last_good >= t.start && t.last_good <= t.end ? t.last_good : t.end;
        }
        ++rep->tlabs;
        rep->unused_bytes += t.end - used;
        tlabs.push_back(Tlab{t.start, t.end, used});
    }
    std::sort(tlabs.begin(), tlabs.end(), [](const Tlab &a, const Tlab &b) { return a.start < b.start; });
    rep->unused_bytes += eden_end - eden_top;

    // The objects, from the bitmap: an even bit opens one, the next odd bit closes it.
    const uint64_t words = l.bitmap_bytes / sizeof(uint64_t);
    const uint8_t *bitmap = meta + l.bitmap_off;
    size_t cursor = 0;  // the first buffer that may hold the next object
    bool open = false;
    uint64_t first = 0;
    for (uint64_t w = 0; w < words; ++w) {
        uint64_t bits;
        memcpy(&bits, bitmap + w * sizeof bits, sizeof bits);
        for (; bits; bits &= bits - 1) {
            unsigned b = static_cast<unsigned>(__builtin_ctzll(bits));
            uint64_t g = w * 32 + b / 2;
            if (!(b & 1)) {
                if (open) ++rep->dropped;  // the one before never got its last granule
                open = true;
                first = g;
                continue;
            }
            if (!open) {
                ++rep->dropped;
                continue;
            }
            open = false;
            uint64_t at = eden_start + first * kGranuleBytes, n = (g - first + 1) * kGranuleBytes;
            while (cursor < tlabs.size() && tlabs[cursor].end <= at) ++cursor;
            bool in_tlab = cursor < tlabs.size() && tlabs[cursor].start <= at;
            // Never handed out: above its buffer's last good top, or above eden's top.
            uint64_t limit = in_tlab ? tlabs[cursor].used : eden_top;
            if (at + n > limit || (in_tlab && at + n > tlabs[cursor].end)) {
                ++rep->dropped;
                continue;
            }
            ++rep->objects;
            rep->bytes += n;
            emit(arg, at - eden_start, n);
        }
    }
    if (open) ++rep->dropped;
}

}  // namespace adsm::gc
