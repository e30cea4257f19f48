#include "support/profile.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "os/call_stack.h"
#include "support/inside.h"
#include "support/log.h"

namespace adsm::profile {
namespace detail {
std::atomic<bool> g_on{false};
}
namespace {

constexpr int kFrames = 3;       // a site: the location and two callers
constexpr size_t kSites = 8192;  // open addressing, never resized
constexpr uint32_t kNoCause = 0;   // the runtime's own threads
constexpr uint32_t kOverflow = 1;  // sites that found the table full
constexpr int kProbes = 64;

struct Site {
    std::atomic<uint64_t> key;
    std::atomic<uint32_t> ready;
    uint32_t nframes;
    uintptr_t ips[kFrames];
    std::atomic<uint64_t> v[static_cast<unsigned>(Charge::count_)];
};

Site *g_sites = nullptr;
unsigned g_top = 20;
std::atomic<bool> g_reported{false};

__attribute__((tls_model("initial-exec"))) thread_local uint32_t tls_site = kNoCause;
__attribute__((tls_model("initial-exec"))) thread_local bool tls_has_cause = false;

uint64_t hash_of(const uintptr_t *ips, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; ++i) {
        h ^= ips[i];
        h *= 1099511628211ull;
    }
    return h | 1;  // never 0, the empty key
}

uint32_t site_of(const uintptr_t *ips, int n) {
    if (n == 0) return kNoCause;
    uint64_t key = hash_of(ips, n);
    for (int p = 0; p < kProbes; ++p) {
        uint32_t i = static_cast<uint32_t>((key + static_cast<uint64_t>(p)) % (kSites - 2)) + 2;
        Site &s = g_sites[i];
        uint64_t k = s.key.load(std::memory_order_acquire);
        if (k == 0) {
            if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
                for (int f = 0; f < n; ++f) s.ips[f] = ips[f];
                s.nframes = static_cast<uint32_t>(n);
                s.ready.store(1, std::memory_order_release);
                return i;
            }
        }
        if (k == key) return i;
    }
    return kOverflow;
}

void report_at_exit() { report(); }

std::string human(uint64_t v) {
    char buf[32];
    if (v >= (10ull << 30)) snprintf(buf, sizeof buf, "%.1fG", static_cast<double>(v) / (1ull << 30));
    else if (v >= (10ull << 20)) snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(v) / (1ull << 20));
    else if (v >= (10ull << 10)) snprintf(buf, sizeof buf, "%.1fK", static_cast<double>(v) / (1ull << 10));
    else snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

void start(unsigned top) {
    void *m = mmap(nullptr, kSites * sizeof(Site), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                   0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "adsm: ADSM_PROFILE: cannot map the site table; profiling is off\n");
        return;
    }
    g_sites = static_cast<Site *>(m);
    g_top = top;
    if (!os::load_unwinder())
        fprintf(stderr, "adsm: ADSM_PROFILE: libunwind cannot be loaded; the work is not charged to the program's code\n");
    os::find_runtime_code();
    atexit(report_at_exit);
    detail::g_on.store(true, std::memory_order_release);
}

void charge(Charge what, uint64_t v) {
    if (!on()) return;
    g_sites[tls_site].v[static_cast<unsigned>(what)].fetch_add(v, std::memory_order_relaxed);
}

Cause::Cause(void *ucontext) {
    if (!on() || tls_has_cause) return;
    uintptr_t ips[kFrames];
    int n = os::program_stack(ucontext, ips, kFrames);
    tls_site = site_of(ips, n);
    tls_has_cause = set_ = true;
    charge(Charge::entries, 1);
}

Cause::~Cause() {
    if (!set_) return;
    tls_site = kNoCause;
    tls_has_cause = false;
}

void disable_in_child() {
    detail::g_on.store(false, std::memory_order_relaxed);
    g_reported.store(true);
}

void report() {
    if (!g_sites || g_reported.exchange(true)) return;
    detail::g_on.store(false, std::memory_order_relaxed);
    Inside in;
    struct Row {
        uint32_t site;
        uint64_t v[static_cast<unsigned>(Charge::count_)];
        uint64_t operator[](Charge c) const { return v[static_cast<unsigned>(c)]; }
        uint64_t bytes() const { return (*this)[Charge::h2d_bytes] + (*this)[Charge::d2h_bytes] + (*this)[Charge::io_bytes]; }
        uint64_t faults() const { return (*this)[Charge::read_faults] + (*this)[Charge::write_faults]; }
    };
    std::vector<Row> rows;
    for (uint32_t i = 0; i < kSites; ++i) {
        Site &s = g_sites[i];
        if (i >= 2 && !s.ready.load(std::memory_order_acquire)) continue;
        Row r{i, {}};
        for (unsigned k = 0; k < static_cast<unsigned>(Charge::count_); ++k) r.v[k] = s.v[k].load();
        if (r.bytes() + r.faults() == 0) continue;
        rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
        return a.bytes() != b.bytes() ? a.bytes() > b.bytes() : a.faults() > b.faults();
    });
    size_t total = rows.size();
    if (rows.size() > g_top) rows.resize(g_top);
    // Name every frame of the rows shown in one pass (one addr2line per module).
    std::vector<uintptr_t> ips;
    for (const Row &r : rows)
        for (uint32_t f = 0; r.site >= 2 && f < g_sites[r.site].nframes; ++f) ips.push_back(g_sites[r.site].ips[f]);
    std::vector<std::string> names = os::describe_code(ips);
    fflush(stdout);
    FILE *out = report_stream();
    fprintf(out, "adsm profile: the program's code that made the runtime move data (top %zu of %zu locations)\n",
            rows.size(), total);
    fprintf(out, "  %10s %10s %9s %9s %10s %8s  %s\n", "host->dev", "dev->host", "rd faults", "wr faults", "I/O bytes",
            "entries", "location <- callers");
    size_t at = 0;
    for (const Row &r : rows) {
        std::string where;
        if (r.site == kNoCause) where = "(the runtime's own threads: background copies and evictions)";
        else if (r.site == kOverflow) where = "(other locations: the site table was full)";
        else
            for (uint32_t f = 0; f < g_sites[r.site].nframes; ++f, ++at) {
                // The C library's start-up frames say nothing about the program.
                if (f > 0 && (names[at].rfind("__libc_start", 0) == 0 || names[at].rfind("_start", 0) == 0)) continue;
                where += (f ? " <- " : "") + names[at];
            }
        fprintf(out, "  %10s %10s %9llu %9llu %10s %8llu  %s\n", human(r[Charge::h2d_bytes]).c_str(),
                human(r[Charge::d2h_bytes]).c_str(), static_cast<unsigned long long>(r[Charge::read_faults]),
                static_cast<unsigned long long>(r[Charge::write_faults]), human(r[Charge::io_bytes]).c_str(),
                static_cast<unsigned long long>(r[Charge::entries]), where.c_str());
    }
}

}  // namespace adsm::profile
