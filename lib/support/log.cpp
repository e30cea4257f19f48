#include "support/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

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

void write_all(const char *p, size_t n) {
    int saved = errno;  // diagnostics must not disturb the application's errno
    while (n > 0) {
        ssize_t w = ::write(STDERR_FILENO, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            break;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    errno = saved;
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
    write_all(buf, len);
}

SafeLine &SafeLine::str(const char *s) {
    while (*s && len_ < sizeof buf_ - 1) buf_[len_++] = *s++;
    return *this;
}

SafeLine &SafeLine::dec(uint64_t v) {
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    while (i > 0 && len_ < sizeof buf_ - 1) buf_[len_++] = tmp[--i];
    return *this;
}

SafeLine &SafeLine::hex(uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int i = 0;
    do {
        tmp[i++] = digits[v & 15];
        v >>= 4;
    } while (v);
    str("0x");
    while (i > 0 && len_ < sizeof buf_ - 1) buf_[len_++] = tmp[--i];
    return *this;
}

void SafeLine::write_stderr() {
    buf_[len_++] = '\n';
    write_all(buf_, len_);
    len_ = 0;
}

}  // namespace adsm
