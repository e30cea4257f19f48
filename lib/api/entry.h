// What every C entry point does first and last: start the runtime (or say
// why it cannot), mark the thread as inside it, and record an error for
// adsmGetLastError with its message.
#pragma once

#include <cstdio>

#include "adsm.h"
#include "api/runtime.h"
#include "support/inside.h"
#include "support/log.h"
#include "support/status.h"

namespace adsm {

extern __attribute__((tls_model("initial-exec"))) thread_local adsmError_t tls_last_error;
// The message of the thread's most recent API error.  Kept apart from the
// scratch detail that internal steps write, and not reset by
// adsmGetLastError, so the two can be read in either order.
extern __attribute__((tls_model("initial-exec"))) thread_local char tls_error_detail[512];

inline adsmError_t record(adsmError_t e) {
    if (e != adsmSuccess) {
        tls_last_error = e;
        snprintf(tls_error_detail, sizeof tls_error_detail, "%s", last_detail());
        ADSM_LOG(debug, "%s: %s", adsmGetErrorString(e), tls_error_detail);
    }
    return e;
}

inline void *record_ptr(adsmError_t e, void *p) {
    record(e);
    return e == adsmSuccess ? p : nullptr;
}

// Every entry point marks the thread as inside the runtime, so that the
// runtime's own allocations never come back to it through interposed malloc,
// and tells the protocol that a program using the API may launch kernels.
#define ADSM_RUNTIME(rt)                                                             \
    adsm::Inside scope_;                                                             \
    Runtime *rt = nullptr;                                                           \
    if (Status _s = runtime(&rt); _s != adsmSuccess) return record(_s);              \
    expect_kernels(*rt)

#define ADSM_RUNTIME_PTR(rt)                                                         \
    adsm::Inside scope_;                                                             \
    Runtime *rt = nullptr;                                                           \
    if (Status _s = runtime(&rt); _s != adsmSuccess) return record_ptr(_s, nullptr); \
    expect_kernels(*rt)


}  // namespace adsm
