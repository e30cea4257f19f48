#include "backend/sim/pin_model.h"

#include <sys/mman.h>

#include <algorithm>

#include "os/clock.h"
#include "os/vm.h"
#include "support/stats.h"

namespace adsm {
namespace {

// A piece's word: committed bytes, pinned bytes (each up to kPiece, 22
// bits), and whether the CPU has used it.
constexpr uint64_t kField = (1ull << 24) - 1;
constexpr int kPinnedShift = 24;
constexpr uint64_t kSeen = 1ull << 48;
uint64_t committed_of(uint64_t w) { return w & kField; }
uint64_t pinned_of(uint64_t w) { return (w >> kPinnedShift) & kField; }
uint64_t word(uint64_t committed, uint64_t pinned, bool seen) {
    return committed | pinned << kPinnedShift | (seen ? kSeen : 0);
}

}  // namespace

PinModel::~PinModel() {
    if (pieces_) os::unmap(pieces_, count_ * sizeof *pieces_);
}

void PinModel::init(double us_per_mib, uintptr_t base, uint64_t size, const uint8_t *host_alias) {
    if (us_per_mib <= 0) return;
    count_ = (size + kPiece - 1) / kPiece;
    void *p = os::map_anon(count_ * sizeof *pieces_, PROT_READ | PROT_WRITE, /*noreserve=*/true);
    if (p == MAP_FAILED) return;  // (then nothing is charged: the model is off)
    pieces_ = static_cast<std::atomic<uint64_t> *>(p);
    ns_per_byte_ = us_per_mib * 1000.0 / (1 << 20);
    base_ = base;
    size_ = size;
    alias_ = host_alias;
}

void PinModel::committed(uintptr_t addr, uint64_t bytes) {
    if (!enabled() || addr < base_ || bytes == 0) return;
    for (uintptr_t at = addr; at < addr + bytes;) {
        uint64_t i = (at - base_) / kPiece, piece_end = base_ + (i + 1) * kPiece;
        uint64_t n = std::min<uint64_t>(piece_end, addr + bytes) - at;
        pieces_[i].fetch_add(n, std::memory_order_relaxed);  // (committed bytes never pass kPiece)
        at += n;
    }
}

void PinModel::decommitted(uintptr_t addr, uint64_t bytes) {
    if (!enabled() || addr < base_ || bytes == 0) return;
    for (uintptr_t at = addr; at < addr + bytes;) {
        uint64_t i = (at - base_) / kPiece, piece_end = base_ + (i + 1) * kPiece;
        uint64_t n = std::min<uint64_t>(piece_end, addr + bytes) - at;
        uint64_t w = pieces_[i].load(std::memory_order_relaxed);
        for (;;) {
            uint64_t c = committed_of(w) - std::min(n, committed_of(w));
            // A piece with no allocation left is gone, its pages unpinned.
            uint64_t next = c ? word(c, pinned_of(w), w & kSeen) : 0;
            if (pieces_[i].compare_exchange_weak(w, next, std::memory_order_relaxed)) break;
        }
        at += n;
    }
}

bool PinModel::charge(uint64_t first, uint64_t last, bool cpu) {
    uint64_t bytes = 0;
    bool fresh = false;
    for (uint64_t i = first; i <= last && i < count_; ++i) {
        uint64_t w = pieces_[i].load(std::memory_order_relaxed);
        for (;;) {
            uint64_t c = committed_of(w), p = pinned_of(w);
            bool seen = (w & kSeen) != 0;
            if (c <= p && (seen || !cpu)) break;
            if (pieces_[i].compare_exchange_weak(w, word(c, std::max(c, p), seen || cpu), std::memory_order_relaxed)) {
                bytes += c > p ? c - p : 0;
                fresh |= cpu && !seen;
                break;
            }
        }
    }
    if (bytes) {
        const uint64_t t0 = os::now_ns(), ns = static_cast<uint64_t>(static_cast<double>(bytes) * ns_per_byte_);
        os::sleep_until_ns(t0 + ns);
        stats().add(Counter::pin_ns, ns);
        stats().add(Counter::pinned_bytes, bytes);
    }
    return fresh;
}

void PinModel::use_for_copy(const void *p, size_t n) {
    if (!enabled() || n == 0) return;
    auto a = reinterpret_cast<uintptr_t>(p), alias = reinterpret_cast<uintptr_t>(alias_);
    uintptr_t at;
    if (a >= alias && a - alias < size_) at = base_ + (a - alias);
    else if (a >= base_ && a - base_ < size_) at = a;
    else return;  // the caller's own memory: a pageable copy on the GPU
    uint64_t last_byte = std::min<uint64_t>(at - base_ + n, size_) - 1;
    (void)charge((at - base_) / kPiece, last_byte / kPiece, false);
}

Device::MirrorUse PinModel::use_for_cpu(uintptr_t lo, uintptr_t hi, uintptr_t *start, uint64_t *len) {
    if (!enabled() || *start < base_ || *start + *len > base_ + size_ || *len == 0) return Device::MirrorUse::not_pinned;
    const uint64_t first = (*start - base_) / kPiece, last = (*start + *len - 1 - base_) / kPiece;
    const uintptr_t from = std::max<uintptr_t>(lo, base_ + first * kPiece);
    const uintptr_t to = std::min<uintptr_t>(hi, base_ + (last + 1) * kPiece);
    *start = from;
    *len = to - from;
    return charge(first, last, true) ? Device::MirrorUse::first : Device::MirrorUse::again;
}

}  // namespace adsm
