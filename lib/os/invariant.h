// Invariants the code relies on ("the caller holds r.lock", a block's state
// agreeing with its flags), checked in debug builds and in builds configured
// with ADSM_INVARIANTS, so that the model-based tests and the soak stop where
// an invariant breaks rather than later, at wrong data.  The report is
// async-signal-safe: invariants are checked in the fault handler too.
#pragma once

namespace adsm {
[[noreturn]] void invariant_failed(const char *condition, const char *why, const char *file, int line);
}

#if !defined(NDEBUG) || defined(ADSM_INVARIANTS)
#define ADSM_CHECK_INVARIANTS 1
#define ADSM_INVARIANT(cond, why) \
    ((cond) ? static_cast<void>(0) : ::adsm::invariant_failed(#cond, why, __FILE__, __LINE__))
#else
#define ADSM_CHECK_INVARIANTS 0
#define ADSM_INVARIANT(cond, why) static_cast<void>(0)
#endif
