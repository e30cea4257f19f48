#include "support/status.h"

#include <cstdarg>
#include <cstdio>

#include "os/safe_format.h"

namespace adsm {
namespace {
// initial-exec: no allocation on first use in a thread, which matters once
// this code runs inside interposed malloc.
__attribute__((tls_model("initial-exec"))) thread_local char tls_detail[512];
}  // namespace

// The fault handler records details too (a fetch that failed), so the
// formatting is async-signal-safe; a conversion it does not know (none of
// the runtime's messages has one) falls back to the C library's.
Status fail(Status code, const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    if (!os::safe_vformat(tls_detail, sizeof tls_detail, fmt, ap)) vsnprintf(tls_detail, sizeof tls_detail, fmt, again);
    va_end(again);
    va_end(ap);
    return code;
}

const char *last_detail() { return tls_detail; }

void clear_detail() { tls_detail[0] = '\0'; }

namespace {
void copy_text(char *out, unsigned n, const char *text) {
    unsigned i = 0;
    for (; n && i + 1 < n && text[i]; ++i) out[i] = text[i];
    if (n) out[i] = '\0';
}
}  // namespace

void set_detail(const char *text) { copy_text(tls_detail, sizeof tls_detail, text); }

void copy_detail(char *out, unsigned n) { copy_text(out, n, tls_detail); }

}  // namespace adsm
