// printf-style formatting into a buffer without the C library's stdio:
// async-signal-safe, for messages built in the fault handler (an error's
// detail, recorded with fail()).  It knows the conversions the runtime's
// messages use (d i u x X p s c %, with flags - and 0, a width, a precision
// for s, and the length modifiers hh h l ll z j t) and refuses the rest.
#pragma once

#include <cstdarg>
#include <cstddef>

namespace adsm::os {

// Writes at most cap-1 bytes and a terminating NUL, truncating silently.
// False, with buf unspecified, if fmt holds a conversion it does not know.
bool safe_vformat(char *buf, size_t cap, const char *fmt, va_list ap);
// The same with arguments; returns the length written (0 if refused).
size_t safe_format(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

}  // namespace adsm::os
