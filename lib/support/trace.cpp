#include "support/trace.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "os/clock.h"
#include "os/error_text.h"
#include "os/raw_syscall.h"
#include "support/config.h"
#include "support/inside.h"
#include "support/log.h"

namespace adsm::trace {
namespace detail {
std::atomic<bool> g_enabled{false};
}
namespace {

struct Event {
    std::atomic<uint32_t> ready;  // set last: the writer may still be filling it
    uint32_t tid;
    uint32_t track;
    Kind kind;
    uint64_t start_ns, end_ns, a, b;
    char name[48];
};

Event *g_events = nullptr;
size_t g_capacity = 0;  // events; the buffer's pages are touched only when used
std::atomic<uint64_t> g_next{0};
uint64_t g_origin_ns = 0;
char g_path[1024];
char g_device[64];
std::atomic<bool> g_written{false};
void (*g_before_writing)() = nullptr;

__attribute__((tls_model("initial-exec"))) thread_local uint32_t tls_tid = 0;

uint32_t this_thread() {
    if (tls_tid == 0) tls_tid = static_cast<uint32_t>(os::raw_syscall(SYS_gettid));
    return tls_tid;
}

struct KindInfo {
    const char *name, *category, *arg_a, *arg_b;
    bool hex_a, hex_b;  // the argument is an address
};

const KindInfo &info(Kind k) {
    static const KindInfo table[] = {
        {"kernel", "kernel", "stream", "failed", false, false},
        {"host->device", "transfer", "bytes", "device_address", false, true},
        {"device->host", "transfer", "bytes", "device_address", false, true},
        {"read fault", "fault", "address", nullptr, true, false},
        {"write fault", "fault", "address", nullptr, true, false},
        {"call", "call", nullptr, nullptr, false, false},
        {"sync", "sync", nullptr, nullptr, false, false},
        {"alloc", "memory", "bytes", "address", false, true},
        {"free", "memory", nullptr, "address", false, true},
        {"read", "io", "bytes", "moved", false, false},
        {"write", "io", "bytes", "moved", false, false},
    };
    static_assert(sizeof table / sizeof table[0] == static_cast<size_t>(Kind::count_));
    return table[static_cast<size_t>(k)];
}

void put_escaped(FILE *f, const char *s) {
    for (; *s; ++s) {
        unsigned char ch = static_cast<unsigned char>(*s);
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
}

std::string thread_name(uint32_t tid) {
    char path[64], name[64] = {};
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    if (FILE *f = fopen(path, "r")) {
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
    std::string s = name[0] ? name : "thread";
    return s + " (" + std::to_string(tid) + ")";
}

std::string track_name(uint32_t track) {
    if (track == kCopyH2DTrack) return "copies host->device";
    if (track == kCopyD2HTrack) return "copies device->host";
    return "stream " + std::to_string(track - stream_track(0));
}

void metadata(FILE *f, bool &first, int pid, uint32_t tid, const char *what, const std::string &name) {
    fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"%s\",\"args\":{\"name\":\"", first ? "" : ",", pid, tid,
            what);
    first = false;
    put_escaped(f, name.c_str());
    fputs("\"}}", f);
}

void write_at_exit() { write_file(); }

}  // namespace

Status start(const char *path, const char *device, size_t capacity) {
    std::string p = file_for_process(path);
    if (p.empty() || p.size() >= sizeof g_path) return fail(adsmErrorInvalidValue, "ADSM_TRACE: bad file name '%s'", path);
    // Fail now, not at exit, if the file cannot be written.
    FILE *probe = fopen(p.c_str(), "w");
    if (!probe) return fail(adsmErrorInvalidValue, "ADSM_TRACE=%s: cannot write it: %s", path, os::error_text(errno));
    fclose(probe);
    void *m = mmap(nullptr, capacity * sizeof(Event), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return fail(adsmErrorMemoryAllocation, "ADSM_TRACE: cannot map the event buffer");
    g_events = static_cast<Event *>(m);
    g_capacity = capacity;
    snprintf(g_path, sizeof g_path, "%s", p.c_str());
    snprintf(g_device, sizeof g_device, "%s", device);
    g_origin_ns = os::now_ns();
    atexit(write_at_exit);
    detail::g_enabled.store(true, std::memory_order_release);
    return adsmSuccess;
}

void record(Kind kind, uint64_t start_ns, uint64_t end_ns, uint64_t a, uint64_t b, const char *name, uint32_t track) {
    if (!enabled()) return;
    uint64_t i = g_next.fetch_add(1, std::memory_order_relaxed);
    if (i >= g_capacity) return;  // counted by g_next, reported in the file
    Event &e = g_events[i];
    e.tid = this_thread();
    e.track = track;
    e.kind = kind;
    e.start_ns = start_ns;
    e.end_ns = end_ns < start_ns ? start_ns : end_ns;
    e.a = a;
    e.b = b;
    size_t n = 0;
    if (name)
        for (; name[n] && n + 1 < sizeof e.name; ++n) e.name[n] = name[n];
    e.name[n] = '\0';
    e.ready.store(1, std::memory_order_release);
}

void copy(bool to_device, uint64_t n, uint64_t dev, uint64_t start_ns, bool background) {
    uint32_t track = !background ? kThreadTrack : to_device ? kCopyH2DTrack : kCopyD2HTrack;
    record(to_device ? Kind::copy_h2d : Kind::copy_d2h, start_ns, os::now_ns(), n, dev, nullptr, track);
}

void write_unused(const char *pattern) {
    std::string p = file_for_process(pattern);
    struct stat st;
    if (p.empty() || (stat(p.c_str(), &st) == 0 && st.st_size > 0)) return;
    FILE *f = fopen(p.c_str(), "w");
    if (!f) {
        fprintf(report_stream(), "adsm: cannot write the trace %s: %s\n", p.c_str(), os::error_text(errno));
        return;
    }
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    metadata(f, first, getpid(), 0, "process_name",
             std::string("host (") + std::to_string(getpid()) + "): no shared memory used, the runtime did not start");
    fputs("\n]}\n", f);
    fclose(f);
}

void disable_in_child() {
    detail::g_enabled.store(false, std::memory_order_relaxed);
    g_written.store(true);  // the parent writes the file
}

void before_writing(void (*hook)()) { g_before_writing = hook; }

void write_file() {
    if (!g_events || g_written.load()) return;
    if (g_before_writing) g_before_writing();
    if (g_written.exchange(true)) return;
    detail::g_enabled.store(false, std::memory_order_relaxed);
    Inside in;  // the writer's own mallocs and I/O stay private
    FILE *f = fopen(g_path, "w");
    if (!f) {
        fprintf(report_stream(), "adsm: cannot write the trace %s: %s\n", g_path, os::error_text(errno));
        return;
    }
    const int pid = getpid();
    const int device_pid = pid + 0x40000000;  // beyond any real pid: the device's own group in the viewer
    uint64_t total = g_next.load();
    uint64_t n = total < g_capacity ? total : g_capacity;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    bool first = true;
    std::set<uint32_t> threads, tracks;
    for (uint64_t i = 0; i < n; ++i) {
        const Event &e = g_events[i];
        if (!e.ready.load(std::memory_order_acquire)) continue;
        const KindInfo &k = info(e.kind);
        bool device = e.track != kThreadTrack;
        (device ? tracks : threads).insert(device ? e.track : e.tid);
        fprintf(f, "%s\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"cat\":\"%s\",\"name\":\"",
                first ? "" : ",", device ? device_pid : pid, device ? e.track : e.tid,
                static_cast<double>(e.start_ns > g_origin_ns ? e.start_ns - g_origin_ns : 0) / 1000.0,
                static_cast<double>(e.end_ns - e.start_ns) / 1000.0,
                k.category);
        first = false;
        if (e.kind == Kind::kernel || !e.name[0]) put_escaped(f, e.name[0] ? e.name : k.name);
        else {
            fprintf(f, "%s ", k.name);
            put_escaped(f, e.name);
        }
        fputs("\",\"args\":{", f);
        bool comma = false;
        if (k.arg_a) {
            fprintf(f, k.hex_a ? "\"%s\":\"0x%llx\"" : "\"%s\":%llu", k.arg_a, static_cast<unsigned long long>(e.a));
            comma = true;
        }
        if (k.arg_b)
            fprintf(f, k.hex_b ? "%s\"%s\":\"0x%llx\"" : "%s\"%s\":%llu", comma ? "," : "", k.arg_b,
                    static_cast<unsigned long long>(e.b));
        fputs("}}", f);
    }
    metadata(f, first, pid, 0, "process_name", std::string("host (") + std::to_string(pid) + ")");
    metadata(f, first, device_pid, 0, "process_name", std::string("device ") + g_device);
    for (uint32_t t : threads) metadata(f, first, pid, t, "thread_name", thread_name(t));
    for (uint32_t t : tracks) metadata(f, first, device_pid, t, "thread_name", track_name(t));
    fprintf(f, "\n],\"otherData\":{\"events\":%llu,\"dropped\":%llu}}\n", static_cast<unsigned long long>(n),
            static_cast<unsigned long long>(total - n));
    fclose(f);
    if (total > n)
        fprintf(report_stream(), "adsm: the trace %s holds the first %llu events; %llu more were dropped\n", g_path,
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(total - n));
}

}  // namespace adsm::trace
