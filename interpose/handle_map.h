// Records kept per driver handle (a CUfunction's kernel, a Level Zero
// kernel's arguments), found without a lock on the launch path.  Slots are
// claimed once and never given back: a handle the driver reuses after a
// destroy finds its old record, which the creating call resets.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace adsm::interpose {

template <class Record, size_t kSlots>
class HandleMap {
    static_assert((kSlots & (kSlots - 1)) == 0, "a power of two");

public:
    // The record for a handle, created when absent; nullptr when the table
    // is full or out of memory (the caller then works without one).
    Record *obtain(const void *handle) {
        uintptr_t key = reinterpret_cast<uintptr_t>(handle);
        if (key == 0) return nullptr;
        if (Record *r = find(handle)) return r;
        Record *fresh = new (std::nothrow) Record();
        if (!fresh) return nullptr;
        for (size_t i = 0, h = hash(key); i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
            Slot &s = slots_[h];
            uintptr_t k = 0;
            if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
                s.record.store(fresh, std::memory_order_release);
                return fresh;
            }
            if (k != key) continue;  // another handle holds the slot
            delete fresh;             // another thread claimed this handle first
            Record *r;
            while (!(r = s.record.load(std::memory_order_acquire))) {
                // its record is one store away
            }
            return r;
        }
        delete fresh;
        return nullptr;
    }

    Record *find(const void *handle) const {
        uintptr_t key = reinterpret_cast<uintptr_t>(handle);
        if (key == 0) return nullptr;
        for (size_t i = 0, h = hash(key); i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
            const Slot &s = slots_[h];
            uintptr_t k = s.key.load(std::memory_order_acquire);
            if (k == 0) return nullptr;
            if (k == key) return s.record.load(std::memory_order_acquire);
        }
        return nullptr;
    }

private:
    struct Slot {
        std::atomic<uintptr_t> key{0};
        std::atomic<Record *> record{nullptr};
    };
    static size_t hash(uintptr_t k) { return static_cast<size_t>((k >> 4) * 0x9e3779b97f4a7c15ull >> 40) & (kSlots - 1); }
    Slot slots_[kSlots];
};

}  // namespace adsm::interpose
