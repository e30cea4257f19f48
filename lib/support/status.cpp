#include "support/status.h"

#include <cstdarg>
#include <cstdio>

namespace adsm {
namespace {
// initial-exec: no allocation on first use in a thread, which matters once
// this code runs inside interposed malloc.
__attribute__((tls_model("initial-exec"))) thread_local char tls_detail[512];
}  // namespace

Status fail(Status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_detail, sizeof tls_detail, fmt, ap);
    va_end(ap);
    return code;
}

const char *last_detail() { return tls_detail; }

void clear_detail() { tls_detail[0] = '\0'; }

}  // namespace adsm
