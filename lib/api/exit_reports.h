// What a process leaves at exit where it asked for it (ADSM_STATS,
// ADSM_TRACE): the runtime's statistics, or, where the runtime never
// started, a file and a line that say so rather than nothing.
#pragma once

namespace adsm {

// The statistics of the started runtime, as ADSM_STATS asks; registered
// with atexit when the runtime starts.
void print_stats();

}  // namespace adsm
