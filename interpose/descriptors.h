// close_range kept off the runtime's descriptors (descriptors.cpp), for the
// same call made by number (raw_syscalls.cpp).
#pragma once

namespace adsm::interpose {

// close_range(first, last, flags) for every descriptor in the range but
// the runtime's: the result, or -1 with errno set.
int close_range_around_held(unsigned first, unsigned last, int flags);

}  // namespace adsm::interpose
