// Diagnostics to stderr.  log() formats into a stack buffer and issues one
// write(2), so lines from several threads never interleave.  SafeLine is the
// allocation-free, async-signal-safe variant for signal handlers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace adsm {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
bool log_enabled(LogLevel level);

void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Builds a line without malloc or stdio; usable in signal handlers.
class SafeLine {
public:
    SafeLine &str(const char *s);
    SafeLine &dec(uint64_t v);
    SafeLine &hex(uint64_t v);
    void write_stderr();  // appends '\n'

private:
    char buf_[1024];
    size_t len_ = 0;
};

}  // namespace adsm

#define ADSM_LOG(level, ...)                                                  \
    do {                                                                      \
        if (::adsm::log_enabled(::adsm::LogLevel::level))                     \
            ::adsm::log(::adsm::LogLevel::level, __VA_ARGS__);                \
    } while (0)
