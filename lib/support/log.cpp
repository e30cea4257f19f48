#include "support/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "os/kept_stderr.h"
#include "os/safe_line.h"
#include "support/inside.h"

namespace adsm {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::warn)};

const char *level_name(LogLevel l) {
    switch (l) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warning";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
    }
    return "";
}

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, const char *fmt, ...) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "adsm %s: ", level_name(level));
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
    if (len > sizeof buf - 2) len = sizeof buf - 2;
    buf[len++] = '\n';
    os::write_stderr(buf, len);
}

FILE *report_stream() {
    const int kept = os::kept_stderr();
    if (kept < 0) return stderr;
    // Line-buffered in a buffer of its own: no allocation after this one
    // (a report's own writes stay out of shared memory).
    static char buffer[4096];
    static FILE *const stream = [kept] {
        Inside in;
        FILE *f = fdopen(kept, "w");
        if (f) setvbuf(f, buffer, _IOLBF, sizeof buffer);
        return f;
    }();
    return stream ? stream : stderr;
}

}  // namespace adsm
