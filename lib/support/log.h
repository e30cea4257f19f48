// Diagnostics to stderr.  log() formats into a stack buffer and issues one
// write(2), so lines from several threads never interleave.  Signal handlers
// use os::SafeLine instead.
#pragma once

#include <cstdio>

namespace adsm {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
bool log_enabled(LogLevel level);

void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The stream for the runtime's reports at exit (statistics, the profile):
// stderr, or one on its kept copy once the program closed it
// (os/kept_stderr.h), where the C library's stderr writes nothing.
FILE *report_stream();

}  // namespace adsm

#define ADSM_LOG(level, ...)                                                  \
    do {                                                                      \
        if (::adsm::log_enabled(::adsm::LogLevel::level))                     \
            ::adsm::log(::adsm::LogLevel::level, __VA_ARGS__);                \
    } while (0)
