// Internal error reporting: a failing function records a detailed message for
// the calling thread and returns the public error code.  The API layer turns
// the code into the thread's last error.
#pragma once

#include "adsm.h"

namespace adsm {

using Status = adsmError_t;

// Records a printf-style detail for the calling thread and returns `code`.
Status fail(Status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's most recent detail ("" if none).
const char *last_detail();
void clear_detail();
// Makes `text` the calling thread's detail (one recorded on another thread
// for this one); async-signal-safe.
void set_detail(const char *text);
// The calling thread's detail, in out[0..n) (truncated); async-signal-safe.
void copy_detail(char *out, unsigned n);

}  // namespace adsm
