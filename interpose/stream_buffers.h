// A stdio stream's private buffer in place of the program's
// (stream_buffers.cpp), for the interposers of calls that end its use.
#pragma once

#include <stdio.h>

namespace adsm::interpose {

// The stream no longer uses the private buffer it had, if any.
void forget_stream_buffer(FILE *stream);

}  // namespace adsm::interpose
