// The collector's knobs and questions beyond adsm's own API, which runtimes
// written for other collectors expect: when finalizers run, collections
// held off or asked for when due, a hook at each step of a collection, the
// heap's limit, usage counters, what an address is, and moving weak links.
#include "gc/collector.h"

#include <iterator>

namespace adsm::gc {

void Collector::set_finalize_on_demand(bool on, void (*notify)()) {
    notify_.store(notify);
    std::lock_guard<std::mutex> lock(heap_.lock());
    on_demand_.store(on);
    // What waited for the program to ask runs at the next chance now.
    if (!on && !due_calls_.empty()) calls_due_.store(true, std::memory_order_release);
}

size_t Collector::invoke_finalizers() { return run_due(true); }

bool Collector::finalizers_due() {
    std::lock_guard<std::mutex> lock(heap_.lock());
    return !due_calls_.empty();
}

bool Collector::collect_if_due() {
    bool collected = false;
    {
        std::lock_guard<std::mutex> lock(heap_.lock());
        if (due()) {
            uint64_t before = stats_.collections.load();
            collect_locked();
            collected = stats_.collections.load() != before;
        }
    }
    run_finalizers();
    return collected;
}

void Collector::set_event_hook(void (*hook)(Event, void *), void *arg) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    event_hook_ = hook;
    event_arg_ = arg;
}

void Collector::set_max_heap(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    heap_.set_max_heap(bytes);
}

bool Collector::expand(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    uint64_t limit = heap_.max_heap();
    if (limit && (bytes > limit || heap_.heap_bytes() > limit - bytes)) return false;
    // A larger heap means fewer collections: the next one waits for at
    // least this much allocation.
    if (bytes > config_.trigger) config_.trigger = bytes;
    return true;
}

void Collector::usage(Usage *out) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    out->heap_bytes = heap_.heap_bytes();
    out->live_bytes = live_bytes_;
    // Counted as pages go to threads' caches and large objects are made, as
    // the allocation fast path counts nothing.
    out->allocated_since_collection = heap_.handed_out;
    out->allocated_bytes = handed_out_before_ + heap_.handed_out;
    out->collections = stats_.collections.load();
    out->abandoned = stats_.abandoned.load();
    out->concurrent = stats_.concurrent.load();
    out->assists = stats_.assists.load();
    out->assisted_bytes = stats_.assisted_bytes.load();
}

bool Collector::in_heap(const void *p) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const Chunk *c = heap_.chunk_of(a);
    return c && a - c->base < c->bytes;
}

bool Collector::in_roots(const void *p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(heap_.lock());
    auto it = registry_.roots.upper_bound(a);
    return it != registry_.roots.begin() && a < std::prev(it)->second;
}

size_t Collector::remove_roots_within(const void *lo, const void *hi) {
    uintptr_t a = reinterpret_cast<uintptr_t>(lo), b = reinterpret_cast<uintptr_t>(hi);
    std::lock_guard<std::mutex> lock(heap_.lock());
    size_t n = 0;
    for (auto it = registry_.roots.lower_bound(a); it != registry_.roots.end() && it->first < b;)
        if (it->second <= b) it = registry_.roots.erase(it), ++n;
        else ++it;
    return n;
}

bool Collector::describe(const void *p, ObjectInfo *out) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    Chunk *c;
    Page *page;
    uintptr_t start;
    size_t size;
    unsigned idx;
    if (!object_at(reinterpret_cast<uintptr_t>(p), &c, &page, &start, &size, &idx)) return false;
    out->base = reinterpret_cast<void *>(start);
    out->size = size;
    out->pointers = page->pointers;
    out->layout = page->layout;
    out->pinned = registry_.pins.count(start) != 0;
    return true;
}

void *Collector::with_lock(void *(*fn)(void *), void *arg) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    return fn(arg);
}

Collector::LinkMove Collector::move_weak(void **from, void **to) {
    std::lock_guard<std::mutex> lock(heap_.lock());
    auto it = registry_.weak.find(reinterpret_cast<uintptr_t>(from));
    if (it == registry_.weak.end()) return LinkMove::not_found;
    if (from == to) return LinkMove::moved;
    if (registry_.weak.count(reinterpret_cast<uintptr_t>(to))) return LinkMove::taken;
    uintptr_t obj = it->second;
    registry_.weak.erase(it);
    registry_.weak[reinterpret_cast<uintptr_t>(to)] = obj;
    return LinkMove::moved;
}

}  // namespace adsm::gc
