// The runtime's statistics, for the tests that count what it did.
#pragma once

#include <cstdint>

#include "support/stats.h"

namespace adsm_test {

inline uint64_t counter(adsm::Counter c) { return adsm::stats().get(c); }

}  // namespace adsm_test
