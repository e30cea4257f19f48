#include "interpose/range_advice.h"

#include <iterator>
#include <map>
#include <mutex>

#include "os/vm.h"

namespace adsm::interpose::range_advice {
namespace {

struct PageAdvice {
    bool read_mostly = false;
    Location preferred, last_prefetch;
    uint32_t accessed_by = 0;
    bool operator==(const PageAdvice &o) const {
        return read_mostly == o.read_mostly && preferred == o.preferred && last_prefetch == o.last_prefetch &&
               accessed_by == o.accessed_by;
    }
};

// One allocation's advice: pieces keyed by their first byte's offset, each
// up to the next key (the last up to the allocation's end).
struct Record {
    uint64_t identity = 0;
    std::map<size_t, PageAdvice> pieces{{0, PageAdvice{}}};

    // A piece starts at `at` (unless it is the end).
    void split(size_t at, size_t end) {
        if (at >= end) return;
        auto it = pieces.upper_bound(at);
        PageAdvice a = std::prev(it)->second;
        pieces.emplace_hint(it, at, a);
    }
    // Neighbours with the same advice around [from, to] become one.
    void merge(size_t from, size_t to) {
        auto it = pieces.upper_bound(from);
        if (it != pieces.begin()) --it;
        if (it != pieces.begin()) --it;
        while (it != pieces.end() && it->first <= to) {
            auto next = std::next(it);
            if (next != pieces.end() && next->second == it->second) pieces.erase(next);
            else it = next;
        }
    }
};

std::mutex g_mu;
std::map<uintptr_t, Record> g_records;  // by allocation base

// The pages of [p, p+n) as offsets into the allocation, whole pages: the
// driver keeps advice by page.
void page_span(const Allocation &in, uintptr_t p, size_t n, size_t *from, size_t *to) {
    size_t end = os::page_up(in.size);
    size_t off = p - in.base;
    *from = os::page_down(off);
    *to = off + n > end ? end : os::page_up(off + n);
}

// in's record, a new one if there is none or it was another allocation's.
Record &record_of(const Allocation &in) {
    Record &r = g_records[in.base];
    if (r.identity != in.identity) r = Record{in.identity, {{0, PageAdvice{}}}};
    return r;
}

template <class Change>
void change(const Allocation &in, uintptr_t p, size_t n, Change &&apply) {
    size_t from, to, end = os::page_up(in.size);
    page_span(in, p, n, &from, &to);
    std::lock_guard<std::mutex> lock(g_mu);
    Record &r = record_of(in);
    r.split(from, end);
    r.split(to, end);
    for (auto it = r.pieces.find(from); it != r.pieces.end() && it->first < to; ++it) apply(it->second);
    r.merge(from, to);
}

}  // namespace

bool advise(const Allocation &in, uintptr_t p, size_t n, Advice a, Location at) {
    uint32_t bit = 0;
    if (a == Advice::accessed_by || a == Advice::not_accessed_by) {
        if (at.where == Where::device && (at.id < 0 || at.id >= kMaxDevices)) return false;
        bit = at.where == Where::device ? 2u << at.id : 1u;
    }
    switch (a) {
    case Advice::read_mostly: change(in, p, n, [](PageAdvice &pa) { pa.read_mostly = true; }); break;
    case Advice::not_read_mostly: change(in, p, n, [](PageAdvice &pa) { pa.read_mostly = false; }); break;
    case Advice::prefer: change(in, p, n, [&](PageAdvice &pa) { pa.preferred = at; }); break;
    case Advice::no_preference: change(in, p, n, [](PageAdvice &pa) { pa.preferred = Location{}; }); break;
    case Advice::accessed_by: change(in, p, n, [&](PageAdvice &pa) { pa.accessed_by |= bit; }); break;
    case Advice::not_accessed_by: change(in, p, n, [&](PageAdvice &pa) { pa.accessed_by &= ~bit; }); break;
    default: return false;
    }
    return true;
}

void prefetched(const Allocation &in, uintptr_t p, size_t n, Location to) {
    change(in, p, n, [&](PageAdvice &pa) { pa.last_prefetch = to; });
}

Summary summary(const Allocation &in, uintptr_t p, size_t n) {
    size_t from, to;
    page_span(in, p, n, &from, &to);
    std::lock_guard<std::mutex> lock(g_mu);
    auto found = g_records.find(in.base);
    if (found == g_records.end() || found->second.identity != in.identity) return Summary{};
    const auto &pieces = found->second.pieces;
    auto it = std::prev(pieces.upper_bound(from));
    Summary s;
    s.read_mostly = it->second.read_mostly;
    s.preferred = it->second.preferred;
    s.last_prefetch = it->second.last_prefetch;
    s.accessed_by = it->second.accessed_by;
    for (; it != pieces.end() && it->first < to; ++it) {
        s.read_mostly = s.read_mostly && it->second.read_mostly;
        if (!(s.preferred == it->second.preferred)) s.preferred = Location{};
        if (!(s.last_prefetch == it->second.last_prefetch)) s.last_prefetch = Location{};
        s.accessed_by &= it->second.accessed_by;
    }
    return s;
}

void forget(uintptr_t base) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_records.erase(base);
}

}  // namespace adsm::interpose::range_advice
